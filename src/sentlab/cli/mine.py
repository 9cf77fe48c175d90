"""``sentlab mine``: hard negatives for (anchor, positive) pairs, written as triplets or n-tuples."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sentlab.cli.common import load, model_args, positive_int
from sentlab.paths import atomic_path, json_text, write_text_atomic


def _columns(text: str) -> list[str] | dict[str, str]:
    import yaml

    from sentlab.errors import ConfigError

    value = yaml.safe_load(text)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return value
    raise ConfigError(f"--columns {text!r}: give [anchor, positive] names or {{anchor: NAME, positive: NAME}}")


def _margin(text: str) -> float | None:
    """``--relative-margin``: a number, or ``none`` / ``off`` for no relative margin."""
    if text.strip().lower() in ("none", "off"):
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or none, got {text!r}") from None


def cmd_mine(args: argparse.Namespace) -> int:
    from sentlab.data.readers import read_sentences
    from sentlab.data.tables import column_table
    from sentlab.errors import DataError
    from sentlab.methods.base import column_roles
    from sentlab.mining import check_settings, mine
    from sentlab.progress import say

    out = Path(args.output)
    if out.suffix != ".jsonl":
        raise DataError(f"{out}: the rows are written as .jsonl")
    out.with_suffix(".report.json").unlink(missing_ok=True)  # an earlier run's report never vouches for this one
    check_settings(
        args.num_negatives,
        args.range_min,
        args.range_max,
        args.max_score,
        args.absolute_margin,
        args.relative_margin,
        args.cross_encoder is not None,
    )  # before the data and the model are read
    if args.seed is not None and args.sampling != "random":
        from sentlab.errors import ConfigError

        raise ConfigError(f"--seed {args.seed}: the top sampling draws nothing; give --sampling random with it")
    columns = column_roles(_columns(args.columns), ("anchor", "positive"), 2, "mining (pairs)")
    pairs = column_table(args.input, columns, ["anchor", "positive"])
    if len(pairs) == 0:
        raise DataError(f"{args.input}: no rows")
    corpus = read_sentences(args.corpus) if args.corpus else None
    model = load(args)
    reranker = None
    if args.cross_encoder:
        from sentlab.encoders.cross_encoder import load_cross_encoder

        say(f"loading the cross-encoder {args.cross_encoder}")
        reranker = load_cross_encoder(
            args.cross_encoder, str(model.device), args.trust_remote_code, what="--cross-encoder"
        )
    say(f"mining negatives for {len(pairs):,} pairs from {'the corpus' if corpus else 'their positives'}")
    triplets, report = mine(
        pairs,
        model,
        corpus=corpus,
        num_negatives=args.num_negatives,
        range_min=args.range_min,
        range_max=args.range_max,
        max_score=args.max_score,
        absolute_margin=args.absolute_margin,
        relative_margin=args.relative_margin,
        sampling=args.sampling,
        seed=args.seed or 0,
        use_faiss=args.faiss,
        batch_size=args.batch_size,
        query_prompt_name=args.query_prompt_name,
        corpus_prompt_name=args.corpus_prompt_name,
        query_prompt=args.query_prompt,
        corpus_prompt=args.corpus_prompt,
        output_format=args.format,
        cross_encoder=reranker,
        cross_encoder_name=args.cross_encoder,
    )
    with atomic_path(out) as partial, partial.open("w", encoding="utf-8") as f:
        for row in triplets:
            f.write(json.dumps({k: row[k] for k in triplets.column_names}, ensure_ascii=False) + "\n")
    report_path = out.with_suffix(".report.json")
    write_text_atomic(report_path, json_text(report.to_dict(), indent=1))  # written last: the run finished
    if args.format == "n-tuple":
        columns = ", ".join(triplets.column_names)
        print(
            f"{report.rows:,} rows ({columns}) for {report.pairs:,} pairs written to {out} "
            f"({report.pairs_short_of_negatives:,} pairs left out with fewer than {args.num_negatives} negatives, "
            f"{report.same_text_passed_over} candidates passed over as the same text as the anchor or a positive; "
            f"{report_path}); train on them with data.columns: [{columns}]"
            + (
                " and train.no_duplicates: true (an anchor with several positives has a row each)"
                if len(set(triplets["anchor"])) < len(triplets)
                else ""
            )
        )
        return 0
    print(
        f"{report.triplets:,} triplets for {report.pairs:,} pairs ({report.anchors_with_a_negative:,} distinct anchors "
        f"with a negative) written to "
        f"{out} ({report.same_text_passed_over} candidates passed over as the same text as the anchor or a "
        f"positive, {report.short_for_the_same_text} negatives short for it; {report_path})"
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mine",
        help="hard negatives for (anchor, positive) pairs (sentence-transformers' mine_hard_negatives), "
        "written as triplets the supervised method reads",
    )
    model_args(p)
    p.add_argument(
        "--input",
        required=True,
        help="the pairs: .tsv / .csv with a header, .jsonl, a datasets folder, an .arrow or .parquet file or hf:OWNER/NAME "
        "(its train split)",
    )
    p.add_argument(
        "--columns", default="[anchor, positive]", help="[ANCHOR, POSITIVE] names or {anchor: ..., positive: ...}"
    )
    p.add_argument("--corpus", default=None, help="a text file of candidates, one a line (default: the positives)")
    p.add_argument("--output", required=True, help="the rows, .jsonl (anchor, positive, negative[_1 ... _N])")
    p.add_argument(
        "--num-negatives", type=positive_int, default=1, help="negatives a pair (a triplet each, or n-tuple columns)"
    )
    p.add_argument(
        "--format",
        choices=("triplet", "n-tuple"),
        default="triplet",
        help="triplet: a row a negative (anchor, positive, negative); n-tuple: a row a pair (anchor, positive, "
        "negative_1 ... negative_N), pairs with fewer negatives left out",
    )
    p.add_argument("--range-min", type=int, default=0, help="skip this many of the most similar candidates")
    p.add_argument(
        "--range-max",
        type=positive_int,
        default=None,
        help="search the most similar N candidates (default: sentence-transformers' range_min + 10 x "
        "num_negatives + the most positives an anchor has, or + 1 x num_negatives without a margin or score cap)",
    )
    p.add_argument("--max-score", type=float, default=None, help="drop candidates scoring above this")
    p.add_argument("--absolute-margin", type=float, default=None, help="a negative scores below positive - margin")
    p.add_argument(
        "--relative-margin",
        type=_margin,
        default=0.05,
        help="a negative scores below (1 - margin) x positive (NV-Retriever's positive-aware mining; default "
        "0.05; none turns it off)",
    )
    p.add_argument(
        "--sampling", choices=("top", "random"), default="top", help="the hardest, or a random pick in range"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="with --sampling random: its seed (default 0, recorded in the report)"
    )
    p.add_argument(
        "--query-prompt-name",
        default=None,
        help="the model's prompt for the anchors, by name (default: its query prompt)",
    )
    p.add_argument(
        "--corpus-prompt-name",
        default=None,
        help="the model's prompt for the candidates, by name (default: its document / passage / corpus prompt)",
    )
    p.add_argument("--query-prompt", default=None, help="a text put before each anchor ('' for none)")
    p.add_argument("--corpus-prompt", default=None, help="a text put before each candidate ('' for none)")
    p.add_argument(
        "--cross-encoder",
        default=None,
        metavar="MODEL",
        help="rescore the candidates and positives with this cross-encoder: the margins and --max-score hold "
        "against its scores, and the hardest are taken in its order",
    )
    p.add_argument("--faiss", action="store_true", help="search with faiss (large corpora)")
    p.set_defaults(func=cmd_mine)
