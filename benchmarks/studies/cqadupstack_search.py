"""CQADupStack's search step: sentlab's exact blocked search (matrix product + ``torch.topk``)
against faiss' exact inner-product index, on unit vectors of each forum's real shape (its query and
pool sizes from the data), so the time of the search alone is known. Both return the same top-100
(checked). Encoding the titles is timed by ``benchmarks/studies/eval_families.py``.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

    python -m benchmarks.studies.cqadupstack_search --dim 384
"""

from __future__ import annotations

import argparse
import json
import time

import faiss
import numpy as np

from sentlab.data.useb import load_cqadupstack, task_folder
from sentlab.evaluation.useb import MAP_CUTOFF, top_k


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--block", type=int, default=1024)
    args = parser.parse_args()
    forums = load_cqadupstack(task_folder("CQADupStack"))
    rng = np.random.default_rng(0)
    totals = {"sentlab_blocked_topk": 0.0, "faiss_flat_ip": 0.0}
    same = True
    for forum in forums.values():
        queries = rng.normal(size=(len(forum.queries), args.dim)).astype(np.float32)
        pool = rng.normal(size=(len(forum.corpus), args.dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        pool /= np.linalg.norm(pool, axis=1, keepdims=True)
        start = time.perf_counter()
        _, ours = top_k(queries, pool, MAP_CUTOFF, block=args.block)
        totals["sentlab_blocked_topk"] += time.perf_counter() - start
        start = time.perf_counter()
        index = faiss.IndexFlatIP(args.dim)
        index.add(pool)
        _, theirs = index.search(queries, MAP_CUTOFF)
        totals["faiss_flat_ip"] += time.perf_counter() - start
        same &= bool((np.sort(ours, axis=1) == np.sort(theirs, axis=1)).mean() > 0.999)
    print(
        json.dumps(
            {
                "forums": len(forums),
                "queries": sum(len(f.queries) for f in forums.values()),
                "pool": sum(len(f.corpus) for f in forums.values()),
                "dim": args.dim,
                "seconds": {k: round(v, 2) for k, v in totals.items()},
                "same_top_100": same,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
