"""``sentlab content-words``: tSDAE Sec. 7.2: the most relevant word of relevant pairs."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentlab.cli.common import (
    data_dir_arg,
    embedding_cache,
    load,
    model_args,
    positive_int,
    setting_label,
)
from sentlab.progress import say


def cmd_content_words(args: argparse.Namespace) -> int:
    """TSDAE Sec. 7.2: the most relevant word of each relevant pair (+ POS distribution if a tagger is installed)."""
    import json

    from sentlab.evaluation.content_words import (
        content_words_report,
        plot_content_words,
    )
    from sentlab.evaluation.dev_tasks import relevant_pairs

    encoder = load(args)
    pairs = relevant_pairs(args.pairs, args.data_dir, args.limit)
    say(f"{len(pairs):,} relevant pairs of {args.pairs}")
    report = content_words_report(embedding_cache(args, encoder).encode, pairs, args.model + setting_label(args))
    report["pairs_from"] = args.pairs
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "content_words.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    plot_content_words(report, out / "content_words.png")
    say(report["pos_note"])
    print(f"written {out / 'content_words.json'} (+ .png)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "content-words",
        help="TSDAE Sec. 7.2: which word of a relevant pair matters most "
        "(JSON + PNG; POS distribution when spaCy is installed)",
    )
    model_args(p)
    p.add_argument(
        "--pairs",
        default="twitterpara",
        help="relevant pairs: twitterpara, sts-b (dev, score >= 4) or cqadupstack:<forum>",
    )
    p.add_argument("--limit", type=positive_int, default=2000, help="a seeded sample of this many pairs")
    p.add_argument("--output", required=True, help="folder for content_words.json and .png")
    data_dir_arg(p)
    p.set_defaults(func=cmd_content_words)
