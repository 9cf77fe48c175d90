"""How many labelled pairs a task card needs to tell a one-point difference from noise: all-MiniLM-L6-v2
against itself truncated to its first 128 dimensions (a real difference of about a point), scored
by Spearman on random subsets of STS-B test's pairs of each size, with the paired bootstrap
interval over pairs that ``sentlab eval`` and ``sentlab compare`` print. Feeds record
``card-size-minilm`` and docs/guides/evaluation.md ("How many labelled pairs").

Feeds: records card-size-minilm; pages docs/guides/evaluation.md.

    HF_HUB_OFFLINE=1 python -m benchmarks.studies.card_size --sizes 50 100 200 400 800 --draws 20
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from benchmarks.common import emit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400, 800])
    parser.add_argument("--draws", type=int, default=20, help="random subsets of each size")
    parser.add_argument("--dims", type=int, default=128)
    args = parser.parse_args()

    from sentlab.data.sts import load_sts_task
    from sentlab.encoders import load_encoder
    from sentlab.evaluation.uncertainty import pair_items, paired_difference, subset_items

    pairs = load_sts_task("STS-B")
    model = load_encoder("minilm")
    a = model.encode(pairs.sentences1, normalize_embeddings=True, convert_to_numpy=True)
    b = model.encode(pairs.sentences2, normalize_embeddings=True, convert_to_numpy=True)

    def cosine(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        y = y / np.linalg.norm(y, axis=1, keepdims=True)
        return (x * y).sum(1)

    gold = [float(s) for s in pairs.scores]
    whole = pair_items("spearman", gold, cosine(a, b), "stsb-test")
    short = pair_items("spearman", gold, cosine(a[:, : args.dims], b[:, : args.dims]), "stsb-test")
    full = paired_difference(whole, short)
    rng = np.random.default_rng(0)
    sizes = {}
    for n in [*args.sizes, len(gold)]:
        widths, beyond = [], 0
        for _ in range(args.draws if n < len(gold) else 1):
            chosen = sorted(rng.choice(len(gold), size=n, replace=False).tolist())
            d = paired_difference(subset_items(whole, chosen), subset_items(short, chosen))
            widths.append((d.high - d.low) / 2)
            beyond += not d.inside_noise
        sizes[str(n)] = {
            "median_half_width": statistics.median(widths),
            "share_beyond_noise": beyond / (args.draws if n < len(gold) else 1),
        }
    half = sizes[str(len(gold))]["median_half_width"]
    emit(
        {
            "model": "all-MiniLM-L6-v2",
            "against": f"its first {args.dims} dimensions",
            "task": "STSBenchmark test",
            "pairs": len(gold),
            "difference": full.difference,
            "interval": [full.low, full.high],
            "sizes": sizes,
            # half-width ~ 1 / sqrt(n): the pairs whose interval is +-1 point, from the whole set's
            "pairs_for_one_point": round(len(gold) * half**2),
        }
    )


if __name__ == "__main__":
    main()
