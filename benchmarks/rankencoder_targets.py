"""How E1's rank-similarity targets (Eq. 4-6) compare with the cosines of the encoder being trained,
on random in-batch pairs of a RankEncoder run's training sentences. Prints JSON: the share of pairs
inside Eq. 6's [tau_l, tau_u], and for those the mean target, the mean cosine and the mean squared gap.

Feeds: no record (its figures are quoted by hand); pages docs/methods/rankencoder.md.

    python benchmarks/rankencoder_targets.py --run runs/rankencoder-minilm-cpu [--batches 5 --batch-size 64]

The cosines are those of E1's own vectors, i.e. of E2 at the start when E2 starts from E1 (as in
rankencoder-minilm-cpu).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from sentlab.rank.index import CorpusIndex
from sentlab.rank.vectors import rank_vectors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True, help="a RankEncoder run folder")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--tau-lower", type=float, default=0.5)
    parser.add_argument("--tau-upper", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    run = Path(args.run)
    vectors = torch.from_numpy(np.load(run / "base_train_vectors.npy"))
    corpus = CorpusIndex.load(run / "base_index").tensor("cpu")
    generator = torch.Generator().manual_seed(args.seed)
    off_diagonal = ~torch.eye(args.batch_size, dtype=torch.bool)
    targets, cosines = [], []
    for _ in range(args.batches):
        rows = torch.randperm(len(vectors), generator=generator)[: args.batch_size]
        u = rank_vectors(vectors[rows], corpus, normalized=True)
        targets.append((u @ u.T)[off_diagonal])
        cosines.append((vectors[rows] @ vectors[rows].T)[off_diagonal])
    t, c = torch.cat(targets), torch.cat(cosines)
    kept = (t >= args.tau_lower) & (t <= args.tau_upper)
    print(
        json.dumps(
            {
                "run": str(run),
                "pairs": len(t),
                "share_kept": float(kept.float().mean()),
                "kept_mean_target": float(t[kept].mean()),
                "kept_mean_cosine": float(c[kept].mean()),
                "kept_mean_squared_gap": float(((t[kept] - c[kept]) ** 2).mean()),
                "all_mean_target": float(t.mean()),
                "all_mean_cosine": float(c.mean()),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
