"""SICK-R under the two protocols in use: SentEval / SimCSE (test split, 4,927 pairs) and MTEB
(its "test" is the whole SICK set: train + trial + test, 9,927 pairs). Prints JSON.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

    python -m benchmarks.studies.sick_protocols [--model minilm]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from sentlab.data.sts import STS_TASKS, STSPairs, read_sick
from sentlab.encoders import load_encoder
from sentlab.evaluation import CosineScorer
from sentlab.evaluation.sts import score_task
from sentlab.paths import data_dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    args = parser.parse_args()
    scorer = CosineScorer(load_encoder(args.model))
    folder = data_dir() / STS_TASKS["SICK-R"].folder
    parts = [read_sick(folder, split) for split in ("train", "dev", "test")]
    whole = STSPairs(
        sum((p.sentences1 for p in parts), []),
        sum((p.sentences2 for p in parts), []),
        np.concatenate([p.scores for p in parts]),
        ["all"] * sum(len(p) for p in parts),
    )
    test, everything = score_task(scorer, parts[2]), score_task(scorer, whole)
    print(
        json.dumps(
            {
                "model": args.model,
                "senteval_test_split": {"spearman": test.spearman, "n_pairs": test.n_pairs},
                "mteb_whole_sick": {"spearman": everything.spearman, "n_pairs": everything.n_pairs},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
