"""``sentlab encode``: embed a text file into a .npy matrix, in chunks, resumable, over one or
several processes (:mod:`sentlab.encoding`)."""

from __future__ import annotations

import argparse

from sentlab.cli.common import backend_args, comma_list, deprecated_flag, load, model_args, positive_int
from sentlab.quantize import PRECISIONS

DEFAULT_BATCH_SIZE = 128


def cmd_encode(args: argparse.Namespace) -> int:
    from sentlab.encoding import encode_file, writable_output
    from sentlab.errors import ConfigError

    devices = args.devices
    if devices and (args.backend != "torch" or args.precision == "tf32"):
        # the pool's processes are spawned: an exported model does not travel to them, and torch's
        # process-wide switches (TF32, fp32 pinning) are not theirs
        raise ConfigError(f"--devices runs torch in fp32, fp16 or bf16 only, not {args.backend} {args.precision}")
    writable_output(args.output)  # before the model loads: a folder it cannot write is one line, not a traceback
    if args.prompt is not None and args.prompt_name is not None:
        raise ConfigError("--prompt and --prompt-name: give one of the two")
    model = load(args)
    if args.batch_size is None:  # the default follows the model: a static one encodes fastest in large batches
        from sentlab.encoders.static import STATIC_BATCH_SIZE, is_static
        from sentlab.progress import say

        args.batch_size = STATIC_BATCH_SIZE if is_static(model) else DEFAULT_BATCH_SIZE
        if is_static(model):
            say(f"a static model: batches of {args.batch_size:,} sentences (--batch-size sets another)")
    prompt = args.prompt or ""
    if args.prompt_name is not None:
        from sentlab.encoders.prompts import role_prompt
        from sentlab.progress import say

        roles = {"query": role_prompt(model, "query"), "document": role_prompt(model, "document")}
        known = {**{k: v for k, v in model.prompts.items() if v}, **roles}  # a role without a prompt: none
        if args.prompt_name not in known:
            raise ConfigError(
                f"--prompt-name {args.prompt_name}: the model has no such prompt (its prompts: "
                f"{', '.join(k for k, v in known.items() if v) or 'none'}; query and document are always taken)"
            )
        prompt = known[args.prompt_name]
        say(
            f"--prompt-name {args.prompt_name}: "
            + (f"{prompt!r} before each sentence" if prompt else "the model has none")
        )
    if args.dims is not None:
        from sentlab.encoders.loading import resolve_model_path
        from sentlab.encoders.matryoshka import trained_dims
        from sentlab.progress import say

        trained = trained_dims(resolve_model_path(args.model))
        if trained is not None and args.dims not in trained:
            say(f"--dims {args.dims}: the model was trained with Matryoshka at {trained}, not at {args.dims}")
        elif trained is None:
            say(
                f"--dims {args.dims}: the model records no Matryoshka training; its first {args.dims} dimensions were not trained to stand alone"
            )
    record = encode_file(
        model,
        args.input,
        args.output,
        chunk_rows=args.chunk_rows,
        batch_size=args.batch_size,
        normalize=args.normalize,
        devices=devices,
        dims=args.dims,
        precision=args.embedding_precision,
        prompt=prompt,
    )
    plan = record["plan"]
    rate = f", {record['sentences_per_second']:,.0f} sentences/s" if record.get("sentences_per_second") else ""
    size = f"{plan['precision']}, {record.get('bytes_a_sentence', 4 * plan['dim'])} bytes a sentence"
    print(f"{plan['rows']} embeddings of dimension {plan['dim']} ({size}) written to {args.output}{rate}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "encode",
        help="embed a text file (one sentence a line) into a .npy matrix, in resumable chunks, on one or several "
        "processes",
    )
    model_args(p, f"sentences encoded at a time (default: {DEFAULT_BATCH_SIZE}; a static model: 4096)")
    backend_args(p, cache=False)  # no embedding cache: the output resumes itself
    deprecated_flag(
        p, "--no-cache", "0.3.0", "encode reads and writes no embedding cache since 0.2.0 (its output resumes itself)"
    )
    p.add_argument("--input", required=True, help="UTF-8 text file, one sentence a line")
    p.add_argument(
        "--output",
        required=True,
        help="the .npy file to write (one row a sentence; float32 unless --embedding-precision)",
    )
    p.add_argument(
        "--prompt-name",
        default=None,
        help="encode after the model's prompt of this name: query, document (its document, passage or corpus "
        "prompt; a model without one: none) or another it has (default: none, or the model's default prompt)",
    )
    p.add_argument("--prompt", default=None, help="a text put before each sentence")
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings")
    p.add_argument(
        "--dims",
        type=positive_int,
        default=None,
        help="keep the first K dimensions, re-normalised (a Matryoshka model's shorter embedding)",
    )
    p.add_argument(
        "--embedding-precision",
        choices=PRECISIONS,
        default="float32",
        help="how the output stores each embedding (sentence-transformers' quantize_embeddings): float32, float16, "
        "int8 / uint8 (each dimension's range from a seeded sample of 10,000 sentences, kept as OUT.ranges.npy), "
        "binary / ubinary (one bit a dimension, packed)",
    )
    p.add_argument(
        "--chunk-rows",
        type=positive_int,
        default=50_000,
        help="sentences encoded and written at a time; a killed run resumes after the last chunk written",
    )
    p.add_argument(
        "--devices",
        type=comma_list(),
        default=None,
        help="encode with sentence-transformers' multi-process pool, one process a device: cpu,cpu or "
        "cuda:0,cuda:1 (default: one process)",
    )
    p.set_defaults(func=cmd_encode)
