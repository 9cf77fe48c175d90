"""A supervised preset over seeds against its start model: STS-B test and the STS average of each
seed's kept model and of the start, with the multi-bootstrap over seeds and items of the difference
(:func:`sentlab.evaluation.uncertainty.seed_item_difference`). The checkpoint is chosen on the
preset's dev task (STS-B dev), and confirmed on the test items here. Prints one JSON object.

    python benchmarks/supervised_seeds.py --preset stsb-minilm-cpu --seeds 1 2 3 --output runs/stsb-minilm-cpu-seeds

A seed whose run folder holds a finished model is not trained again; its scores are reused (an
``--output`` that holds runs of another preset or ``--set`` is refused).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path


def sentlab(argv: list[str]) -> None:
    from sentlab.cli import main

    with contextlib.redirect_stdout(sys.stderr):  # stdout holds the one JSON object
        code = main(argv)
    if code:
        raise SystemExit(f"sentlab {' '.join(argv)} exited with {code}")


def scored(model: str, output: Path) -> dict:
    """``sentlab eval`` of ``model`` on STS with its items (written once)."""
    if not output.is_file():
        sentlab(["eval", "--model", model, "--tasks", "sts", "--items", "--quiet", "--output", str(output)])
    return json.loads(output.read_text("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="stsb-minilm-cpu")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], help="a further --set for every run")
    args = parser.parse_args()

    from sentlab.evaluation.uncertainty import seed_item_difference
    from sentlab.methods import load_config
    from sentlab.reporting.claims import task_items

    args.output.mkdir(parents=True, exist_ok=True)
    asked = {"preset": args.preset, "set": args.set}
    kept = args.output / "asked.json"
    if kept.is_file() and json.loads(kept.read_text("utf-8")) != asked:  # its models and scores are another's
        raise SystemExit(f"{args.output} holds runs of {kept.read_text('utf-8').strip()}; give another --output")
    kept.write_text(json.dumps(asked) + "\n", encoding="utf-8")
    start_name = load_config(args.preset, args.set).model.name
    start = scored(start_name, args.output / "start.json")
    trained, per_seed = [], {}
    for seed in args.seeds:
        run = args.output / f"seed-{seed}"
        if not (run / "model" / "modules.json").is_file():
            sets = [f"train.seed={seed}", f"train.output_dir={run}", "eval.final_tasks=[]", *args.set]
            sentlab(["train", args.preset, "--quiet", *(x for item in sets for x in ("--set", item))])
        result = scored(str(run / "model"), run / "sts-items.json")
        selection = (
            json.loads((run / "selection.json").read_text("utf-8")) if (run / "selection.json").is_file() else {}
        )
        per_seed[seed] = {
            "sts_avg": result["summary"]["sts_avg"],
            "STS-B": result["tasks"]["STS-B"]["spearman"],
            "kept_step": selection.get("kept_step"),
        }
        trained.append(result)
    summary = {
        "preset": args.preset,
        "overrides": args.set,
        "start": {
            "model": start_name,
            "sts_avg": start["summary"]["sts_avg"],
            "STS-B": start["tasks"]["STS-B"]["spearman"],
        },
        "seeds": per_seed,
    }
    for task in ("STS-B", "sts_avg"):
        values = [s[task] for s in per_seed.values()]
        difference = seed_item_difference([task_items(r, task) for r in trained], [task_items(start, task)])
        summary[task] = {
            "mean": statistics.mean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else None,
            "minus_start": difference.to_dict(),
        }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
