"""A LoRA adapter against full fine-tuning on the CPU preset: trainable parameters, step time, peak
memory and STS.

Feeds: records adapters-minilm; pages docs/guides/adapters.md, docs/results.md.

For each seed, ``simcse-unsup-minilm-cpu`` (30 steps of unsupervised SimCSE from all-MiniLM-L6-v2) is
trained twice with ``sentlab train`` in a fresh process, without dev evaluations
(``eval.dev_task=none``, the last step kept): once as it is (every weight trained) and once with
``model.adapter`` (LoRA, ``--rank``, alpha twice the rank, on the attention's query and value layers).
Each run reports its STS average (seven tasks, the final evaluation), the parameters trained (the
run log's line for the adapter; the model's parameter count otherwise), the median step time
(``seconds_per_step`` of its metrics after the first two steps) and the peak resident memory of its
process. ``summary`` gives the mean and standard deviation over the seeds of each, and the adapter's
STS minus full fine-tuning's. Runs go to ``runs/adapters/{full,lora}-SEED`` and are reused when their
results are there. Prints one JSON object.

    python -m benchmarks.studies.adapters --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

from benchmarks.common import spread, train_preset


def run(kind: str, seed: int, rank: int) -> dict:
    folder = Path("runs/adapters") / (f"lora-r{rank}-{seed}" if kind == "lora" else f"full-{seed}")
    summary = folder / "benchmark.json"
    if summary.is_file() and (folder / "results.json").is_file():
        return json.loads(summary.read_text("utf-8"))
    sets = {"train.seed": seed, "eval.dev_task": "none", "train.keep_best": "false"}
    if kind == "lora":
        sets["model.adapter"] = f"{{rank: {rank}, alpha: {2 * rank}, target_modules: [query, value]}}"
    peak = train_preset("simcse-unsup-minilm-cpu", folder, sets, child=True)["peak_rss_mib"]
    results = json.loads((folder / "results.json").read_text("utf-8"))
    steps = [json.loads(line) for line in (folder / "metrics.jsonl").read_text("utf-8").splitlines() if line]
    times = [r["seconds_per_step"] for r in steps if "seconds_per_step" in r and r.get("step", 0) > 2]
    log = (folder / "run.log").read_text("utf-8")
    counted = re.search(r"LoRA rank \d+, ([\d,]+) of the (?:encoder|model)'s ([\d,]+) parameters trained", log)
    row = {
        "sts_avg": round(results["summary"]["sts_avg"], 2),
        "step_s": round(statistics.median(times), 3) if times else None,
        "peak_rss_mib": peak,
        "trained_parameters": int(counted.group(1).replace(",", "")) if counted else None,
    }
    summary.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rank", type=int, default=8)
    args = parser.parse_args()
    runs = {kind: {str(seed): run(kind, seed, args.rank) for seed in args.seeds} for kind in ("full", "lora")}
    from sentlab.encoders import load_encoder

    total = sum(p.numel() for p in load_encoder("minilm").parameters())
    for row in runs["full"].values():
        row["trained_parameters"] = total
    summary = {}
    for kind, rows in runs.items():
        summary[kind] = {}
        for key in ("sts_avg", "step_s", "peak_rss_mib", "trained_parameters"):
            summary[kind][key] = spread([r[key] for r in rows.values() if r[key] is not None], digits=3)
    gaps = [runs["lora"][s]["sts_avg"] - runs["full"][s]["sts_avg"] for s in runs["full"]]
    summary["lora_minus_full_sts"] = spread(gaps, digits=2)
    print(json.dumps({"rank": args.rank, "runs": runs, "summary": summary}))


if __name__ == "__main__":
    main()
