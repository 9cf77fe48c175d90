"""How often ``sentlab mine``'s same-text guard acts: on QQP dev's duplicate pairs, Flickr8k caption
pairs and SNLI dev's (premise, entailment) pairs (``benchmarks/studies/hard_negatives.py``'s training rows),
mined with all-MiniLM-L6-v2 among the pairs' positives, one negative a pair, with NV-Retriever's
relative margin (0.05, the default) and without it. For each: the pairs, the triplets, the candidates
the guard passed over (a near-copy of the anchor or a positive that would have been chosen) and the
negatives missing for it. Prints one JSON object; record ``mine-guard-minilm``, quoted on the own-data
guide (hard negatives).

Feeds: records mine-guard-minilm; pages docs/guides/own-data.md.

    python -m benchmarks.studies.mine_guard
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def main() -> None:
    from datasets import Dataset

    from benchmarks.studies.hard_negatives import training_rows
    from sentlab.encoders import load_encoder
    from sentlab.mining import mine
    from sentlab.progress import set_quiet

    set_quiet(True)
    data = Path(os.environ.get("SENTLAB_DATA", "../shared/data"))
    model = load_encoder("minilm")
    found = {}
    with tempfile.TemporaryDirectory() as cache:  # the embeddings of a set, reused by its second setting
        for name in ("qqp", "flickr8k", "snli"):
            rows, _ = training_rows(name, data, seed=0)
            pairs = Dataset.from_dict(
                {"anchor": [r["anchor"] for r in rows], "positive": [r["positive"] for r in rows]}
            )
            found[name] = {}
            for label, margin in (("margin", 0.05), ("no_margin", None)):
                triplets, report = mine(pairs, model, relative_margin=margin, cache_folder=cache)
                found[name][label] = {
                    "pairs": report.pairs,
                    "triplets": report.triplets,
                    "same_text_passed_over": report.same_text_passed_over,
                    "short_for_the_same_text": report.short_for_the_same_text,
                }
    print(
        json.dumps(
            {"model": "minilm", "candidates": "the pairs' positives", "num_negatives": 1, "sets": found}, indent=1
        )
    )


if __name__ == "__main__":
    main()
