"""``sentlab distill-static``: a static student of any encoder, optionally trained on your text against it
(:mod:`sentlab.encoders.static`)."""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from sentlab.cli.common import device, non_negative_int, positive_int, quiet_arg, trust_remote_code_arg

RECORD = "distill.json"


def cmd_distill_static(args: argparse.Namespace) -> int:
    from sentlab.encoders.static import require_static_extra

    require_static_extra()  # before anything loads: the extra's absence is one line
    import model2vec
    import tokenlearn.version
    from sentence_transformers.sentence_transformer.modules import Normalize

    from sentlab.cache import file_sha256
    from sentlab.data.readers import read_sentences
    from sentlab.encoders.loading import load_encoder
    from sentlab.encoders.static import corpus_vocabulary, distill, save_student, train_on_corpus
    from sentlab.errors import ConfigError
    from sentlab.paths import json_text, write_text_atomic
    from sentlab.progress import say
    from sentlab.rank.index import encoder_fingerprint

    if (args.vocabulary_size or args.train) and not args.corpus:
        raise ConfigError("--vocabulary-size and --train read your text: give --corpus FILE")
    if args.corpus and not (args.vocabulary_size or args.train):
        raise ConfigError("--corpus is read by --vocabulary-size and --train; give one of them, or leave --corpus out")
    if args.sentences is not None and not args.corpus:
        raise ConfigError("--sentences N reads the first N sentences of --corpus; give --corpus")
    if args.seed is not None and not args.train:
        raise ConfigError("--seed draws --train's PCA and batch order; distillation alone draws nothing")
    from typing import get_args

    from sentlab.methods.base import TeacherSetting

    setting = f"{args.label_backend} {args.label_precision}"
    labelled = setting != "torch fp32"
    if setting not in get_args(TeacherSetting):
        raise ConfigError(
            f"--label-backend {args.label_backend} --label-precision {args.label_precision}: not a setting a teacher "
            f"labels in; choose one of {', '.join(get_args(TeacherSetting))}"
        )
    if args.no_cache and not args.train:
        raise ConfigError("--no-cache keeps --train's labels out of the embedding cache; give --train, or leave it out")
    if labelled and not args.train:
        raise ConfigError(
            "--label-backend / --label-precision choose the runtime the teacher labels --train's sentences in; "
            "give --train, or leave them out"
        )
    if args.data_dir is not None and args.label_precision != "int8-static":
        raise ConfigError(
            "--data-dir holds the Wikipedia sentences --label-precision int8-static calibrates on; give that "
            "precision, or leave --data-dir out"
        )
    if args.corpus and not Path(args.corpus).is_file():
        raise ConfigError(f"{args.corpus}: file not found")
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise ConfigError(f"{output}: exists and is not a folder; give a folder for the student")
    seed = 42 if args.seed is None else args.seed
    started = time.perf_counter()
    teacher = load_encoder(args.model, device=args.device, trust_remote_code=args.trust_remote_code).eval()
    width = teacher.get_embedding_dimension()
    if args.pca_dims > width:
        raise ConfigError(
            f"--pca-dims {args.pca_dims}: the teacher's embeddings have {width} dimensions; give {width} or fewer"
        )
    asked = {
        "teacher": args.model,
        "teacher_fingerprint": encoder_fingerprint(teacher),  # its weights: a retrained folder is another teacher
        "corpus": str(args.corpus) if args.corpus else None,
        "corpus_sha256": file_sha256(Path(args.corpus)) if args.corpus else None,
        "sentences": args.sentences,
        "vocabulary_size": args.vocabulary_size,
        "pca_dims": args.pca_dims,
        "train": args.train,
        "seed": seed if args.train else None,
        "trust_remote_code": args.trust_remote_code,
        **({"labels": setting} if labelled else {}),  # torch fp32, as students were labelled before the choice
    }
    record_path = output / RECORD
    if record_path.is_file():
        done = json.loads(record_path.read_text("utf-8"))
        if done.get("asked") != asked:
            raise ConfigError(f"{output} holds a student distilled otherwise ({record_path}); give another --output")
        print(f"{output}: already distilled ({done['tokens']:,} tokens x {done['dims']} dimensions); nothing to do")
        return 0
    if output.exists() and any(output.iterdir()):
        raise ConfigError(f"{output}: exists and holds no finished student; give an empty or new --output")
    texts = read_sentences(args.corpus, limit=args.sentences) if args.corpus else []
    timings: dict[str, float] = {}
    vocabulary = corpus_vocabulary(texts, args.vocabulary_size) if args.vocabulary_size else []
    say(f"distilling {args.model} with model2vec {model2vec.__version__} ({len(vocabulary):,} corpus words offered)")
    student = distill(teacher, vocabulary, args.pca_dims)
    timings["distill_seconds"] = round(time.perf_counter() - started, 1)
    if args.train:
        started = time.perf_counter()
        targets, labelling = teacher_labels(teacher, texts, args)
        timings["teacher_seconds"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        say(f"training the student toward them with tokenlearn {tokenlearn.version.__version__}")
        student = train_on_corpus(student, texts, targets, args.pca_dims, str(teacher.device), seed)
        timings["train_seconds"] = round(time.perf_counter() - started, 1)
    normalize = any(isinstance(module, Normalize) for module in teacher)
    partial = output.with_name(output.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # a half-written student of a killed run is rebuilt
    save_student(student, partial, normalize)
    tokens, dims = student.embedding.shape
    record = {
        "asked": asked,
        "tokens": int(tokens),
        "dims": int(dims),
        "corpus_words_offered": len(vocabulary),
        "sentences_trained": len(texts) if args.train else 0,
        **({"labels": labelling} if args.train else {}),
        "normalize": normalize,
        "device": str(teacher.device),
        "model2vec": model2vec.__version__,
        "tokenlearn": tokenlearn.version.__version__,
        **timings,
    }
    write_text_atomic(partial / RECORD, json_text(record, indent=2))
    if output.exists():
        output.rmdir()  # empty (checked above)
    partial.rename(output)  # whole or not at all: the record is in it
    trained = f", trained on {len(texts):,} sentences against the teacher" if args.train else ""
    print(
        f"static student of {args.model}: {tokens:,} tokens x {dims} dimensions{trained}; written to {output} "
        f"(sentence-transformers) and {output / 'model2vec'} (model2vec)"
    )
    return 0


def teacher_labels(teacher, texts: list[str], args: argparse.Namespace) -> tuple:
    """The teacher's embeddings of ``texts`` (tokenlearn's targets), in ``--label-backend`` /
    ``--label-precision`` (onnx / openvino: a copy of the teacher on the CPU,
    :func:`~sentlab.methods.base.load_teacher`), each distinct text encoded once through the embedding
    cache on disk (keyed by the teacher's weights, backend, precision and length and by the texts): a
    second seed, or another student of the same text, reads them. Returns the targets and what labelling
    ran and cost."""
    import numpy as np

    from sentlab.cache import EmbeddingStore
    from sentlab.encoders.backends import calibration_of, inference_setting
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.methods.base import load_teacher
    from sentlab.progress import say

    setting = f"{args.label_backend} {args.label_precision}"
    if setting != "torch fp32":
        teacher = load_teacher(args.model, setting, args.trust_remote_code, args.data_dir)
    store = None if args.no_cache else EmbeddingStore.default()
    cache = EmbeddingCache(teacher, max_rows=0, store=store, min_store_rows=1)
    say(f"the teacher labels {len(texts):,} sentences of {args.corpus} ({setting} on {teacher.device})")
    targets = np.asarray(cache.encode(texts, batch_size=args.batch_size), dtype=np.float32)
    labelling = {
        "backend": args.label_backend,
        "precision": args.label_precision,
        "ran": " ".join(inference_setting(teacher).values()),  # what ran, read back
        "device": str(teacher.device),
        "texts_encoded": cache.encoded,
        "from_cache": cache.encoded == 0,
    }
    if calibration_of(teacher):  # int8-static: the sentences its ranges came from (--data-dir's)
        labelling["calibration_sha256"] = calibration_of(teacher)
    return targets, labelling


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "distill-static",
        help="a static student (a vector per token, averaged) of any encoder, distilled with model2vec and "
        "optionally trained on your text against the teacher (tokenlearn); needs the static extra",
    )
    p.add_argument("--model", required=True, help="the teacher: alias (minilm), folder or hub name")
    p.add_argument("--output", required=True, help="the student's folder (sentence-transformers; model2vec/ inside)")
    p.add_argument("--corpus", help="your text, one sentence a line: its words join the vocabulary, --train reads it")
    p.add_argument(
        "--vocabulary-size",
        type=non_negative_int,
        default=0,
        help="offer the N most frequent words of --corpus to the vocabulary (those the tokenizer lacks are "
        "added whole; default 0: the tokenizer's own)",
    )
    p.add_argument(
        "--train",
        action="store_true",
        help="train the student on --corpus toward the teacher's embeddings of it (tokenlearn's recipe)",
    )
    p.add_argument("--sentences", type=positive_int, help="read the first N sentences of --corpus (default: all)")
    p.add_argument("--pca-dims", type=positive_int, default=256, help="the student's width (default 256)")
    p.add_argument("--seed", type=int, default=None, help="--train: the seed of its PCA and batch order (default 42)")
    p.add_argument("--batch-size", type=positive_int, default=128, help="the teacher's encode batch (default 128)")
    p.add_argument(
        "--label-backend",
        choices=("torch", "onnx", "openvino"),
        default="torch",
        help="--train: the runtime the teacher labels the sentences in (model2vec's token vectors are always "
        "torch's); onnx and openvino need their extras",
    )
    p.add_argument(
        "--label-precision",
        choices=("fp32", "int8", "int8-static"),
        default="fp32",
        help="--train: the labels' precision in --label-backend (int8: onnx or openvino; int8-static: openvino); "
        "check first that it keeps your teacher's embeddings (the distillation guide: the teacher's setting)",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="--label-precision int8-static: the data folder whose Wikipedia sentences calibrate it "
        "(default: $SENTLAB_DATA or ../shared/data)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="--train: do not read or write the teacher's labels in the embedding cache",
    )
    p.add_argument("--device", type=device, default=None, help="cpu, cuda, cuda:1, mps (default: best available)")
    trust_remote_code_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_distill_static)
