"""Time and peak memory of each ``sentlab eval`` task family, each run in a fresh process through
the command line (``sentlab eval --tasks FAMILY``), so a family's peak resident memory is its own.
A ``load`` row measures a process that only loads the model (the baseline in every family's peak).

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

Writes ``OUTPUT/results-FAMILY.json`` per family and ``OUTPUT/results.json`` (all families merged,
for ``sentlab report``), and prints JSON: per family wall seconds, seconds spent in the family
(settings.seconds), peak RSS in MiB.

    python -m benchmarks.studies.eval_families --model minilm --families transfer useb evalrank --output runs/eval-minilm
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import last_json
from sentlab.evaluation.results import EvalReport


def child(argv: list[str]) -> None:
    from sentlab.cli import main

    if argv[0] == "load":
        from sentlab.encoders import load_encoder

        load_encoder(argv[1])
        code = 0
    else:
        code = main(argv)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(json.dumps({"peak_rss_mib": round(peak_mib, 1), "exit_code": code}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--families", nargs="+", default=["sts", "ranking", "transfer", "useb", "evalrank"])
    parser.add_argument("--output", required=True)
    parser.add_argument("--jobs", default="2", help="parallel classifier fits for transfer")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more `sentlab eval` arguments")
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rows = {}
    merged = EvalReport(model=args.model)
    for family in ["load", *args.families]:
        if family == "load":
            argv = ["load", args.model]
        else:
            argv = [
                "eval",
                "--model",
                args.model,
                "--tasks",
                family,
                "--jobs",
                args.jobs,
                "--output",
                str(out / f"results-{family}.json"),
                *args.extra,
            ]
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", __spec__.name, "--child", *argv], capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"{family} failed:\n{proc.stderr[-2000:]}")
        measured = last_json(proc.stdout)
        rows[family] = {"wall_seconds": round(wall, 1), **measured}
        if family != "load":
            report = EvalReport.read(out / f"results-{family}.json")
            rows[family]["family_seconds"] = report.settings.get("seconds", {}).get(family)
            merged.tasks.update(report.tasks)
            for key, value in report.summary.items():
                if key == "skipped":
                    merged.summary.setdefault("skipped", {}).update(value)
                else:
                    merged.summary[key] = value
            merged.settings.update({k: v for k, v in report.settings.items() if k not in ("seconds", "tasks")})
            merged.settings.setdefault("seconds", {}).update(report.settings.get("seconds", {}))
    merged.write(out / "results.json")
    print(json.dumps({"model": args.model, "families": rows, "results": str(out / "results.json")}, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
