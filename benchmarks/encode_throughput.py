"""Sentences per second of `sentlab encode` against `SentenceTransformer.encode`.

Same model (the packaged MiniLM), same sentences (the first N Wikipedia lines), same batch size;
the two alternate for ``--repeats`` rounds and the best round of each counts. `sentlab encode` is
timed through its command-line entry point (reading the file and writing the .npy included).
Prints JSON with the ratio (sentlab / sentence-transformers; target >= 0.95).

    python benchmarks/encode_throughput.py [--sentences 4000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer

from sentlab.cli import main as sentlab_main
from sentlab.data.readers import read_sentences
from sentlab.encoders.loading import resolve_model_path
from sentlab.paths import data_dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    sentences = read_sentences(data_dir() / "wikipedia" / "wiki_sentences.txt", limit=args.sentences)
    reference = SentenceTransformer(resolve_model_path("minilm"))
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp, "in.txt")
        text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        st_times, ours_times = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            reference.encode(sentences, batch_size=args.batch_size, convert_to_numpy=True)
            st_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            sentlab_main(
                [
                    "encode",
                    "--model",
                    "minilm",
                    "--input",
                    str(text),
                    "--output",
                    str(Path(tmp, "o.npy")),
                    "--batch-size",
                    str(args.batch_size),
                    "--quiet",
                    "--no-cache",
                ]
            )
            ours_times.append(time.perf_counter() - start)
    st_rate, ours_rate = len(sentences) / min(st_times), len(sentences) / min(ours_times)
    print(
        json.dumps(
            {
                "benchmark": "encode_throughput",
                "model": "all-MiniLM-L6-v2",
                "sentences": len(sentences),
                "batch_size": args.batch_size,
                "device": "cuda" if torch.cuda.is_available() else "cpu",
                "sentence_transformers_per_s": st_rate,
                "sentlab_per_s": ours_rate,
                "ratio": ours_rate / st_rate,
                "note": "sentlab timing includes model loading, reading the file and writing the .npy",
                "target_ratio_min": 0.95,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
