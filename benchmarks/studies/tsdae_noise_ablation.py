"""TSDAE's noise ablation (Wang et al. 2021, App. A, Table 5) at CPU scale: one TSDAE run per noise
type at the same ratio (Table 5: 0.3), same sentences, steps and seed, each scored on one dev task
(default STS-B dev, the paper's), with the paper's scores and ordering beside.

Feeds: records tsdae-noise-minilm; pages docs/methods/tsdae.md.

    python -m benchmarks.studies.tsdae_noise_ablation --output runs/noise --steps 300
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

PAPER_TABLE_5 = {"delete": 78.33, "swap": 76.85, "mask": 76.56, "replace": 74.01, "add": 72.65}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="tsdae-minilm-cpu")
    parser.add_argument("--noises", default=",".join(PAPER_TABLE_5))
    parser.add_argument("--ratio", type=float, default=0.3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--task", default="sts-b")
    parser.add_argument("--output", default="runs/noise")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()

    from sentlab.encoders import load_encoder
    from sentlab.evaluation.dev_tasks import score_dev_task
    from sentlab.methods import load_config
    from sentlab.progress import set_quiet
    from sentlab.training.engine import train

    set_quiet(True)
    scores, seconds = {}, {}
    base = load_config(args.config, args.set)
    start = score_dev_task(load_encoder(base.model.name, pooler=base.model.pooler).eval(), args.task)
    for noise in args.noises.split(","):
        started = time.perf_counter()
        cfg = load_config(
            args.config,
            [
                *args.set,
                f"tsdae.noise={noise}",
                f"tsdae.ratio={args.ratio}",
                f"train.max_steps={args.steps}",
                f"data.limit={args.steps * base.train.batch_size}",
                f"train.output_dir={Path(args.output) / noise}",
                "train.progress_bar=false",
                f"train.eval_steps={args.steps}",
            ],
        )
        model = load_encoder(train(cfg, evaluate=False).model)
        scores[noise] = score_dev_task(model.eval(), args.task)
        seconds[noise] = round(time.perf_counter() - started, 1)
    ours = sorted(scores, key=scores.get, reverse=True)
    paper = sorted(PAPER_TABLE_5, key=PAPER_TABLE_5.get, reverse=True)
    print(
        json.dumps(
            {
                "config": args.config,
                "task": args.task,
                "ratio": args.ratio,
                "steps": args.steps,
                "start_model_score": start,
                "scores": scores,
                "ordering": ours,
                "paper_scores_table5": PAPER_TABLE_5,
                "paper_ordering": paper,
                "seconds": seconds,
            }
        )
    )


if __name__ == "__main__":
    main()
