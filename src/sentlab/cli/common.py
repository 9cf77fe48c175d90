"""What the commands share: one-line argument errors, the common options, loading a model with its
backend and scorer (cosine, RankEncoder's Eq. 7, RSE's relational score)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from sentlab.errors import SentlabError
from sentlab.progress import say


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``sentlab train: error: ... (see --help)``."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def model_args(parser: argparse.ArgumentParser, batch_size_help: str | None = None) -> None:
    """--model and what loads it; ``batch_size_help``: a command whose --batch-size default follows the model
    (None until the command resolves it) says so here."""
    parser.add_argument("--model", required=True, help="alias (minilm), local folder, or hub name")
    parser.add_argument(
        "--pooler",
        default=None,
        choices=("cls", "cls_before_pooler", "mean", "max", "first_last_avg", "prompt", "lasttoken"),
        help="override the model's pooler",
    )
    parser.add_argument(
        "--max-seq-length",
        type=positive_int,
        default=None,
        help="truncate inputs to N tokens (default: the model's own)",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=None if batch_size_help else 128,
        help=batch_size_help or "sentences encoded at a time (default: 128)",
    )
    parser.add_argument("--device", type=device, default=None, help="cpu, cuda, cuda:1, mps (default: best available)")
    trust_remote_code_arg(parser)
    quiet_arg(parser)


def trust_remote_code_arg(parser: argparse.ArgumentParser) -> None:
    """--trust-remote-code (``model.trust_remote_code``)."""
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the Python code the model's config names (auto_map); off, such a model is refused",
    )


def backend_args(parser: argparse.ArgumentParser, cache: bool = True) -> None:
    """--backend and --precision; --no-cache for a command that reads the embedding cache."""
    parser.add_argument(
        "--backend",
        choices=("torch", "onnx", "openvino"),
        default="torch",
        help="inference runtime: torch, onnx (onnxruntime; the onnx extra) or openvino (the openvino "
        "extra); the export is made once and cached",
    )
    parser.add_argument(
        "--precision",
        choices=("fp32", "tf32", "fp16", "bf16", "int8", "int8-static"),
        default="fp32",
        help="fp32 (IEEE float32 in every runtime and on every CPU); int8 (onnx / openvino: "
        "dynamic quantisation); int8-static (openvino: weights and activations quantized ahead, calibrated on "
        "300 Wikipedia sentences of the data folder); bf16 (torch, or openvino on a CPU with BF16); fp16 / tf32 "
        "(torch, GPUs)",
    )
    if cache:
        parser.add_argument(
            "--no-cache",
            action="store_true",
            help="do not read or write the embedding cache ($SENTLAB_CACHE, see `sentlab cache info`)",
        )


def comma_list(kind: Callable[[str], object] = str) -> Callable[[str], list]:
    """The one form a list of values takes on sentlab's command line: comma-separated (``--seeds
    42,43,44``, ``--devices cuda:0,cuda:1``); a flag that names files is repeated instead (``--task-card
    A --task-card B``), since a path may hold a comma. Each item is converted by ``kind``."""

    def parse(value: str) -> list:
        items = [item.strip() for item in value.split(",")]
        if not all(items):
            raise argparse.ArgumentTypeError(f"{value!r}: an empty item; give comma-separated values, e.g. 1,2,3")
        try:
            return [kind(item) for item in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r}: not a comma-separated list of {kind.__name__}") from None

    parse.__name__ = f"comma-separated {kind.__name__}"
    return parse


def seeds_arg(parser: argparse.ArgumentParser, default: list[int], help: str) -> None:
    """``--seeds 42,43,44`` (:func:`comma_list`): one value, so a positional after it stays one
    (:func:`joined_seeds` reads 0.2.0's space-separated form)."""
    parser.add_argument("--seeds", type=comma_list(int), default=default, metavar="SEEDS", help=help)


SEEDED_COMMANDS = ("adapt", "compare")  # the commands with --seeds (seeds_arg)


def joined_seeds(argv: list[str]) -> list[str]:
    """0.2.0's ``--seeds 42 43 44`` as ``--seeds 42,43,44``, with a one-line notice, until 0.3.0: in a
    command that has ``--seeds``, the integers (or comma lists of them) right after it are joined; no
    positional of those commands is a bare integer. Nothing after ``--`` is touched."""
    if not argv or argv[0] not in SEEDED_COMMANDS:
        return argv
    out, k = [], 0
    while k < len(argv):
        out.append(argv[k])
        if argv[k] == "--":
            return out + argv[k + 1 :]
        if argv[k] == "--seeds":
            end = k + 1
            while end < len(argv) and argv[end].replace(",", "").isdigit():
                end += 1
            if end - k > 2:
                joined = ",".join(argv[k + 1 : end])
                print(
                    f"sentlab: --seeds {' '.join(argv[k + 1 : end])}: space-separated seeds are deprecated; write "
                    f"--seeds {joined} (removed in sentlab 0.3.0)",
                    file=sys.stderr,
                )
                out.append(joined)
                k = end
                continue
        k += 1
    return out


def deprecated_flag(parser: argparse.ArgumentParser, flag: str, removed_in: str, why: str) -> None:
    """A flag a command no longer has, kept for one version: a script that passes it runs on, with a
    one-line notice on stderr saying what happened to it and when it goes (CHANGELOG.md lists it)."""

    class Notice(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            print(
                f"sentlab: {option_string} is deprecated and does nothing: {why}; it will be removed in sentlab "
                f"{removed_in}",
                file=sys.stderr,
            )

    parser.add_argument(flag, nargs=0, action=Notice, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def set_arg(parser: argparse.ArgumentParser, what: str = "a config value") -> None:
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override {what}, e.g. --set train.learning_rate=1e-5 (repeatable)",
    )


def allow_changed_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-changed-settings",
        action="store_true",
        help="resume a run under settings it did not start with (the old config is kept in the "
        "run folder as config.until-step-N.yaml)",
    )


def quiet_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress lines or bars (results only)")


def device(value: str) -> str:
    """A device torch has here; a CUDA / MPS name on a machine without one is refused at parse time."""
    import torch

    kind, _, number = value.partition(":")
    if kind == "cpu" and not number:
        return value
    available = {
        "cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "mps": int(torch.backends.mps.is_available()),
    }
    if kind not in available:
        raise argparse.ArgumentTypeError(f"unknown device {value!r} (cpu, cuda, cuda:N, mps)")
    if not available[kind]:
        raise argparse.ArgumentTypeError(
            f"device {value!r}: this torch has no {kind.upper()} device (torch {torch.__version__}); use --device cpu"
        )
    if number and (not number.isdigit() or int(number) >= available[kind]):
        raise argparse.ArgumentTypeError(f"device {value!r}: only {available[kind]} {kind} device(s)")
    return value


def data_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=None, help="default: $SENTLAB_DATA or ../shared/data")


def figures_output_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", required=True, help="folder for the JSON and PNG files")


def non_negative_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value}: give 0 or more")
    return number


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


def rank_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--index", default=None, help="corpus index of the model (sentlab index build): score with RankEncoder's Eq. 7"
    )
    parser.add_argument(
        "--lambda-inf",
        type=float,
        default=None,
        help="Eq. 7 weight of the rank similarity: 1 = rank vectors alone (Eq. 2), 0 = cosine "
        "(default: the RankEncoder folder's value, else 0.1 as in the paper)",
    )


def relation_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--relation",
        default=None,
        help="RSE model: score under this relation alone, or 'none' for "
        "the plain cosine (default: the folder's saved weights)",
    )
    parser.add_argument(
        "--relation-weights",
        default=None,
        metavar="NAME=W,...",
        help="RSE model: a weighted mix of relations, e.g. entailment=1,duplicate_question=0.5 "
        "(normalised to sum to 1)",
    )
    parser.add_argument(
        "--direction",
        choices=("forward", "max"),
        default="forward",
        help="RSE pair scores: forward = first sentence as the head (the paper), max = the larger "
        "of both directions (the released code's STS scoring); retrieval is always forward",
    )


def relational_scorer(args: argparse.Namespace, encoder, source, name: str):
    """A :class:`RelationalScorer` for an RSE model folder (None for the plain cosine), from
    ``--relation`` / ``--relation-weights`` / ``--direction``."""
    from sentlab.evaluation.relational import (
        RelationalScorer,
        RelationTable,
        parse_relation_weights,
    )

    relation, spec = getattr(args, "relation", None), getattr(args, "relation_weights", None)
    if relation is not None and spec is not None:
        raise SentlabError("give --relation or --relation-weights, not both")
    if relation == "none":
        return None
    if not RelationTable.is_saved_in(args.model):
        if relation is not None or spec is not None:
            raise SentlabError(
                f"--relation / --relation-weights need an RSE model folder; {args.model} has no rse_relations.json"
            )
        return None
    if getattr(args, "index", None) is not None:
        raise SentlabError(
            "--index (RankEncoder) and an RSE model's relational score do not combine; "
            "pass --relation none to score the encoder by cosine"
        )
    table = RelationTable.load(args.model, encoder.get_embedding_dimension())
    weights = {relation: 1.0} if relation is not None else parse_relation_weights(spec) if spec else None
    scorer = RelationalScorer(source, table, weights, direction=args.direction, batch_size=args.batch_size)
    mix = ", ".join(f"{n}={w:.3g}" for n, w in zip(table.names, scorer.weights) if w)
    scorer.name = f"{name} (RSE {mix}, {args.direction})"
    return scorer


def load(args: argparse.Namespace):
    from sentlab.encoders import load_encoder
    from sentlab.encoders.backends import (
        accelerate,
        check_backend,
        pin_float32_math,
        require_extra,
    )
    from sentlab.encoders.loading import is_static_model, start_kind_refusal
    from sentlab.errors import ModelLoadError

    backend, precision = getattr(args, "backend", "torch"), getattr(args, "precision", "fp32")
    device = args.device or (None if backend == "torch" else "cpu")  # onnx / openvino run on the CPU
    check_backend(backend, precision, device)
    if backend != "torch":  # before the load: a static model, whatever is installed, then a missing extra
        if is_static_model(args.model):
            raise ModelLoadError(f"--backend {backend}: {start_kind_refusal(args.model, 'backend')}")
        require_extra(backend)
    say(f"loading {args.model}")
    model = load_encoder(
        args.model,
        pooler=args.pooler,
        max_seq_length=args.max_seq_length,
        device=device,
        trust_remote_code=getattr(args, "trust_remote_code", False),
    )
    if (backend, precision) != ("torch", "fp32"):
        say(f"running the model with {backend} {precision}")
        calibration = None
        if precision == "int8-static":  # the command's data folder (--data-dir), not only $SENTLAB_DATA
            from sentlab.encoders.backends import calibration_sentences

            calibration = calibration_sentences(getattr(args, "data_dir", None))
        accelerate(model, backend, precision, calibration=calibration)
    else:
        pin_float32_math()  # fp32 means IEEE fp32: no TF32 on GPUs, no bf16 on CPUs with AMX / AVX-512 BF16
    return model


def embedding_cache(args: argparse.Namespace, encoder):
    """The in-process embedding cache, backed by the on-disk store unless --no-cache."""
    from sentlab.cache import EmbeddingStore
    from sentlab.evaluation.scoring import EmbeddingCache

    store = None if getattr(args, "no_cache", True) else EmbeddingStore.default()
    return EmbeddingCache(encoder, store=store)


def setting_label(args: argparse.Namespace) -> str:
    """`` [onnx int8]`` after the model's name when it does not run as torch fp32 (results say so)."""
    from sentlab.encoders.backends import label

    text = label(getattr(args, "backend", "torch"), getattr(args, "precision", "fp32"))
    return f" [{text}]" if text else ""


def index_of(args: argparse.Namespace, encoder):
    """(index, stored lambda_inf) for ``--index`` or a RankEncoder model folder, else (None, None);
    the index must have been built by ``encoder``."""
    from sentlab.rank.index import CorpusIndex
    from sentlab.rank.model import RankEncoder

    if getattr(args, "index", None) is not None:
        index = CorpusIndex.load(args.index)
        index.check_encoder(encoder)
        return index, None
    if RankEncoder.is_rankencoder(args.model):
        rank_encoder = RankEncoder.load(args.model, encoder=encoder)
        return rank_encoder.index, rank_encoder.lambda_inf
    return None, None


def stored_form_args(parser: argparse.ArgumentParser) -> None:
    """--dims, --embedding-precision and --calibration: score the embeddings as they would be stored."""
    from sentlab.quantize import PRECISIONS

    parser.add_argument(
        "--dims", type=positive_int, default=None, help="score the first K dimensions of each embedding, re-normalised"
    )
    parser.add_argument(
        "--embedding-precision",
        choices=PRECISIONS,
        default="float32",
        help="score the embeddings stored in this precision (sentence-transformers' quantize_embeddings): int8 / "
        "uint8 codes, binary / ubinary bits as +1 / -1 (cosine = 1 - 2 x Hamming / K)",
    )
    parser.add_argument(
        "--calibration",
        default=None,
        help="int8 / uint8: the text file (one sentence a line) whose seeded sample of 10,000 lines sets each "
        "dimension's range (default: the data folder's wikipedia/wiki_sentences.txt)",
    )


def stored_form(args: argparse.Namespace, cache):
    """The cache seen at ``--dims`` and ``--embedding-precision`` (QuantizedEmbeddings), or None."""
    precision = getattr(args, "embedding_precision", "float32")
    if getattr(args, "calibration", None) and not precision.endswith("int8"):
        raise SentlabError(
            f"--calibration sets int8's and uint8's ranges: not read with --embedding-precision {precision}"
        )
    if not stored_form_asked(args):
        return None
    if getattr(args, "features", "sentence") != "sentence":
        raise SentlabError(
            "--dims and --embedding-precision score the sentence embedding: not with --features " + args.features
        )
    from sentlab.evaluation.quantized import QuantizedEmbeddings, calibration_sample
    from sentlab.paths import data_dir

    calibration = None
    if precision.endswith("int8"):
        source = Path(args.calibration or data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt")
        if not source.is_file():
            raise SentlabError(
                f"--embedding-precision {precision}: no calibration text at {source} (--calibration FILE)"
            )
        calibration = calibration_sample(source)
    return QuantizedEmbeddings(cache, args.dims, precision, calibration)


def stored_form_asked(args: argparse.Namespace) -> bool:
    """Whether ``--dims`` or ``--embedding-precision`` asks for the embeddings as they would be stored."""
    return getattr(args, "dims", None) is not None or getattr(args, "embedding_precision", "float32") != "float32"


def build_scorer(args: argparse.Namespace, name: str):
    """(encoder, embedding cache, scorer): cosine, RSE's relational score for an RSE folder, or Eq. 7
    for a RankEncoder folder / an encoder with ``--index``; the scorer encodes through the cache."""
    from sentlab.evaluation.scoring import CosineScorer
    from sentlab.rank.model import DEFAULT_LAMBDA_INF, RankScorer

    encoder = load(args)
    name = name + setting_label(args)
    cache = embedding_cache(args, encoder)  # several task families share one encoding of each sentence
    relational = relational_scorer(args, encoder, cache, name)
    index, stored_lambda = (None, None) if relational is not None else index_of(args, encoder)
    if stored_form_asked(args) and (relational is not None or index is not None):
        raise SentlabError("--dims and --embedding-precision score cosines: not with a relational or rank scorer")
    stored = stored_form(args, cache)
    if relational is not None:
        return encoder, cache, relational
    if index is None:
        if args.lambda_inf is not None:
            raise SentlabError("--lambda-inf needs --index or a RankEncoder model folder")
        if stored is not None:
            name += f" ({stored.dims or 'all'} dims, {stored.precision})"
        return encoder, cache, CosineScorer(stored or cache, batch_size=args.batch_size, name=name)
    lambda_inf = next(v for v in (args.lambda_inf, stored_lambda, DEFAULT_LAMBDA_INF) if v is not None)
    label = "rank vectors, Eq. 2" if lambda_inf == 1 else f"Eq. 7, lambda_inf={lambda_inf:g}"
    return encoder, cache, RankScorer(cache, index, lambda_inf, batch_size=args.batch_size, name=f"{name} ({label})")


def train_overrides(args: argparse.Namespace) -> list[str]:
    """``--set`` values plus what ``--data-dir`` and ``--quiet`` mean for a training config."""
    overrides = list(args.set)
    if args.data_dir is not None:
        overrides.append(f"data.data_dir={args.data_dir}")
    if args.quiet:
        overrides.append("train.progress_bar=false")
    return overrides
