"""BERT-flow's flow alone on frozen all-MiniLM-L6-v2 vectors of CQADupStack titles (the first 4,000
distinct titles of each forum, through the model's own pipeline, which normalises them),
the way the engine trains it: batches of 8, AdamW, linear decay, gradient clipping at 1.0. Per forum,
variant and seed (1, 2, 3; they set the order and the flow's initialisation): the last and the lowest
negative log-likelihood, and the step of a non-finite loss. A variant is ``[initN]lrX``: ActNorm
initialised from N training vectors before the first step (no ``initN``: from the first batch, as
normflows does) at learning rate X. Prints one JSON object.

Feeds: records bertflow-stability-minilm; pages docs/methods/tsdae.md.

    HF_HUB_OFFLINE=1 python -m benchmarks.studies.bertflow_stability --forums webmasters android --steps 300 \
        --variants lr1e-3 init1024lr1e-3 lr1e-4 init1024lr1e-4
"""

from __future__ import annotations

import argparse
import math
import random
import re

import numpy as np
import torch

from benchmarks.common import emit
from sentlab.data.useb import load_cqadupstack, task_folder
from sentlab.encoders.backends import pin_float32_math
from sentlab.encoders.flow import GlowFlow
from sentlab.encoders.loading import load_encoder

BATCH = 8
SEEDS = (1, 2, 3)


def parse_variant(variant: str) -> tuple[int, float]:
    """``init1024lr1e-4`` -> (1024, 1e-4); ``lr1e-3`` -> (0, 1e-3)."""
    match = re.fullmatch(r"(?:init(\d+))?lr([0-9.e+-]+)", variant)
    if match is None:
        raise SystemExit(f"bertflow_stability: variant {variant!r} is not [initN]lrX, e.g. init1024lr1e-4")
    return int(match.group(1) or 0), float(match.group(2))


def train_flow(vectors: np.ndarray, init: int, lr: float, seed: int, steps: int) -> dict[str, float | int | None]:
    torch.manual_seed(seed)
    order = list(range(len(vectors)))
    random.Random(seed).shuffle(order)
    flow = GlowFlow(vectors.shape[1], 6, 32, seed=seed).train()
    if init:
        flow.initialise(torch.as_tensor(vectors[order[:init]]))
    optimizer = torch.optim.AdamW([p for p in flow.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    non_finite_at, last, lowest = None, None, math.inf
    for step in range(steps):
        batch = torch.as_tensor(vectors[[order[(step * BATCH + i) % len(order)] for i in range(BATCH)]])
        for group in optimizer.param_groups:
            group["lr"] = lr * (1 - step / steps)
        loss = -flow({"sentence_embedding": batch})["flow_log_likelihood"].mean()
        if not torch.isfinite(loss):
            non_finite_at = step
            break
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(flow.parameters(), 1.0)
        optimizer.step()
        last = loss.item()
        lowest = min(lowest, last)
    return {"non_finite_at_step": non_finite_at, "last_nll": last, "lowest_nll": lowest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forums", nargs="+", default=["webmasters", "android"])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--variants", nargs="+", default=["lr1e-3", "init1024lr1e-3", "lr1e-4", "init1024lr1e-4"])
    args = parser.parse_args()
    pin_float32_math()  # fp32 is IEEE float32 on every CPU, as in the engine
    variants = {variant: parse_variant(variant) for variant in args.variants}
    forums = load_cqadupstack(task_folder("CQADupStack"))
    unknown = sorted(set(args.forums) - set(forums))
    if unknown:
        raise SystemExit(f"bertflow_stability: unknown forum(s) {', '.join(unknown)} (choose from {', '.join(forums)})")
    model = load_encoder("minilm")
    runs = []
    for forum in args.forums:
        titles = list(dict.fromkeys(forums[forum].corpus.values()))[:4000]
        vectors = model.encode(titles, batch_size=128, convert_to_numpy=True)
        for variant, (init, lr) in variants.items():
            for seed in SEEDS:
                runs.append(
                    {
                        "forum": forum,
                        "variant": variant,
                        "seed": seed,
                        **train_flow(vectors, init, lr, seed, args.steps),
                    }
                )
    diverged = {
        variant: {
            "runs": sum(run["variant"] == variant for run in runs),
            "non_finite": sum(run["variant"] == variant and run["non_finite_at_step"] is not None for run in runs),
        }
        for variant in variants
    }
    emit(
        {
            "benchmark": "bertflow_stability",
            "steps": args.steps,
            "batch_size": BATCH,
            "by_variant": diverged,
            "runs": runs,
        }
    )


if __name__ == "__main__":
    main()
