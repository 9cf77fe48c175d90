"""The spread over seeds behind the learning test's margin (tests/training/test_learning.py): the gain
in held-out paraphrase AP after a method's steps from the tiny random encoder, per seed, and with the
encoder's gradient cut. Prints one JSON object.

Feeds: no record; the margin of tests/training/test_learning.py.

    python -m benchmarks.studies.learning_spread --method simcse-unsup --seeds 10
    python -m benchmarks.studies.learning_spread --method tsdae --steps 100 --lr 3e-4 --seeds 2
    python -m benchmarks.studies.learning_spread --method tsdae --task topic --seeds 10
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="simcse-unsup")
    parser.add_argument(
        "--task",
        default="paraphrase",
        choices=["paraphrase", "topic"],
        help="the synthetic held-out task (tests/training/test_learning.py)",
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--cut-seeds", type=int, default=3, help="seeds run with the encoder's gradient cut")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--pooler", default="mean", help="the encoder's pooling, before and after training")
    args = parser.parse_args()
    from sentlab.encoders import build_encoder
    from sentlab.progress import set_quiet
    from tests.training.test_learning import average_precision, gain_after_training, make_task

    set_quiet(True)
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(sys.stderr):
        task = make_task(Path(folder), args.task)
        _, backbone, pairs, labels = task
        before = average_precision(build_encoder(str(backbone), args.pooler).eval(), pairs, labels)
        gains = [
            gain_after_training(task, args.method, seed, steps=args.steps, learning_rate=args.lr, pooler=args.pooler)
            for seed in range(args.seeds)
        ]
        cut = [
            gain_after_training(
                task,
                args.method,
                seed,
                cut_encoder_gradient=True,
                steps=args.steps,
                learning_rate=args.lr,
                pooler=args.pooler,
            )
            for seed in range(args.cut_seeds)
        ]
    print(
        json.dumps(
            {
                "method": args.method,
                "task": args.task,
                "pooler": args.pooler,
                "steps": args.steps,
                "lr": args.lr,
                "ap_before": round(before, 4),
                "gains": [round(g, 4) for g in gains],
                "mean": round(statistics.mean(gains), 4),
                "sd": round(statistics.stdev(gains), 4) if len(gains) > 1 else 0.0,
                "min": round(min(gains), 4),
                "gains_with_gradient_cut": [round(g, 4) for g in cut],
            }
        )
    )


if __name__ == "__main__":
    main()
