"""What repeats bit for bit: the CPU preset (``simcse-unsup-minilm-cpu``, a few steps, no evaluation)
trained twice with the same config on the same machine, then with another number of CPU threads, then
with another seed; for each pair of runs, whether the saved weights are the same bytes and the largest
difference of a weight and of a logged loss. Feeds record ``repeatability-minilm-cpu`` and
docs/guides/repeatability.md.

Feeds: records repeatability-minilm-cpu; pages docs/guides/repeatability.md.

    HF_HUB_OFFLINE=1 python -m benchmarks.studies.repeatability --steps 10
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from pathlib import Path

from benchmarks.common import emit, train_preset

PRESET = "simcse-unsup-minilm-cpu"


def train(out: Path, steps: int, seed: int, threads: int) -> Path:
    sets = {"train.max_steps": steps, "train.seed": seed, "eval.dev_task": "none", "train.logging_steps": 1}
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
    return train_preset(PRESET, out, sets, options=["--no-eval"], child=True, env=env)["folder"]


def weights(run: Path) -> dict:
    from safetensors.numpy import load_file

    return load_file(str(run / "model" / "model.safetensors"))


def losses(run: Path) -> list[float]:
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [line["loss"] for line in lines if "loss" in line]


def compare(a: Path, b: Path) -> dict:
    import numpy as np

    wa, wb = weights(a), weights(b)
    digest = [hashlib.sha256((r / "model" / "model.safetensors").read_bytes()).hexdigest() for r in (a, b)]
    la, lb = losses(a), losses(b)
    return {
        "same_bytes": digest[0] == digest[1],
        "max_weight_difference": float(max(np.abs(wa[k].astype(np.float64) - wb[k]).max() for k in wa)),
        "max_loss_difference": float(max(abs(x - y) for x, y in zip(la, lb))) if la and lb else None,
        "losses_logged": len(la),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    threads = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        first = train(root / "first", args.steps, args.seed, threads)
        again = train(root / "again", args.steps, args.seed, threads)
        one_thread = train(root / "one-thread", args.steps, args.seed, 1) if threads > 1 else None
        other_seed = train(root / "other-seed", args.steps, args.seed + 1, threads)
        result = {
            "preset": PRESET,
            "steps": args.steps,
            "threads": threads,
            "same_config_twice": compare(first, again),
            "one_thread_against_all": compare(first, one_thread) if one_thread else None,
            "another_seed": compare(first, other_seed),
        }
    emit(result)


if __name__ == "__main__":
    main()
