"""``sentlab plot``: figures with the numbers behind them."""

from __future__ import annotations

import argparse

from sentlab.cli.common import data_dir_arg, figures_output_arg
from sentlab.errors import DataError


def cmd_plot_alignment_uniformity(args: argparse.Namespace) -> int:
    from sentlab.reporting.plots import (
        alignment_uniformity_points,
        plot_alignment_uniformity,
    )

    path = plot_alignment_uniformity(alignment_uniformity_points(args.results), args.output)
    print(f"written {path} (+ .json)")
    return 0


def cmd_plot_cosine_buckets(args: argparse.Namespace) -> int:
    from sentlab.encoders import load_encoder
    from sentlab.evaluation.scoring import CosineScorer
    from sentlab.reporting.plots import cosine_by_gold_bucket, plot_cosine_buckets

    distributions = [
        cosine_by_gold_bucket(CosineScorer(load_encoder(name, device=args.device), name=name), args.data_dir)
        for name in args.model
    ]
    path = plot_cosine_buckets(distributions, args.output)
    print(f"written {path} (+ .json)")
    return 0


def cmd_plot_relations(args: argparse.Namespace) -> int:
    from sentlab.evaluation.relational import RelationTable
    from sentlab.reporting.plots import plot_relation_similarity

    if not RelationTable.is_saved_in(args.model):
        raise DataError(f"{args.model}: not an RSE model folder (no rse_relations.json)")
    table = RelationTable.load(args.model)
    similarity = table.similarity()
    width = max(len(n) for n in table.names)
    print(" " * width + "  " + " ".join(f"{n[:8]:>8}" for n in table.names))
    for name, row in zip(table.names, similarity):
        print(f"{name:<{width}}  " + " ".join(f"{v:8.3f}" for v in row))
    path = plot_relation_similarity(table.names, similarity, args.output, title=f"{args.model}: relation vectors")
    print(f"written {path} (+ .json)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="figures with the numbers behind them (PNG + JSON)")
    plot_sub = p.add_subparsers(dest="plot_command", required=True)
    f = plot_sub.add_parser("alignment-uniformity", help="RankCSE Fig. 3: models on the alignment-uniformity plane")
    f.add_argument("results", nargs="+", help="results files of `sentlab eval --tasks sts --output`")
    figures_output_arg(f)
    f.set_defaults(func=cmd_plot_alignment_uniformity)
    f = plot_sub.add_parser("relations", help="RSE Fig. 4: cosine similarity between an RSE model's relation vectors")
    f.add_argument("--model", required=True, help="an RSE model folder")
    figures_output_arg(f)
    f.set_defaults(func=cmd_plot_relations)
    f = plot_sub.add_parser("cosine-buckets", help="RankCSE Fig. 4: cosine per gold-score bucket, STS-B dev")
    f.add_argument("--model", action="append", required=True, help="repeat for several models")
    f.add_argument("--device", default=None)
    figures_output_arg(f)
    data_dir_arg(f)
    f.set_defaults(func=cmd_plot_cosine_buckets)
