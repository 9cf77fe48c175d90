"""EvalRank's two figures (toolkit, corrected) for one model, and whether the BLAS thread count moves them.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

The sentence set is encoded once; both rankings are then computed from the same vectors with 1 and
with 2 BLAS threads (threadpoolctl). Prints one JSON object: the scores per thread count, whether
they are identical, the pairs where the two protocols differ, and the seconds each step took.

    HF_HUB_OFFLINE=1 python -m benchmarks.studies.evalrank_protocols --model minilm
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from threadpoolctl import threadpool_limits

from sentlab.encoders import load_encoder
from sentlab.evaluation.evalrank import load_evalrank, score_evalrank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    data = load_evalrank(args.data_dir)
    start = time.perf_counter()
    vectors = np.asarray(load_encoder(args.model).encode(data.sentences, batch_size=args.batch_size), np.float32)
    encode_seconds = time.perf_counter() - start
    runs = {}
    for threads in (1, 2):
        start = time.perf_counter()
        with threadpool_limits(limits=threads):
            result = score_evalrank(lambda sentences: vectors, data)
        runs[threads] = {
            "scores": result.scores,
            "seconds": round(time.perf_counter() - start, 1),
            "pairs_where_toolkit_differs": result.extra["pairs_where_toolkit_differs"],
        }
    print(
        json.dumps(
            {
                "benchmark": "evalrank_protocols",
                "model": args.model,
                "pairs": len(data.pairs),
                "sentences": len(data.sentences),
                "encode_seconds": round(encode_seconds, 1),
                "identical_across_thread_counts": runs[1]["scores"] == runs[2]["scores"],
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
