"""``sentlab eval``: evaluate an encoder on task families and task cards."""

from __future__ import annotations

import argparse

from sentlab.cli.common import (
    backend_args,
    build_scorer,
    data_dir_arg,
    model_args,
    positive_int,
    rank_args,
    relation_args,
    stored_form_args,
)


def cmd_eval(args: argparse.Namespace) -> int:
    from sentlab.encoders.loading import finite_length
    from sentlab.evaluation.features import feature_function
    from sentlab.evaluation.suite import SuiteInputs, run_suite, suite_plan

    families, cards = suite_plan(args.tasks, args.task_card)
    encoder, cache, scorer = build_scorer(args, args.model)
    stored = getattr(scorer, "model", None)
    stored = stored if hasattr(stored, "stored_form") else None  # --dims / --embedding-precision
    source = stored or cache  # transfer's features too are the stored form
    features = feature_function(
        args.features,
        encoder,
        batch_size=args.batch_size,
        encode=lambda sentences: source.encode(list(sentences), batch_size=args.batch_size),
    )
    inputs = SuiteInputs(
        scorer,
        features,
        args.data_dir,
        kfold=args.kfold,
        pair_features=args.pair_features,
        n_jobs=args.jobs,
        device=encoder.device,
        items=args.items,
    )
    report = run_suite(inputs, families, cards)
    report.settings.update(
        {
            "pooler": args.pooler,
            "max_seq_length": finite_length(encoder),  # None: a static model's whole texts
            "backend": args.backend,
            "precision": args.precision,
        }
    )
    if stored is not None:
        report.settings.update(stored.stored_form())
    if "transfer" in families:
        report.settings.update({"features": args.features, "kfold": args.kfold, "pair_features": args.pair_features})
    if hasattr(scorer, "table"):
        report.settings.update(
            {"relation_weights": dict(zip(scorer.table.names, scorer.weights.tolist())), "direction": scorer.direction}
        )
    if hasattr(scorer, "lambda_inf"):
        report.settings.update(
            {"lambda_inf": scorer.lambda_inf, "index": str(args.index or args.model), "corpus_size": len(scorer.index)}
        )
    print(report.table())
    for card in cards:
        result = report.tasks[card.name]
        low_high = result.extra.get("ci95", {}).get(result.main_metric)
        if low_high:
            print(
                f"{card.name}: {result.main_metric} {result.main:.2f}, 95% CI [{low_high[0]:.2f}, {low_high[1]:.2f}] "
                f"(bootstrap over its {result.n} items)"
            )
    for task, reason in report.summary.get("skipped", {}).items():
        print(f"skipped {task}: {reason}")
    if args.output:
        report.write(args.output)
        print(f"results written to {args.output}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate an encoder")
    model_args(p)
    backend_args(p)
    rank_args(p)
    relation_args(p)
    stored_form_args(p)
    p.add_argument(
        "--tasks",
        default=None,
        help="comma-separated task families: sts, ranking, transfer, useb, "
        "evalrank, or all (tasks without data are skipped and listed); "
        "default sts, or none when --task-card is given",
    )
    p.add_argument(
        "--task-card",
        action="append",
        default=[],
        metavar="CARD.yaml",
        help="your own task declared as data: scored-pairs, labelled-pairs, retrieval (BEIR layout), "
        "reranking or classification; repeatable (see sentlab.evaluation.task_cards)",
    )
    p.add_argument("--output", default=None, help="write the results as JSON here")
    p.add_argument(
        "--items",
        action="store_true",
        help="keep in --output what each sts / ranking / useb headline is computed from (scored pairs, "
        "per-query values), for intervals and paired comparisons in sentlab report",
    )
    p.add_argument(
        "--features",
        default="sentence",
        help="transfer-task features: sentence (the embedding) or "
        "cls-lastK, e.g. cls-last5 (RSE: mean [CLS] of the last 5 "
        "layers)",
    )
    p.add_argument("--kfold", type=positive_int, default=10, help="transfer-task folds (SentEval; papers use 10)")
    p.add_argument(
        "--pair-features",
        choices=("senteval", "full"),
        default="senteval",
        help="MRPC features: senteval = [|u-v|, u*v] (SentEval's mrpc.py), full = [u, v, |u-v|, u*v]",
    )
    p.add_argument("--jobs", type=int, default=None, help="parallel classifier fits (joblib; -1 = all cores)")
    data_dir_arg(p)
    p.set_defaults(func=cmd_eval)
