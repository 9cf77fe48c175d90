"""``sentlab pipeline``: train several configs in a chain, each stage from the previous stage's model."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentlab.cli.common import (
    allow_changed_arg,
    data_dir_arg,
    quiet_arg,
    set_arg,
    train_overrides,
)
from sentlab.progress import say


def cmd_pipeline(args: argparse.Namespace) -> int:
    """Train the configs in order; each stage after the first starts from the previous stage's model
    (its ``model.name`` is set to that run's ``model/``). A stage whose run folder already holds a
    final model is kept as it is, so re-running the command after a crash continues where it
    stopped (the interrupted stage with ``--resume``)."""
    from sentlab.methods import load_config
    from sentlab.training.checkpoints import checkpoint_folders
    from sentlab.training.engine import RunPaths, train

    previous: Path | None = None
    for number, config in enumerate(args.configs, start=1):
        overrides = train_overrides(args) + ([f"model.name={previous}"] if previous is not None else [])
        cfg = load_config(config, overrides)
        paths = RunPaths(Path(cfg.train.output_dir))
        if (paths.model / "modules.json").is_file():
            say(f"stage {number} ({config}): {paths.model} exists, kept")
        else:
            resume = bool(checkpoint_folders(paths.checkpoints))
            say(f"stage {number} ({config}): {cfg.method} from {cfg.model.name}" + (" (resumed)" if resume else ""))
            train(cfg, resume=resume, evaluate=not args.no_eval, allow_changed=args.allow_changed_settings)
        previous = paths.model
    print(previous)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pipeline",
        help="train several configs in a chain: each stage starts from the previous "
        "stage's model (e.g. TSDAE on your text, then NLI+STS)",
    )
    p.add_argument("configs", nargs="+", metavar="CONFIG", help="presets or YAML training configs, in order")
    set_arg(p, "a value in every stage's config")
    p.add_argument("--no-eval", action="store_true", help="skip each stage's final STS evaluation")
    allow_changed_arg(p)
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_pipeline)
