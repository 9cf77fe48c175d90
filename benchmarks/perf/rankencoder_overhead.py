"""RankEncoder re-training step vs SimCSE step, same model and batch, side by side in one run.

Feeds: records rankencoder-overhead-minilm; pages docs/methods/rankencoder.md, docs/results.md.

Both arms run sentlab's engine (the sentence-transformers trainer) on MiniLM with batch 64 and max
length 32 over the same Wikipedia sentences. The RankEncoder arm adds the rank loss of Eq. 4-6 with
the hinge of Eq. 5 and E1 = MiniLM over the 100k corpus (the first 100,000 lines). The arms
alternate (SimCSE, RankEncoder, SimCSE, RankEncoder, ...) so that drift in machine speed hits both;
the first --warmup steps of each run are left out. What E1 contributes is computed once before
training (corpus index, training-sentence vectors) and reported separately as one-off costs.
Prints JSON with the ratio (target <= 1.15; the paper's is about 3, App. A.7).

    python -m benchmarks.perf.rankencoder_overhead [--steps 8] [--rounds 2] [--corpus-size 100000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.perf.train_throughput import StepTimer
from sentlab.data.readers import read_sentences
from sentlab.encoders import load_encoder
from sentlab.errors import DataError
from sentlab.methods import validate_config
from sentlab.paths import data_dir
from sentlab.rank.index import CorpusIndex
from sentlab.training import engine
from sentlab.training.config import TrainConfig


def config(method: str, out: str, corpus: str, index: str, steps: int, batch: int) -> TrainConfig:
    tree = {
        "method": method,
        "model": {"name": "minilm", "max_seq_length": 32},
        "data": {"train": corpus, "limit": steps * batch},
        "train": {
            "output_dir": out,
            "batch_size": batch,
            "max_steps": steps,
            "save_steps": 10_000,
            "logging_steps": 10_000,
            "progress_bar": False,
        },
        "eval": {"dev_task": "none"},
    }
    if method == "rankencoder":
        tree["rank"] = {"base_encoder": "minilm", "index": index}
    return validate_config(tree)


def run_arm(method: str, corpus: str, index: str, steps: int, batch: int) -> tuple[list[float], float, list[float]]:
    """Step times, set-up time, and (RankEncoder) the time spent on E1's rank vectors in each step."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        trainer = engine.build_trainer(config(method, out, corpus, index, steps, batch), engine.RunPaths(Path(out)))
        setup = time.perf_counter() - start
        timer = StepTimer()
        trainer.add_callback(timer)
        rank_times: list[float] = []
        if method == "rankencoder":
            original = trainer.loss.base_rank_vectors

            def timed_rank_vectors(*args, **kwargs):
                begin = time.perf_counter()
                result = original(*args, **kwargs)
                rank_times.append(time.perf_counter() - begin)
                return result

            trainer.loss.base_rank_vectors = timed_rank_vectors
        with contextlib.redirect_stdout(sys.stderr):  # the trainer's log lines: stdout holds the JSON alone
            trainer.train()
        return timer.times, setup, rank_times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--corpus-size", type=int, default=100_000)
    parser.add_argument("--index-dir", default="runs/indexes")
    args = parser.parse_args()
    corpus = data_dir() / "wikipedia" / "wiki_sentences.txt"
    folder = Path(args.index_dir) / f"minilm-{corpus.stem}-{args.corpus_size}"
    index_seconds = None
    try:
        CorpusIndex.load(folder).check_encoder(load_encoder("minilm"))
    except DataError:
        start = time.perf_counter()
        CorpusIndex.build(
            load_encoder("minilm"), read_sentences(corpus, limit=args.corpus_size), "minilm", batch_size=256
        ).save(folder)
        index_seconds = time.perf_counter() - start
    times: dict[str, list[float]] = {"simcse": [], "rankencoder": []}
    setup: dict[str, list[float]] = {"simcse": [], "rankencoder": []}
    rank_part: list[float] = []
    for _ in range(args.rounds):
        for arm, method in (("simcse", "simcse-unsup"), ("rankencoder", "rankencoder")):
            step_times, setup_s, rank_times = run_arm(method, str(corpus), str(folder), args.steps, args.batch_size)
            times[arm] += step_times[args.warmup :]
            setup[arm].append(setup_s)
            rank_part += rank_times[args.warmup :]
    mean = {arm: statistics.mean(t) for arm, t in times.items()}
    median = {arm: statistics.median(t) for arm, t in times.items()}
    print(
        json.dumps(
            {
                "benchmark": "rankencoder_train_step_overhead",
                "model": "all-MiniLM-L6-v2 (E1 and E2)",
                "batch_size": args.batch_size,
                "max_seq_length": 32,
                "corpus_size": args.corpus_size,
                "steps_timed_per_arm": len(times["simcse"]),
                "device": "cuda" if torch.cuda.is_available() else "cpu",
                "threads": torch.get_num_threads(),
                "simcse_step_s": mean["simcse"],
                "rankencoder_step_s": mean["rankencoder"],
                "ratio_mean": mean["rankencoder"] / mean["simcse"],
                "ratio_median": median["rankencoder"] / median["simcse"],
                "simcse_step_s_all": [round(t, 3) for t in times["simcse"]],
                "rankencoder_step_s_all": [round(t, 3) for t in times["rankencoder"]],
                "e1_rank_vectors_s_per_step_mean": statistics.mean(rank_part),
                "one_off_s": {
                    "e1_corpus_index_build": index_seconds,
                    "setup_simcse_mean": statistics.mean(setup["simcse"]),
                    "setup_rankencoder_mean_incl_e1_train_vectors": statistics.mean(setup["rankencoder"]),
                },
                "target_ratio_max": 1.15,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
