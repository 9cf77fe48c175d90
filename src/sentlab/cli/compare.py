"""``sentlab compare``: two training configs (a preset, or your own method's config) over seeds,
each seed's kept model scored on the same items, and the difference with the multi-bootstrap over
seeds and items (:func:`sentlab.evaluation.uncertainty.seed_item_difference`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from sentlab.cli.common import data_dir_arg, quiet_arg, set_arg


def _label(config: str) -> str:
    path = Path(config)
    return path.stem if path.suffix in (".yaml", ".yml") else config


def cmd_compare(args: argparse.Namespace) -> int:
    from sentlab.errors import ConfigError
    from sentlab.evaluation.uncertainty import seed_item_difference
    from sentlab.reporting.claims import task_items
    from sentlab.training.config import load_config
    from sentlab.training.engine import train

    labels = [_label(c) for c in args.configs]
    if labels[0] == labels[1]:
        raise ConfigError(f"both configs are called {labels[0]!r}: give files of different names")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    asked = {"configs": args.configs, "set": args.set, "seeds": args.seeds, "task_cards": args.task_card}
    kept = out / "asked.json"
    if kept.is_file() and json.loads(kept.read_text("utf-8")) != asked:
        raise ConfigError(f"{out} holds a comparison asked otherwise ({kept}); give another --output")
    kept.write_text(json.dumps(asked) + "\n", encoding="utf-8")
    scoring = [x for card in args.task_card for x in ("--task-card", card)] if args.task_card else ["--tasks", "sts"]
    if args.data_dir:
        scoring += ["--data-dir", args.data_dir]
    results: dict[str, list[dict]] = {}
    for config, label in zip(args.configs, labels):
        results[label] = []
        for seed in args.seeds:
            run = out / label / f"seed-{seed}"
            if not (run / "model" / "modules.json").is_file():
                sets = [*args.set, f"train.seed={seed}", f"train.output_dir={run}", "eval.final_tasks=[]"]
                if args.data_dir:
                    sets.append(f"data.data_dir={args.data_dir}")
                if args.quiet:
                    sets.append("train.progress_bar=false")
                train(load_config(config, sets), evaluate=False)
            scores = run / "scores.json"
            if not scores.is_file():
                with contextlib.redirect_stdout(sys.stderr):  # stdout holds the comparison
                    code = _evaluate(["--model", str(run / "model"), "--items", "--output", str(scores), *scoring])
                if code:
                    return code
            results[label].append(json.loads(scores.read_text("utf-8")))
    headlines = [_card_name(card) for card in args.task_card] if args.task_card else ["sts_avg"]
    first, second = labels
    rows = {}
    for task in headlines:
        a = [task_items(r, task) for r in results[first]]
        b = [task_items(r, task) for r in results[second]]
        rows[task] = seed_item_difference(a, b).to_dict()
    (out / "compare.json").write_text(json.dumps({"first": first, "second": second, "tasks": rows}, indent=1) + "\n")
    print(f"{first} minus {second}, {len(args.seeds)} seeds (95 % interval over seeds and items):")
    for task, d in rows.items():
        verdict = "beyond the noise" if d["beyond_noise"] else "not beyond the noise"
        seeds = ", ".join(f"{x:+.2f}" for x in d["per_seed"])
        print(f"  {task}: {d['difference']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}], per seed {seeds}: {verdict}")
    print(f"written to {out / 'compare.json'}")
    return 0


def _evaluate(argv: list[str]) -> int:
    """``sentlab eval ARGV``, through the eval command's own parser and handler."""
    from sentlab.cli.common import Parser
    from sentlab.cli.eval import add_parser

    parser = Parser(prog="sentlab")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", *argv])
    return args.func(args)


def _card_name(card: str) -> str:
    """The task a card's results are filed under: its ``name``."""
    import yaml

    return str(yaml.safe_load(Path(card).read_text("utf-8"))["name"])


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="train two configs over seeds and compare their models on the same items (multi-bootstrap over "
        "seeds and items): e.g. your own method against SimCSE",
    )
    p.add_argument("configs", nargs=2, metavar="CONFIG", help="two presets or YAML configs: the first minus the second")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="training seeds (default 1 2 3)")
    p.add_argument("--task-card", action="append", default=[], help="score on this card (repeatable; default: STS)")
    p.add_argument("--output", required=True, help="folder of the runs, their scores and compare.json")
    set_arg(p, "a config value of both configs")
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_compare)
