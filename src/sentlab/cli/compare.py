"""``sentlab compare``: two or more training configs (presets, or your own method's config) over
seeds, each seed's kept model scored on the same items, and each config's difference from the last
(the baseline) with the multi-bootstrap over seeds and items
(:func:`sentlab.evaluation.uncertainty.seed_item_difference`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path

from sentlab.cli.common import data_dir_arg, quiet_arg, seeds_arg, set_arg
from sentlab.paths import json_text, write_text_atomic


def _label(config: str) -> str:
    path = Path(config)
    return path.stem if path.suffix in (".yaml", ".yml") else config


def _spread(scores: list[float]) -> dict:
    """The seeds' scores, their mean and their standard deviation (n - 1)."""
    return {"per_seed": scores, "mean": statistics.mean(scores), "sd": statistics.stdev(scores)}


def cmd_compare(args: argparse.Namespace) -> int:
    from sentlab.cache import file_sha256
    from sentlab.data.datasets_source import source_identity
    from sentlab.errors import ConfigError
    from sentlab.evaluation.task_cards import load_task_card
    from sentlab.evaluation.uncertainty import headline, seed_item_difference
    from sentlab.methods import load_config
    from sentlab.reporting.claims import task_items
    from sentlab.training.checkpoints import checkpoint_folders
    from sentlab.training.engine import train
    from sentlab.training.run_folder import RunPaths, run_fingerprint

    score_sts = args.sts or not args.task_card  # STS: asked for, or the default without a card

    labels = [_label(c) for c in args.configs]
    if len(labels) < 2:
        raise ConfigError("give two or more configs: each is compared with the last")
    if len(set(labels)) != len(labels):
        raise ConfigError(f"two configs are called alike ({', '.join(labels)}): give files of different names")
    if len(set(args.seeds)) != len(args.seeds) or len(args.seeds) < 3:
        # resampling k seeds puts the spread over seeds at (k - 1) / k of its size: half of it with two
        raise ConfigError(
            f"--seeds {','.join(map(str, args.seeds))}: give three or more different seeds (the interval "
            "resamples the seeds, and two understate their spread by half)"
        )
    out = Path(args.output)
    # every run's config first, and the cards: a bad one stops the comparison before any training
    planned = {}
    for config, label in zip(args.configs, labels):
        for seed in args.seeds:
            run = out / label / f"seed-{seed}"
            sets = [*args.set, f"train.seed={seed}", f"train.output_dir={run}", "eval.final_tasks=[]"]
            sets += [f"data.data_dir={args.data_dir}"] if args.data_dir else []
            sets += ["train.progress_bar=false"] if args.quiet else []
            planned[(label, seed)] = load_config(config, sets)
    loaded = {card: load_task_card(card) for card in args.task_card}
    cards = {card: task.name for card, task in loaded.items()}
    if len(set(cards.values())) != len(cards):
        raise ConfigError("two task cards share a name: their results would overwrite each other")
    named = [path for task in loaded.values() for path in task.files()]
    missing = [str(path) for path in named if not path.is_file()]
    if missing:  # found now, not after the training
        raise ConfigError(f"task card data not found: {', '.join(missing)}")
    files = [c for c in [*args.configs, *args.task_card, *map(str, named)] if Path(c).is_file()]
    sources = {  # opened now, not after the training; their identity as a run's data is fingerprinted
        f"{task.name}.{key}": source_identity(task.dataset(key)) for task in loaded.values() for key in task.sources()
    }
    asked = {
        "configs": args.configs,
        "set": args.set,
        "seeds": args.seeds,
        "task_cards": args.task_card,
        "sts": args.sts,
        "data_dir": args.data_dir,
        "files_sha256": {f: file_sha256(Path(f)) for f in files},
        **({"sources": sources} if sources else {}),
    }

    kept = out / "asked.json"
    if kept.is_file() and json.loads(kept.read_text("utf-8")) != asked:
        raise ConfigError(f"{out} holds a comparison asked otherwise ({kept}); give another --output")
    out.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(asked) + "\n", encoding="utf-8")

    trusted = any(cfg.model.trust_remote_code for cfg in planned.values())
    poolers = {cfg.model.pooler for cfg in planned.values()}
    if args.start_model and len(poolers) > 1:
        raise ConfigError(
            f"--start-model: the configs pool differently ({', '.join(sorted(map(str, poolers)))}), so no one "
            "start model is theirs; compare configs of one pooler"
        )
    start_pooler = [] if None in poolers else ["--pooler", next(iter(poolers))]  # as the configs build it

    def scoring(data_dir: str | None) -> list[str]:
        """``sentlab eval``'s options: the cards, STS when asked, the data folder, the configs' trust of
        remote code."""
        options = [x for card in args.task_card for x in ("--task-card", card)]
        options += ["--trust-remote-code"] if trusted else []
        options += ["--tasks", "sts"] if score_sts else []
        return options + (["--data-dir", data_dir] if data_dir else [])

    results: dict[str, list[dict]] = {label: [] for label in labels}
    for (label, seed), cfg in planned.items():
        paths = RunPaths(out / label / f"seed-{seed}")
        finished = paths.fingerprint.is_file() and (paths.model / "modules.json").is_file()
        if finished and json.loads(paths.fingerprint.read_text("utf-8")) != run_fingerprint(cfg):
            raise ConfigError(f"{paths.root} was trained from another config or text; give another --output")
        if not finished:  # a run cut short continues from its last checkpoint
            train(cfg, resume=bool(checkpoint_folders(paths.checkpoints)), evaluate=False)
        scores = paths.root / "scores.json"
        if not scores.is_file():
            data_dir = args.data_dir or cfg.data.data_dir
            with contextlib.redirect_stdout(sys.stderr):  # stdout holds the comparison
                _evaluate(["--model", str(paths.model), "--items", "--output", str(scores), *scoring(data_dir)])
        results[label].append(json.loads(scores.read_text("utf-8")))
    headlines = (["sts_avg"] if score_sts else []) + list(cards.values())
    *others, baseline = labels
    differences = {
        label: {
            task: seed_item_difference(
                [task_items(r, task) for r in results[label]], [task_items(r, task) for r in results[baseline]]
            ).to_dict()
            for task in headlines
        }
        for label in others
    }
    means = {
        label: {task: _spread([headline(task_items(r, task)) for r in results[label]]) for task in headlines}
        for label in labels
    }
    report = {"baseline": baseline, "seeds": args.seeds, "scores": means, "minus_baseline": differences}
    start = None
    if args.start_model:  # the model every config started from, untrained, scored on the same items
        # scored at every call, never read back from an earlier one (a folder's weights may have changed
        # under its name); its embeddings come from the embedding cache when they were encoded before
        start_scores = out / "start-model.json"
        data_dir = args.data_dir or next(iter(planned.values())).data.data_dir
        lengths = {r["settings"].get("max_seq_length") for runs in results.values() for r in runs}
        if len(lengths) > 1:
            raise ConfigError(
                f"--start-model: the trained models encode at different lengths ({', '.join(map(str, lengths))}), "
                "so no one length scores the start model as they were scored; compare configs of one length"
            )
        length = next(iter(lengths))  # the start at the trained models' length (None: a static model's whole texts)
        start_length = [] if length is None else ["--max-seq-length", str(length)]
        with contextlib.redirect_stdout(sys.stderr):
            _evaluate(
                [
                    "--model",
                    args.start_model,
                    *start_pooler,
                    *start_length,
                    "--items",
                    "--output",
                    str(start_scores),
                    *scoring(data_dir),
                ]
            )
        start = json.loads(start_scores.read_text("utf-8"))
        report["start_model"] = {
            "model": args.start_model,
            "scores": {task: headline(task_items(start, task)) for task in headlines},
        }
        report["minus_start"] = {
            label: {
                task: seed_item_difference(
                    [task_items(r, task) for r in results[label]], [task_items(start, task)]
                ).to_dict()
                for task in headlines
            }
            for label in labels
        }
        differences = {
            **differences,
            **{f"{label} minus the start model": rows for label, rows in report["minus_start"].items()},
        }
    report["comparisons"] = sum(len(rows) for rows in differences.values())
    write_text_atomic(out / "compare.json", json_text(report, indent=1))
    for label, rows in differences.items():
        name = label if label.endswith(" minus the start model") else f"{label} minus {baseline}"
        print(f"{name}, {len(args.seeds)} seeds (95 % interval over seeds and items):")
        for task, d in rows.items():
            verdict = "beyond the noise" if d["beyond_noise"] else "not beyond the noise"
            seeds = ", ".join(f"{x:+.2f}" for x in d["per_seed"])
            other = "the start model" if label.endswith(" minus the start model") else f"the {baseline} mean"
            print(
                f"  {task}: {d['difference']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]; each seed minus "
                f"{other}: {seeds}; {verdict}"
            )
    tests = sum(len(rows) for rows in differences.values())
    print(
        f"{tests} comparison(s) ({len(differences)} config(s) x {len(headlines)} task(s)), each interval 95 % on its "
        "own: with several, expect about one in twenty to look beyond the noise by chance"
    )
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


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="train two or more configs over seeds and compare their models on the same items (multi-bootstrap "
        "over seeds and items): e.g. your own method against SimCSE",
    )
    p.add_argument(
        "configs", nargs="+", metavar="CONFIG", help="two or more presets or YAML configs: each minus the last"
    )
    seeds_arg(p, [1, 2, 3], "comma-separated training seeds (default 1,2,3)")
    p.add_argument("--task-card", action="append", default=[], help="score on this card (repeatable; default: STS)")
    p.add_argument("--sts", action="store_true", help="score on STS as well as on the task cards")
    p.add_argument("--output", required=True, help="folder of the runs, their scores and compare.json")
    p.add_argument(
        "--start-model",
        default=None,
        metavar="MODEL",
        help="also score this model untrained (the configs' start) on the same items, and each config minus it",
    )
    set_arg(p, "a config value of every config")
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_compare)
