"""sentlab: learn sentence embeddings with little or no labelled data, and measure them honestly.

Commands: presets, train, pipeline, eval, compare, encode, distill-static, similarity, index, analyze, content-words, corpus-size, plot,
report, cache, data, mine, push. Errors a user can fix (bad input, bad options) are printed as one line,
``sentlab: error: ...``, with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sentlab.cli import (
    adapt,
    analyze,
    cache,
    compare,
    content_words,
    corpus_size,
    data,
    distill_static,
    encode,
    index,
    link_prediction,
    merge_adapter,
    mine,
    pipeline,
    plot,
    presets,
    push,
    report,
    similarity,
    train,
)
from sentlab.cli import eval as eval_command
from sentlab.cli.common import Parser, joined_seeds, quiet_libraries
from sentlab.errors import SentlabError
from sentlab.progress import say, set_quiet

COMMANDS = (
    presets,
    train,
    pipeline,
    eval_command,
    adapt,
    compare,
    encode,
    distill_static,
    merge_adapter,
    similarity,
    link_prediction,
    index,
    analyze,
    content_words,
    corpus_size,
    plot,
    report,
    cache,
    data,
    mine,
    push,
)


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        sentlab_version = version("sentlab")
    except PackageNotFoundError:
        sentlab_version = "unknown"
    parser = Parser(prog="sentlab", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"sentlab {sentlab_version}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(joined_seeds(list(sys.argv[1:] if argv is None else argv)))
    set_quiet(getattr(args, "quiet", False))
    if getattr(args, "quiet", False):  # read by tqdm when first imported: also the libraries' own bars
        os.environ.setdefault("TQDM_DISABLE", "1")
    say(f"sentlab {args.command}: loading libraries")
    quiet_libraries()
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except SentlabError as err:
        print(f"sentlab: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("sentlab: interrupted (resume a training run with --resume)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sentlab presets | head`: the reader stopped; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
