"""``sentlab similarity``: the similarity of two sentences under a model's scorer."""

from __future__ import annotations

import argparse

from sentlab.cli.common import (
    backend_args,
    build_scorer,
    model_args,
    rank_args,
    relation_args,
)
from sentlab.errors import DataError


def cmd_similarity(args: argparse.Namespace) -> int:
    for i, sentence in enumerate((args.sentence1, args.sentence2), start=1):
        if not sentence.strip():
            raise DataError(f"sentence {i} is empty")
    scorer = build_scorer(args, args.model)[2]
    if hasattr(scorer, "relation_scores"):  # RSE: every relation's score (Table 9), then the mix
        per_relation = scorer.relation_scores([args.sentence1], [args.sentence2])[0]
        width = max(len(n) for n in scorer.table.names)
        for relation, value in zip(scorer.table.names, per_relation):
            print(f"{relation:<{width}}  {value:.4f}")
        print(f"{'mix':<{width}}  {scorer.score([args.sentence1], [args.sentence2])[0]:.4f}  ({scorer.name})")
        return 0
    score = scorer.score([args.sentence1], [args.sentence2])[0]
    kind = "rank similarity" if hasattr(scorer, "lambda_inf") else "cosine similarity"
    print(f"{score:.4f}  {kind} of the two sentences ({scorer.name})")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "similarity",
        help="similarity of two sentences (cosine, Eq. 7 with an index, every relation's score for an RSE model)",
    )
    model_args(p)
    backend_args(p)
    rank_args(p)
    relation_args(p)
    p.add_argument("sentence1")
    p.add_argument("sentence2")
    p.set_defaults(func=cmd_similarity)
