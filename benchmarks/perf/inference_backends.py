"""Encode throughput per inference backend, against the machine's own compute limit.

Feeds: records inference-backends-minilm, inference-backends-mpnet; pages
docs/guides/distillation.md, docs/guides/inference.md, docs/results.md.

For each setting (torch fp32 through plain ``SentenceTransformer.encode`` — the reference — and
torch / onnx / openvino through sentlab's length-batched encoding), on the first N Wikipedia
sentences and on N CQADupStack titles (every k-th title of the 11 forums' pools, all forums):

* sentences/s and tokens/s (real tokens, as the tokenizer counts them, truncated at max length),
  and the ratio to the reference measured in the same run;
* the forward FLOPs those tokens need — per layer, 2·n·(4·d² + 2·d·d_ff) for the projections and
  feed-forward and 4·n²·d for attention (QKᵀ and AV), n a sentence's token count — divided by the
  time and by the peak float32 matmul throughput of this machine, measured in the same run
  (``torch.matmul`` on the model's own feed-forward shape and on 2048² squares, best of several),
  so "efficiency" is the fraction of the machine's fp32 matmul limit the setting reaches. int8
  settings compute in int8 and can exceed 1.0 against the fp32 limit;
* the cosine of each vector to the reference vector of the same text (min and mean).

Prints one JSON object on stdout.

    python -m benchmarks.perf.inference_backends [--sentences 20000] [--titles 10000] [--settings ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

import numpy as np
import torch

from sentlab.data.readers import read_sentences
from sentlab.data.useb import load_cqadupstack, task_folder
from sentlab.encoders import load_encoder
from sentlab.encoders.backends import accelerate
from sentlab.encoders.batching import encode_by_length, token_lengths
from sentlab.paths import data_dir
from sentlab.rank.index import encoder_fingerprint

SETTINGS = ("torch-fp32", "onnx-fp32", "onnx-int8", "openvino-fp32", "openvino-int8")


def peak_matmul_flops(shapes: list[tuple[int, int, int]], repeats: int = 5, seconds: float = 1.0) -> dict:
    """Best measured float32 FLOP/s of ``torch.matmul`` for each (m, k, n), and the best of all."""
    best = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        for _ in range(3):
            a @ b
        rates = []
        for _ in range(repeats):
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds / repeats:
                a @ b
                count += 1
            rates.append(2 * m * k * n * count / (time.perf_counter() - start))
        best[f"{m}x{k}x{n}"] = max(rates)
    return {"per_shape_flops": best, "peak_flops": max(best.values())}


def forward_flops(lengths: np.ndarray, config) -> float:
    d, d_ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    n = lengths.astype(np.float64)
    return float(layers * (2 * n.sum() * (4 * d * d + 2 * d * d_ff) + 4 * (n**2).sum() * d))


def cqadupstack_sample(count: int) -> list[str]:
    forums = load_cqadupstack(task_folder("CQADupStack"))
    titles = list(dict.fromkeys(t for forum in forums.values() for t in forum.corpus.values()))
    step = max(1, len(titles) // count)
    return titles[::step][:count]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--titles", type=int, default=10000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    args = parser.parse_args()
    os.environ["TQDM_DISABLE"] = "1"

    corpora = {"wikipedia": read_sentences(data_dir() / "wikipedia" / "wiki_sentences.txt", limit=args.sentences)}
    if args.titles:
        corpora["cqadupstack_titles"] = cqadupstack_sample(args.titles)
    reference_model = load_encoder(args.model)
    config = reference_model[0].auto_model.config
    fingerprint = encoder_fingerprint(reference_model)
    peak = peak_matmul_flops([(4096, config.hidden_size, config.intermediate_size), (2048, 2048, 2048)])

    results: dict = {
        "benchmark": "inference_backends",
        "model": args.model,
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        **peak,
        "corpora": {},
    }
    with tempfile.TemporaryDirectory() as cache:  # exports made here, not counted in any timing
        for corpus, texts in corpora.items():
            lengths = token_lengths(reference_model, texts)
            flops = forward_flops(lengths, config)
            rows: dict = {}
            start = time.perf_counter()
            reference = reference_model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
            base_seconds = time.perf_counter() - start
            rows["torch-fp32 (SentenceTransformer.encode)"] = {"seconds": base_seconds}
            for setting in args.settings:
                backend, precision = setting.split("-")
                model = load_encoder(args.model)
                accelerate(model, backend, precision, fingerprint=fingerprint, root=cache)
                encode_by_length(model, texts[:256], args.batch_size)  # warm-up (graph compilation, allocations)
                start = time.perf_counter()
                vectors = encode_by_length(model, texts, args.batch_size)
                seconds = time.perf_counter() - start
                cosine = (vectors * reference).sum(1) / (
                    np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
                )
                rows[f"{setting} (sentlab, batched by length)"] = {
                    "seconds": seconds,
                    "cosine_to_reference_min": float(cosine.min()),
                    "cosine_to_reference_mean": float(cosine.mean()),
                }
            for row in rows.values():
                row.update(
                    {
                        "sentences_per_s": len(texts) / row["seconds"],
                        "tokens_per_s": float(lengths.sum()) / row["seconds"],
                        "speedup_vs_reference": base_seconds / row["seconds"],
                        "achieved_flops": flops / row["seconds"],
                        "efficiency_vs_fp32_peak": flops / row["seconds"] / peak["peak_flops"],
                    }
                )
            results["corpora"][corpus] = {
                "texts": len(texts),
                "tokens": int(lengths.sum()),
                "mean_tokens": float(lengths.mean()),
                "forward_flops": flops,
                "settings": rows,
            }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
