"""The RankCSE distillation experiment on real weights.

Feeds: records rankcse-distillation; pages docs/methods/index.md, docs/methods/rankcse.md,
docs/results.md.

Teacher: the packaged all-MiniLM-L6-v2 (6 layers). Student: its embeddings + first 3 layers. Arms,
all on the same Wikipedia sentences for the same number of steps (rankcse-minilm-student-cpu):
the untrained student, SimCSE-unsup, RankCSE-ListNet, RankCSE-ListMLE, and the teacher. For each:
the seven STS tasks, the ranking tasks (KCC / NDCG) and encoding speed (sentences per second over
the first --speed-sentences Wikipedia lines after the training ones, batch 128, each model's own
max length, median of three passes).
Trained arms are kept under runs/ and reused on a re-run. Prints JSON.

    python -m benchmarks.studies.rankcse_distillation [--config rankcse-minilm-student-cpu]
        [--set train.learning_rate=2e-4 --runs runs/rankcse-distillation-lr2e-4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from sentlab.data.readers import read_sentences
from sentlab.encoders import load_encoder
from sentlab.encoders.loading import keep_first_layers
from sentlab.evaluation import CosineScorer, EvalReport, evaluate_sts
from sentlab.evaluation.ranking import evaluate_ranking
from sentlab.evaluation.scoring import EmbeddingCache
from sentlab.methods import load_config
from sentlab.training.engine import train

ARMS = {
    "simcse": ["method=simcse-unsup", "rankcse="],
    "rankcse-listnet": [],
    "rankcse-listmle": ["rankcse.distillation=listmle", "rankcse.tau_student=0.05"],
}


def evaluate(model, name: str, speed_sentences: list[str], results_file: Path) -> dict:
    model.encode(speed_sentences[:128], batch_size=128)  # warm-up
    rates = []
    for _ in range(3):  # the median of three passes: single passes vary by ~20 % on a shared 2-core machine
        start = time.perf_counter()
        model.encode(speed_sentences, batch_size=128)
        rates.append(len(speed_sentences) / (time.perf_counter() - start))
    speed = statistics.median(rates)
    scorer = CosineScorer(EmbeddingCache(model), name=name)
    report = EvalReport(model=name)
    evaluate_sts(scorer, report=report)
    evaluate_ranking(scorer, report=report)
    report.settings["sentences_per_s"] = speed
    report.write(results_file)  # for `sentlab plot alignment-uniformity`
    return {
        "model": name,
        "sts": {t: round(r.spearman, 2) for t, r in report.tasks.items() if not t.endswith("-ranking")},
        "ranking": {
            t: {"kcc": round(r.kcc, 2), "ndcg": round(r.ndcg, 2)}
            for t, r in report.tasks.items()
            if t.endswith("-ranking")
        },
        "summary": {k: round(v, 4) if isinstance(v, float) else v for k, v in report.summary.items()},
        "sentences_per_s": round(speed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="rankcse-minilm-student-cpu")
    parser.add_argument("--speed-sentences", type=int, default=2000)
    parser.add_argument("--runs", default="runs/rankcse-distillation")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override applied to every trained arm, e.g. train.learning_rate=2e-4",
    )
    args = parser.parse_args()
    base = load_config(args.config)
    speed_sentences = read_sentences(base.data.train, limit=base.data.limit + args.speed_sentences)[base.data.limit :]
    results = []
    for arm, overrides in ARMS.items():
        out = Path(args.runs) / arm
        cfg = load_config(args.config, [*args.set, *overrides, f"train.output_dir={out}", "train.progress_bar=false"])
        if not (out / "model" / "modules.json").is_file():
            start = time.perf_counter()
            train(cfg, evaluate=False)
            (out / "wall_seconds.txt").write_text(f"{time.perf_counter() - start:.1f}\n")
        results.append(
            {
                "arm": arm,
                **evaluate(load_encoder(out / "model"), arm, speed_sentences, out / "results.json"),
                "train_wall_s": float((out / "wall_seconds.txt").read_text()),
            }
        )
    student = keep_first_layers(load_encoder(base.model.name), base.model.num_layers)
    results.insert(
        0,
        {
            "arm": "student-untrained",
            **evaluate(student, "student-untrained", speed_sentences, Path(args.runs) / "student-untrained.json"),
        },
    )
    results.append(
        {
            "arm": "teacher",
            **evaluate(
                load_encoder(base.rankcse.teachers[0]), "teacher", speed_sentences, Path(args.runs) / "teacher.json"
            ),
        }
    )
    print(
        json.dumps(
            {
                "config": args.config,
                "overrides": args.set,
                "steps": base.data.limit // base.train.batch_size,
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
