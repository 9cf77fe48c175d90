"""``sentlab analyze``: rankEncoder's analyses as JSON + PNG."""

from __future__ import annotations

import argparse

from sentlab.cli.common import (
    data_dir_arg,
    figures_output_arg,
    index_of,
    load,
    model_args,
)
from sentlab.errors import SentlabError


def cmd_analyze(args: argparse.Namespace) -> int:
    from sentlab.rank.analysis import analyze
    from sentlab.rank.model import RankEncoder

    encoder = load(args)
    index, _ = index_of(args, encoder)
    if index is None:
        raise SentlabError("analyze needs --index (or a RankEncoder model folder)")
    retrained = RankEncoder.load(args.retrained, device=args.device) if args.retrained else None
    written = analyze(encoder, index, args.output, args.data_dir, retrained)
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="RankEncoder's analyses: similar pairs, overlapping neighbours, "
        "rank-vector geometry, 2-D map (JSON + PNG)",
    )
    model_args(p)
    p.add_argument("--index", default=None, help="corpus index of --model")
    p.add_argument("--retrained", default=None, help="a re-trained RankEncoder folder (E2) to add to Table 5")
    figures_output_arg(p)
    data_dir_arg(p)
    p.set_defaults(func=cmd_analyze)
