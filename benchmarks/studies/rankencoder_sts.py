"""RankEncoder inference on a pretrained encoder E: the seven STS tasks and the similar-pairs score for
E (cosine), RankEncoder_E (Eq. 2, lambda_inf = 1) and Eq. 7 at several lambda_inf, for corpora made
of the first N lines of a corpus file. Prints JSON (one entry per corpus size and lambda).

Feeds: records rankencoder-eq7-minilm; pages docs/methods/index.md, docs/methods/rankencoder.md,
docs/results.md.

    python -m benchmarks.studies.rankencoder_sts --model minilm --sizes 10000,100000 --lambdas 0.1,0.2,0.5

Each sentence is encoded once and each pair's rank similarity computed once per corpus; the lambdas
only re-mix them (the mixing is exactly what ``sentlab eval --index I --lambda-inf L`` computes).
Indexes are cached under --index-dir.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentlab.data.readers import read_sentences
from sentlab.encoders import load_encoder
from sentlab.errors import DataError
from sentlab.evaluation import evaluate_sts
from sentlab.evaluation.scoring import EmbeddingCache
from sentlab.paths import data_dir
from sentlab.rank.index import CorpusIndex
from sentlab.rank.model import RankScorer


class SharedComponents:
    """Eq. 7's (cosine, rank similarity) per list of pairs, computed once by the scorer."""

    def __init__(self, ranker: RankScorer):
        self.ranker = ranker
        self.memo: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.seconds = 0.0

    def get(self, s1: Sequence[str], s2: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        key = hash((tuple(s1), tuple(s2)))
        if key not in self.memo:
            start = time.perf_counter()
            self.memo[key] = self.ranker.similarity_parts(s1, s2)
            self.seconds += time.perf_counter() - start
        return self.memo[key]


class LambdaView:
    def __init__(self, shared: SharedComponents, lambda_inf: float, name: str):
        self.shared, self.lambda_inf, self.name = shared, lambda_inf, name

    def score(self, s1: Sequence[str], s2: Sequence[str]) -> np.ndarray:
        return RankScorer.mix(*self.shared.get(s1, s2), self.lambda_inf)

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        ranker = self.shared.ranker
        return RankScorer(ranker.encoder, ranker.index, self.lambda_inf).encode(sentences)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--corpus", default=None, help="default: DATA/wikipedia/wiki_sentences.txt")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--lambdas", default="0.1,0.2,0.5")
    parser.add_argument("--index-dir", default="runs/indexes")
    args = parser.parse_args()
    corpus_file = Path(args.corpus or data_dir() / "wikipedia" / "wiki_sentences.txt")
    model = load_encoder(args.model)
    cache = EmbeddingCache(model)
    lambdas = [0.0, 1.0] + [float(x) for x in args.lambdas.split(",")]
    results = []
    for size in [int(x) for x in args.sizes.split(",")]:
        folder = Path(args.index_dir) / f"{Path(args.model).name}-{corpus_file.stem}-{size}"
        start = time.perf_counter()
        try:
            index = CorpusIndex.load(folder)
            index.check_encoder(model)
        except DataError:
            index = CorpusIndex.build(model, read_sentences(corpus_file, limit=size), args.model, batch_size=256)
            index.save(folder)
        index_seconds = time.perf_counter() - start
        shared = SharedComponents(RankScorer(cache, index, 1.0))
        for lam in lambdas:
            start = time.perf_counter()
            report = evaluate_sts(LambdaView(shared, lam, f"{args.model} lambda_inf={lam}"), data_dir())
            results.append(
                {
                    "corpus_size": size,
                    "lambda_inf": lam,
                    "sts": {name: round(r.spearman, 2) for name, r in report.tasks.items()},
                    "summary": {k: round(v, 4) if isinstance(v, float) else v for k, v in report.summary.items()},
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
        results[-len(lambdas)]["index_seconds"] = round(index_seconds, 1)
        results[-len(lambdas)]["similarity_parts_seconds"] = round(shared.seconds, 1)
    print(json.dumps({"model": args.model, "corpus": str(corpus_file), "results": results}, indent=2))


if __name__ == "__main__":
    main()
