"""The ``sentlab`` command: train, eval, encode, similarity, data.

Errors a user can fix are printed as one line (``sentlab: error: ...``) with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sentlab.errors import DataError, SentlabError

TASK_FAMILIES = ("sts",)


def _quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def _model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="alias (minilm), local folder, or hub name")
    parser.add_argument("--pooler", default=None, help="override the pooler: cls, cls_before_pooler, mean, "
                                                        "first_last_avg, prompt")
    parser.add_argument("--max-seq-length", type=int, default=None, help="default: the model's own")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: best available)")


def _load(args: argparse.Namespace):
    from sentlab.encoders import load_encoder

    return load_encoder(args.model, pooler=args.pooler, max_seq_length=args.max_seq_length, device=args.device)


def cmd_train(args: argparse.Namespace) -> int:
    from sentlab.training.config import load_config
    from sentlab.training.engine import train

    cfg = load_config(args.config, args.set)
    paths = train(cfg, resume=args.resume, evaluate=not args.no_eval)
    print(f"model saved to {paths.model}")
    if paths.results.is_file():
        from sentlab.evaluation.results import EvalReport
        import json

        print(EvalReport.from_dict(json.loads(paths.results.read_text("utf-8"))).table())
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from sentlab.evaluation import CosineScorer, evaluate_sts

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASK_FAMILIES]
    if unknown:
        raise SentlabError(f"unknown task family {unknown[0]!r} (available: {', '.join(TASK_FAMILIES)})")
    model = _load(args)
    scorer = CosineScorer(model, batch_size=args.batch_size, name=args.model)
    report = evaluate_sts(scorer, args.data_dir)
    report.settings.update({"pooler": args.pooler, "max_seq_length": model.max_seq_length,
                            "data_dir": str(args.data_dir or "")})
    print(report.table())
    if args.output:
        report.write(args.output)
        print(f"results written to {args.output}")
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    import numpy as np

    from sentlab.data.readers import read_sentences

    sentences = read_sentences(args.input)
    model = _load(args)
    embeddings = model.encode(sentences, batch_size=args.batch_size, convert_to_numpy=True,
                              normalize_embeddings=args.normalize, show_progress_bar=not args.quiet)
    out = Path(args.output)
    if out.suffix != ".npy":
        raise DataError(f"{out}: output must end in .npy")
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, np.asarray(embeddings, dtype=np.float32))
    print(f"{len(sentences)} embeddings of dimension {embeddings.shape[1]} written to {out}")
    return 0


def cmd_similarity(args: argparse.Namespace) -> int:
    from sentlab.evaluation.scoring import CosineScorer

    for i, sentence in enumerate((args.sentence1, args.sentence2), start=1):
        if not sentence.strip():
            raise DataError(f"sentence {i} is empty")
    model = _load(args)
    score = CosineScorer(model).score([args.sentence1], [args.sentence2])[0]
    print(f"{score:.4f}")
    return 0


def cmd_data_download(args: argparse.Namespace) -> int:
    from sentlab.data.hub import download_sts

    written = download_sts(args.target)
    for name, count in written.items():
        print(f"{name}: {count} pairs")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sentlab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train an encoder from a YAML config")
    p.add_argument("config")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.learning_rate=1e-5 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of the run")
    p.add_argument("--no-eval", action="store_true", help="skip the final STS evaluation")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("eval", help="evaluate an encoder")
    _model_args(p)
    p.add_argument("--tasks", default="sts", help=f"comma-separated task families ({', '.join(TASK_FAMILIES)})")
    p.add_argument("--output", default=None, help="write the results as JSON here")
    p.add_argument("--data-dir", default=None, help="default: $SENTLAB_DATA or ../shared/data")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("encode", help="embed a text file (one sentence a line) into a .npy matrix")
    _model_args(p)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser("similarity", help="cosine similarity of two sentences")
    _model_args(p)
    p.add_argument("sentence1")
    p.add_argument("sentence2")
    p.set_defaults(func=cmd_similarity)

    p = sub.add_parser("data", help="data utilities")
    data_sub = p.add_subparsers(dest="data_command", required=True)
    d = data_sub.add_parser("download", help="fetch the STS sets from the datasets hub (needs internet)")
    d.add_argument("--target", required=True, help="folder to write the SentEval layout into")
    d.set_defaults(func=cmd_data_download)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_libraries()
    try:
        return args.func(args)
    except SentlabError as err:
        print(f"sentlab: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("sentlab: interrupted (resume a training run with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
