"""Encoding speed of several models on the same sentences, measured in alternating rounds so that
drift in machine speed hits all of them; sentences per second, median over rounds. Prints JSON with
each model's speed relative to the first.

Feeds: no record (its figures are quoted by hand); pages docs/methods/rankcse.md.

    python benchmarks/encode_speed.py --models minilm runs/rankcse-distillation-lr2e-4/rankcse-listnet/model
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from sentlab.data.readers import read_sentences
from sentlab.encoders import load_encoder
from sentlab.paths import data_dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--skip", type=int, default=9600, help="start after the first N lines (the training ones)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    corpus = data_dir() / "wikipedia" / "wiki_sentences.txt"
    sentences = read_sentences(corpus, limit=args.skip + args.sentences)[args.skip :]
    models = {name: load_encoder(name) for name in args.models}
    for model in models.values():
        model.encode(sentences[:128], batch_size=args.batch_size)  # warm-up
    rates: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            start = time.perf_counter()
            model.encode(sentences, batch_size=args.batch_size)
            rates[name].append(len(sentences) / (time.perf_counter() - start))
    medians = {name: statistics.median(r) for name, r in rates.items()}
    first = medians[args.models[0]]
    print(
        json.dumps(
            {
                "benchmark": "encode_speed",
                "sentences": len(sentences),
                "batch_size": args.batch_size,
                "rounds": args.rounds,
                "models": {
                    name: {
                        "sentences_per_s_median": medians[name],
                        "all": [round(x, 1) for x in rates[name]],
                        "speed_vs_first": medians[name] / first,
                    }
                    for name in models
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
