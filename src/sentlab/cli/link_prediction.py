"""``sentlab link-prediction``: rSE App. B: link prediction on held-out triples."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentlab.cli.common import (
    backend_args,
    data_dir_arg,
    embedding_cache,
    load,
    model_args,
    positive_int,
)
from sentlab.progress import say


def cmd_link_prediction(args: argparse.Namespace) -> int:

    from sentlab.data.relations import relation_counts
    from sentlab.evaluation.link_prediction import link_prediction
    from sentlab.evaluation.relational import RelationTable
    from sentlab.methods.rse import read_sources_file

    triples = read_sources_file(args.sources, args.cap, args.seed, args.data_dir)
    say("held-out triples: " + ", ".join(f"{k} {v:,}" for k, v in relation_counts(triples).items()))
    encoder = load(args)
    cache = embedding_cache(args, encoder)
    dimension = encoder.get_embedding_dimension()
    if RelationTable.is_saved_in(args.model) and not args.zero_relations:
        table, label = RelationTable.load(args.model, dimension), "RSE relation vectors"
    else:
        table = RelationTable.zeros(list(dict.fromkeys(t.relation for t in triples)), dimension)
        label = "relation vectors 0 (plain cosine)"
    result = link_prediction(
        lambda texts: cache.encode(list(texts), batch_size=args.batch_size), table, triples, candidates=args.candidates
    )
    print(f"{args.model}: {label}; candidates: {args.candidates}, filtered")
    print(f"{'relation':<20} {'n':>6} {'MR':>8} {'MRR':>6} {'H@1':>6} {'H@3':>6} {'H@10':>6}")
    for name, m in result.items():
        print(
            f"{name:<20} {m['n']:>6} {m['mr']:>8.1f} {m['mrr']:>6.3f} {m['hits@1']:>6.3f} {m['hits@3']:>6.3f} "
            f"{m['hits@10']:>6.3f}"
        )
    if args.output:
        from sentlab.paths import json_text, write_text_atomic

        out = Path(args.output)
        payload = {
            "model": args.model,
            "scoring": label,
            "candidates": args.candidates,
            "filtered": True,
            "cap": args.cap,
            "seed": args.seed,
            "sources": str(args.sources),
            "metrics": result,
        }
        write_text_atomic(out, json_text(payload, indent=1))  # a killed run leaves no half-written file
        print(f"results written to {out}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "link-prediction",
        help="RSE App. B: rank each held-out triple's tail given head + relation (MR, MRR, Hits@1/3/10 per relation)",
    )
    model_args(p)
    backend_args(p)
    p.add_argument(
        "--sources",
        required=True,
        help="YAML with 'sources:', a list of {relation, path, format, ...} "
        "as in rse.sources, or a packaged one by name (link-prediction/rse-heldout)",
    )
    p.add_argument(
        "--cap",
        type=positive_int,
        default=2000,
        help="a seeded random sample of at most N triples per source (default 2000, as App. B)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--candidates",
        choices=("split", "relation"),
        default="split",
        help="split = every tail of the held-out set (default), relation = the relation's tails",
    )
    p.add_argument("--zero-relations", action="store_true", help="score an RSE model with every relation vector 0")
    p.add_argument("--output", default=None, help="write the metrics as JSON here")
    data_dir_arg(p)
    p.set_defaults(func=cmd_link_prediction)
