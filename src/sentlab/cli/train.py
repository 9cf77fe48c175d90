"""``sentlab train``: train an encoder from a preset or a YAML config."""

from __future__ import annotations

import argparse

from sentlab.cli.common import (
    allow_changed_arg,
    data_dir_arg,
    quiet_arg,
    train_overrides,
)


def cmd_train(args: argparse.Namespace) -> int:
    from sentlab.evaluation.results import EvalReport
    from sentlab.training.config import load_config
    from sentlab.training.engine import train

    cfg = load_config(args.config, train_overrides(args))
    paths = train(cfg, resume=args.resume, evaluate=not args.no_eval, allow_changed=args.allow_changed_settings)
    for results in (paths.results, paths.rank_results):  # cosine; Eq. 7 for RankEncoder runs
        if results.is_file():
            print(EvalReport.read(results).table())
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train an encoder from a preset or a YAML config")
    p.add_argument("config", metavar="CONFIG", help="a preset name (sentlab presets), e.g. simcse-unsup-minilm-cpu, "
                                                    "or a YAML config file (sentlab presets show NAME > my.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.learning_rate=1e-5 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of the run")
    p.add_argument("--no-eval", action="store_true", help="skip the final STS evaluation")
    allow_changed_arg(p)
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_train)
