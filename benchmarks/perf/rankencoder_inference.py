"""RankEncoder at inference (Eq. 7) as a function of the corpus size: the index's size on disk, the
time to build it, and a query's cost: scoring ``--pairs`` sentence pairs with Eq. 7 against scoring
them by cosine alone, with the same encoder (all-MiniLM-L6-v2 by default) and the first N Wikipedia
lines as the corpus. Each pair's two sentences are encoded in both arms; Eq. 7 adds their rank
vectors over the N corpus vectors (one N-long similarity row a sentence, then ranks). Prints one
JSON object.

Feeds: records rankencoder-inference-minilm; pages docs/methods/rankencoder.md.

    python -m benchmarks.perf.rankencoder_inference --model minilm --sizes 1000 5000 20000 --pairs 500
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from sentlab.encoders import load_encoder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.progress import set_quiet
    from sentlab.rank.index import CorpusIndex
    from sentlab.rank.model import RankScorer

    set_quiet(True)
    pin_float32_math()  # fp32 means IEEE fp32 on every CPU (no bf16 or TF32 shortcuts)
    data = Path(os.environ.get("SENTLAB_DATA", "../shared/data"))
    with (data / "wikipedia" / "wiki_sentences.txt").open(encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(max(args.sizes) + 2 * args.pairs)]
    queries1, queries2 = lines[-2 * args.pairs :: 2], lines[-2 * args.pairs + 1 :: 2]  # outside every corpus
    model = load_encoder(args.model)
    rows = []
    for size in args.sizes:
        start = time.perf_counter()
        index = CorpusIndex.build(model, lines[:size], args.model, batch_size=128)
        built = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            saved = index.save(Path(tmp) / "index")
            size_bytes = folder_bytes(Path(saved))
        times = {}
        for name, lambda_inf in (("cosine", 0.0), ("eq7", 0.1)):
            scorer = RankScorer(model, index, lambda_inf=lambda_inf)
            scorer.score(queries1[:8], queries2[:8])  # warm-up
            measured = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                scorer.score(queries1, queries2)
                measured.append(time.perf_counter() - t0)
            times[name] = statistics.median(measured)
        rows.append(
            {
                "corpus_size": size,
                "index_bytes": size_bytes,
                "build_s": round(built, 2),
                "pairs": args.pairs,
                "cosine_ms_per_pair": round(1000 * times["cosine"] / args.pairs, 3),
                "eq7_ms_per_pair": round(1000 * times["eq7"] / args.pairs, 3),
                "eq7_over_cosine": round(times["eq7"] / times["cosine"], 3),
            }
        )
    print(json.dumps({"model": args.model, "threads": os.cpu_count(), "results": rows}, indent=1))


if __name__ == "__main__":
    main()
