"""``sentlab encode``: embed a text file into a .npy matrix."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentlab.cli.common import backend_args, embedding_cache, load, model_args
from sentlab.errors import DataError
from sentlab.progress import bars, say


def cmd_encode(args: argparse.Namespace) -> int:
    import numpy as np

    from sentlab.data.readers import read_sentences

    sentences = read_sentences(args.input)
    out = Path(args.output)
    if out.suffix != ".npy":
        raise DataError(f"{out}: output must end in .npy")
    model = load(args)
    say(f"encoding {len(sentences):,} sentences of {args.input}")
    embeddings = embedding_cache(args, model).encode(sentences, batch_size=args.batch_size, show_progress_bar=bars())
    if args.normalize:
        embeddings = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, np.asarray(embeddings, dtype=np.float32))
    print(f"{len(sentences)} embeddings of dimension {embeddings.shape[1]} written to {out}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="embed a text file (one sentence a line) into a .npy matrix")
    model_args(p)
    backend_args(p)
    p.add_argument("--input", required=True, help="UTF-8 text file, one sentence a line")
    p.add_argument("--output", required=True, help="the .npy file to write (float32, one row a sentence)")
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings")
    p.set_defaults(func=cmd_encode)
