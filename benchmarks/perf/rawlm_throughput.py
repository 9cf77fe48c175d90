"""Raw-LM pre-training speed on this machine: the fp32 matmul peak, then MLM training steps of a
randomly initialised BERT (``model.random_init``) on the shared Wikipedia sentences, in useful tokens
per second (non-padding tokens) and useful FLOP/s as a share of that peak. Prints one JSON object.

Feeds: records rawlm-throughput-bert-vocab, rawlm-throughput-packed,
rawlm-throughput-packed-compiled, rawlm-throughput-sentences; pages docs/methods/rawlm.md,
docs/results.md.

    python -m benchmarks.perf.rawlm_throughput --layers 4 --hidden 256 --vocab minilm --batch 64 --steps 20
    python -m benchmarks.perf.rawlm_throughput --vocab 8192 ...       # a WordPiece vocabulary of 8,192 trained on the text
    python -m benchmarks.perf.rawlm_throughput --vocab 8192 --pack --batch 32 ...   # mlm.pack's full-length blocks
    ... --compile --fused                                        # train.compile, fused AdamW

Without ``--pack`` a batch is ``--batch`` sentences of similar length (``mlm.group_by_length``), padded
to its longest; with it, ``--batch`` blocks of ``--max-length`` tokens packed by
``sentlab.data.packing.pack_blocks`` (``mlm.pack``): every position a real token. The device is the
one sentlab trains on (``sentlab.devices.training_device``); the peak is measured on it in float32
(``--precision bf16``: bf16 autocast and a bf16 peak).

Useful FLOPs of one training token (forward + backward = 3 x forward, multiply-adds counted as 2):
6 x (the encoder's non-embedding weights) + 6 x 2 x layers x length x hidden (attention scores and
mixing) + 0.15 x 6 x (hidden^2 + hidden x vocabulary) (the head, run at the masked positions only).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, dtype: torch.dtype, size: int = 2048, repeats: int = 10) -> float:
    """Best GFLOP/s of a size x size matmul in ``dtype`` on ``device`` over ``repeats`` runs (after a warm-up)."""
    if device.type == "cuda":
        size = 8192  # a card needs a large product to reach its rate
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    torch.mm(a, b)
    synchronize(device)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        synchronize(device)
        best = max(best, 2 * size**3 / (time.perf_counter() - start) / 1e9)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", default="minilm", help="minilm (30,522 WordPiece) or a size to train")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=20000, help="read this many Wikipedia sentences")
    parser.add_argument("--pack", action="store_true", help="full-length blocks (mlm.pack) instead of sentences")
    parser.add_argument("--compile", action="store_true", help="torch.compile the networks (train.compile)")
    parser.add_argument("--fused", action="store_true", help="fused AdamW")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps (default 2, 4 with --compile)")
    args = parser.parse_args()
    warmup = args.warmup if args.warmup is not None else (4 if args.compile else 2)
    from datasets import Dataset

    from sentlab.data.packing import BlockCollator, pack_blocks
    from sentlab.data.readers import read_sentences
    from sentlab.devices import training_device
    from sentlab.encoders import build_encoder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.encoders.random_init import RandomInit, build_random_masked_lm
    from sentlab.methods.mlm import MLMLoss
    from sentlab.paths import data_dir
    from sentlab.training.runtime import compiled_graphs, networks_compiled

    pin_float32_math()
    device = training_device()
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    peak = matmul_peak(device, dtype)
    texts = read_sentences(data_dir() / "wikipedia" / "wiki_sentences.txt", limit=args.sentences)
    trained = args.vocab != "minilm"
    spec = RandomInit(
        layers=args.layers,
        hidden_size=args.hidden,
        heads=args.heads,
        intermediate_size=4 * args.hidden,
        max_positions=max(128, args.max_length),
        tokenizer="train" if trained else "minilm",
        vocab_size=int(args.vocab) if trained else 8192,
    )
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        path = build_random_masked_lm(spec, Path(folder) / "lm", texts if trained else None, "bench")
        build_seconds = time.perf_counter() - started
        model = build_encoder(str(path), "mean", max_seq_length=args.max_length)
    model.to(device)
    loss = MLMLoss(model).train()
    optimizer = torch.optim.AdamW([p for p in loss.parameters() if p.requires_grad], lr=1e-4, fused=args.fused)
    vocabulary = len(model.tokenizer)
    if args.pack:
        blocks = pack_blocks(Dataset.from_dict({"sentence": texts}), model.tokenizer, args.max_length)["input_ids"]
        collate = BlockCollator()
        batches = [
            {
                k.removeprefix("sentence_"): v
                for k, v in collate([{"input_ids": b} for b in blocks[start : start + args.batch]]).items()
            }
            for start in range(0, len(blocks) - args.batch + 1, args.batch)
        ]
    else:  # batches of similar length (sorted in chunks), as a length-grouped sampler gives them
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [
            {
                k: v
                for k, v in model.tokenize([texts[i] for i in order[start : start + args.batch]]).items()
                if isinstance(v, torch.Tensor)
            }
            for start in range(0, len(order), args.batch)
        ]
    step_batches = [batches[(j * 7919) % len(batches)] for j in range(args.steps + warmup)]
    tokens, seconds = 0, 0.0
    graphs = compiled_graphs()
    with networks_compiled(loss, args.compile) as compiled:
        for j, batch in enumerate(step_batches):
            features = {k: v.to(device) for k, v in batch.items()}
            synchronize(device)
            start = time.perf_counter()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
                value = loss([features])
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            synchronize(device)
            if j >= warmup:
                seconds += time.perf_counter() - start
                tokens += int(features["attention_mask"].sum())
    length = tokens / (args.steps * args.batch)
    body = sum(p.numel() for n, p in model[0].auto_model.named_parameters() if "embeddings" not in n)
    per_token = (
        6 * body + 6 * 2 * args.layers * length * args.hidden + 0.15 * 6 * (args.hidden**2 + args.hidden * vocabulary)
    )
    useful = tokens / seconds * per_token / 1e9
    print(
        json.dumps(
            {
                "device": torch.cuda.get_device_name(device) if device.type == "cuda" else device.type,
                "threads": torch.get_num_threads(),
                "precision": args.precision,
                "matmul_peak_gflops": round(peak, 1),
                "packed": args.pack,
                "compiled": compiled,
                "compiled_graphs": compiled_graphs() - graphs,
                "fused_adamw": args.fused,
                "layers": args.layers,
                "hidden": args.hidden,
                "vocabulary": vocabulary,
                "batch": args.batch,
                "mean_tokens_per_row": round(length, 1),
                "steps": args.steps,
                "useful_tokens_per_s": round(tokens / seconds, 1),
                "useful_gflops": round(useful, 2),
                "share_of_peak": round(useful / peak, 3),
                "tokenizer_build_s": round(build_seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
