"""Scoring throughput: Eq. 7 (RankEncoder's mixed similarity) vs plain cosine, pairs per second, and
where Eq. 7's time goes. STS-B test pairs (1,379) scored by MiniLM with the 10k and 100k corpora.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

Both scorers start from sentences (encoding included); the breakdown times Eq. 7's extra stages on
the same pairs: similarity to the corpus (matrix product), ranking (sort), normalisation (g) and
the pair inner products. Prints JSON.

    python -m benchmarks.perf.rankencoder_scoring [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F

from sentlab.data.sts import load_sts_task
from sentlab.encoders import load_encoder
from sentlab.evaluation.scoring import CosineScorer
from sentlab.paths import data_dir
from sentlab.rank.index import CorpusIndex
from sentlab.rank.model import RankScorer
from sentlab.rank.vectors import _average_ranks_torch, average_ranks, normalize_ranks


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--index-dir", default="runs/indexes")
    parser.add_argument("--lambda-inf", type=float, default=0.1)
    args = parser.parse_args()
    model = load_encoder("minilm")
    pairs = load_sts_task("STS-B", data_dir(), split="test")
    s1, s2 = pairs.sentences1, pairs.sentences2
    _, cosine_s = timed(lambda: CosineScorer(model).score(s1, s2))
    unique = list(dict.fromkeys([*s1, *s2]))
    embeddings = F.normalize(torch.from_numpy(model.encode(unique, batch_size=128)), dim=-1)
    results = []
    for size in [int(x) for x in args.sizes.split(",")]:
        index = CorpusIndex.load(f"{args.index_dir}/minilm-wiki_sentences-{size}")
        corpus = index.tensor("cpu")
        _, eq7_s = timed(lambda: RankScorer(model, index, args.lambda_inf).score(s1, s2))
        # breakdown over the same work as Eq. 7's rank part (every unique sentence ranked once)
        sims, t_matmul = timed(lambda: embeddings @ corpus.T)
        ranks, t_sort = timed(lambda: average_ranks(sims))
        torch_ranks, t_sort_torch = timed(lambda: _average_ranks_torch(sims))
        assert torch.equal(ranks, torch_ranks)
        z, t_norm = timed(lambda: normalize_ranks(ranks))
        row = {s: i for i, s in enumerate(unique)}
        a, b = torch.tensor([row[s] for s in s1]), torch.tensor([row[s] for s in s2])
        _, t_dot = timed(lambda: (z[a] * z[b]).sum(1))
        results.append(
            {
                "corpus_size": size,
                "pairs": len(s1),
                "unique_sentences": len(unique),
                "cosine_pairs_per_s": len(s1) / cosine_s,
                "eq7_pairs_per_s": len(s1) / eq7_s,
                "ratio_eq7_over_cosine_time": eq7_s / cosine_s,
                "eq7_extra_breakdown_s": {
                    "similarity_matmul": t_matmul,
                    "rank_sort": t_sort,
                    "normalise_g": t_norm,
                    "pair_dot": t_dot,
                },
                "rank_sort_s_numpy_path": t_sort,
                "rank_sort_s_torch_cpu_path": t_sort_torch,
                "rank_vector_bytes_per_sentence": int(size * 4),
            }
        )
    print(
        json.dumps(
            {
                "benchmark": "rankencoder_scoring",
                "model": "all-MiniLM-L6-v2",
                "lambda_inf": args.lambda_inf,
                "device": "cpu",
                "threads": torch.get_num_threads(),
                "cosine_s": cosine_s,
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
