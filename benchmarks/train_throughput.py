"""SimCSE training-step time and peak memory: sentlab's engine vs a minimal plain-PyTorch loop.

The timed window is one optimisation step (forward of both views, loss, backward, clipping,
optimizer step); tokenisation happens before it in both. Peak memory on CPU is the process's peak
RSS (it can only grow, so the second figure covers both loops); on GPU, peak allocated CUDA memory.

Both run the same computation on MiniLM (batch 64, max length 32, two dropout views in one forward,
InfoNCE with tau = 0.05, AdamW), side by side in one process. Prints JSON with the ratio
(sentlab / plain; target <= 1.10).

    python benchmarks/train_throughput.py [--steps 6] [--warmup 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import TrainerCallback

from sentlab.data.readers import read_sentences
from sentlab.encoders import load_encoder
from sentlab.paths import data_dir
from sentlab.training import engine
from sentlab.training.config import TrainConfig


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class StepTimer(TrainerCallback):
    def __init__(self):
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


def plain_loop(sentences: list[str], steps: int, batch: int, max_len: int) -> list[float]:
    model = load_encoder("minilm")
    model.train()
    transformer = model[0].auto_model
    tokenizer = model.tokenizer
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    times = []
    for step in range(steps):
        chunk = sentences[step * batch : (step + 1) * batch]
        # tokenised outside the timed window, as the trainer's collator does it before on_step_begin
        enc = tokenizer(chunk + chunk, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        start = time.perf_counter()
        hidden = transformer(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        emb = F.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
        z1, z2 = emb[:batch], emb[batch:]
        loss = F.cross_entropy(z1 @ z2.T / 0.05, torch.arange(batch))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the trainer clips too
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - start)
    return times


def sentlab_loop(corpus: str, steps: int, batch: int, max_len: int) -> list[float]:
    with tempfile.TemporaryDirectory() as out:
        cfg = TrainConfig.model_validate(
            {
                "method": "simcse-unsup",
                "model": {"name": "minilm", "max_seq_length": max_len},
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
        )
        trainer = engine.build_trainer(cfg, engine.RunPaths(Path(out)))
        timer = StepTimer()
        trainer.add_callback(timer)
        trainer.train()
        return timer.times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2, help="steps left out of the mean")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=32)
    args = parser.parse_args()
    corpus = str(data_dir() / "wikipedia" / "wiki_sentences.txt")
    sentences = read_sentences(corpus, limit=args.steps * args.batch_size)
    torch.manual_seed(0)
    plain = plain_loop(sentences, args.steps, args.batch_size, args.max_seq_length)
    rss_after_plain = peak_rss_mb()
    ours = sentlab_loop(corpus, args.steps, args.batch_size, args.max_seq_length)
    rss_after_ours = peak_rss_mb()
    mean = lambda xs: sum(xs[args.warmup :]) / len(xs[args.warmup :])  # noqa: E731
    results = {
        "benchmark": "simcse_train_step",
        "model": "all-MiniLM-L6-v2",
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "steps_timed": args.steps - args.warmup,
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "threads": torch.get_num_threads(),
        "plain_step_s": mean(plain),
        "sentlab_step_s": mean(ours),
        "ratio": mean(ours) / mean(plain),
        "peak_rss_mb_process_after_plain": rss_after_plain,
        "peak_rss_mb_process_after_both": rss_after_ours,
        "target_ratio_max": 1.10,
    }
    if torch.cuda.is_available():
        results["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
