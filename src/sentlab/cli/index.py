"""``sentlab index``: rankEncoder corpus indexes: build one, or pack an encoder with its index."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentlab.cli.common import (
    backend_args,
    comma_list,
    embedding_cache,
    index_of,
    load,
    model_args,
    positive_int,
    setting_label,
)
from sentlab.errors import DataError, SentlabError
from sentlab.progress import bars, say


def cmd_index_build(args: argparse.Namespace) -> int:
    from sentlab.data.tables import sentence_table, text_record
    from sentlab.rank.index import CorpusIndex

    output = Path(args.output)
    if output.exists() and any(output.iterdir()) and not args.overwrite:
        raise DataError(f"{output}: already exists and is not empty; pass --overwrite to replace it")
    sha256 = text_record(args.corpus, limit=args.limit)["sha256"]
    sentences = sentence_table(args.corpus, limit=args.limit)["sentence"]  # lazy: read a chunk at a time
    devices = args.devices
    if devices and len(devices) > 1 and args.backend != "torch":
        raise SentlabError("--devices shards torch models only; drop --devices or use --backend torch")
    model = load(args)
    say(f"encoding {len(sentences):,} corpus sentences of {args.corpus}")
    encode = None
    if not devices or len(devices) == 1:  # one device: through the embedding cache (reused by later runs)
        cache = embedding_cache(args, model)
        encode = lambda texts: cache.encode(texts, batch_size=args.batch_size, show_progress_bar=bars())  # noqa: E731
    index = CorpusIndex.build(
        model,
        sentences,
        args.model + setting_label(args),
        batch_size=args.batch_size,
        devices=devices,
        show_progress_bar=bars(),
        encode=encode,
        sha256=sha256,
    )
    index.extra.update({"corpus_file": str(args.corpus), "backend": args.backend, "precision": args.precision})
    index.save(args.output)
    print(f"index of {len(index)} sentences (dimension {index.dim}) written to {args.output}")
    return 0


def cmd_index_pack(args: argparse.Namespace) -> int:
    from sentlab.rank.model import RankEncoder

    encoder = load(args)
    index, _ = index_of(args, encoder)
    RankEncoder(encoder, index, args.lambda_inf).save(args.output)
    print(f"RankEncoder (lambda_inf {args.lambda_inf}) written to {args.output}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="RankEncoder corpus indexes")
    index_sub = p.add_subparsers(dest="index_command", required=True)
    i = index_sub.add_parser("build", help="encode a corpus once with a base encoder")
    model_args(i)
    backend_args(i)
    i.add_argument("--corpus", required=True, help="text file, one sentence a line")
    i.add_argument("--limit", type=positive_int, default=None, help="use the first N lines")
    i.add_argument("--output", required=True, help="index folder to write")
    i.add_argument(
        "--devices", type=comma_list(), default=None, help="shard encoding over these devices, e.g. cuda:0,cuda:1"
    )
    i.add_argument("--overwrite", action="store_true", help="replace an existing index folder")
    i.set_defaults(func=cmd_index_build)
    i = index_sub.add_parser("pack", help="save an encoder + its index + lambda_inf as one RankEncoder folder")
    model_args(i)
    i.add_argument("--index", required=True, help="the encoder's corpus index (sentlab index build)")
    i.add_argument(
        "--lambda-inf", type=float, default=0.1, help="Eq. 7 weight stored with the folder (default: 0.1, the paper's)"
    )
    i.add_argument("--output", required=True, help="the RankEncoder folder to write")
    i.set_defaults(func=cmd_index_pack)
