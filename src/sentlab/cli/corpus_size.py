"""``sentlab corpus-size``: tSDAE Sec. 7.1: the corpus-size curve."""

from __future__ import annotations

import argparse

from sentlab.cli.common import comma_list, data_dir_arg, positive_int, quiet_arg, set_arg, train_overrides


def cmd_corpus_size(args: argparse.Namespace) -> int:
    """TSDAE Sec. 7.1 / Fig. 3: train CONFIG on N sentences for each size, score each on a dev task."""
    import json

    from sentlab.training.corpus_size import corpus_size_curve

    result = corpus_size_curve(
        args.config,
        args.sizes,
        args.task,
        args.output,
        args.epochs,
        args.max_steps,
        train_overrides(args),
        args.data_dir,
    )
    print(json.dumps(result["points"]))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "corpus-size",
        help="TSDAE Sec. 7.1: train a config on 128 ... 65,536 sentences and score "
        "each model on a dev task (JSON + PNG)",
    )
    p.add_argument("config", metavar="CONFIG")
    p.add_argument(
        "--sizes",
        type=comma_list(int),
        default=None,
        help="comma-separated corpus sizes (default: the paper's 128, 256, ..., 65536)",
    )
    p.add_argument(
        "--task", default="sts-b", help="dev task: sts-b, twitterpara, cqadupstack:<forum> or a task card (.yaml)"
    )
    p.add_argument("--epochs", type=float, default=10.0, help="epochs over each corpus (the paper: 10)")
    p.add_argument("--max-steps", type=positive_int, default=100_000, help="step cap (the paper: 100k)")
    set_arg(p)
    p.add_argument("--output", required=True)
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_corpus_size)
