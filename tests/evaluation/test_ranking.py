"""Ranking tasks (RankCSE App. A.6): samples, Kendall tau and NDCG against hand computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from sentlab.data.sts import STSPairs
from sentlab.evaluation.ranking import ranking_samples, score_ranking
from sentlab.evaluation.results import EvalReport, RankingResult
from tests.evaluation.test_sts import TableScorer

# anchor "a" is in 5 pairs (one of them as sentence2), "b" in 3, "x" in 4 with equal gold scores
PAIRS = [
    ("a", "p1", 5.0),
    ("a", "p2", 4.0),
    ("p3", "a", 3.0),
    ("a", "p4", 1.0),
    ("a", "p5", 0.0),
    ("b", "q1", 5.0),
    ("b", "q2", 2.0),
    ("b", "q3", 1.0),
    ("x", "r1", 2.0),
    ("x", "r2", 2.0),
    ("x", "r3", 2.0),
    ("x", "r4", 2.0),
]
PREDICTED = {
    ("a", "p1"): 0.9,
    ("a", "p2"): 0.5,
    ("p3", "a"): 0.7,
    ("a", "p4"): 0.2,
    ("a", "p5"): 0.1,
    ("b", "q1"): 0.3,
    ("b", "q2"): 0.2,
    ("b", "q3"): 0.1,
    ("x", "r1"): 0.1,
    ("x", "r2"): 0.2,
    ("x", "r3"): 0.3,
    ("x", "r4"): 0.4,
}


def sts_pairs():
    return STSPairs([p[0] for p in PAIRS], [p[1] for p in PAIRS], np.array([p[2] for p in PAIRS]), ["all"] * len(PAIRS))


def test_samples_are_sentences_with_more_than_three_pairs_on_either_side():
    samples = ranking_samples(sts_pairs())
    assert sorted(len(s) for s in samples) == [4, 5]  # "a" (5 pairs) and "x" (4); "b" has only 3


def test_kendall_and_ndcg_by_hand():
    result = score_ranking(TableScorer(PREDICTED), sts_pairs())
    assert result.n_samples == 1 and result.n_skipped_constant_gold == 1  # "x": all gold equal
    # "a": gold 5,4,3,1,0 vs predicted 0.9,0.5,0.7,0.2,0.1 -> one discordant pair of 10: tau = (9 - 1) / 10
    gold, pred = [5, 4, 3, 1, 0], [0.9, 0.5, 0.7, 0.2, 0.1]
    concordant = sum(1 for i, j in itertools.combinations(range(5), 2) if (gold[i] - gold[j]) * (pred[i] - pred[j]) > 0)
    assert concordant == 9
    assert result.kcc == pytest.approx(80.0)
    order = sorted(range(5), key=lambda i: -pred[i])  # gains in predicted order: 5, 3, 4, 1, 0
    dcg = sum(gold[i] / math.log2(rank + 2) for rank, i in enumerate(order))
    ideal = sum(g / math.log2(rank + 2) for rank, g in enumerate(sorted(gold, reverse=True)))
    assert result.ndcg == pytest.approx(100 * dcg / ideal)


def test_ranking_results_round_trip_through_json():
    report = EvalReport(model="m", tasks={"STS-B-ranking": RankingResult(kcc=50.0, ndcg=90.0, n_samples=3)})
    again = EvalReport.from_dict(report.to_dict())
    assert again.tasks["STS-B-ranking"] == report.tasks["STS-B-ranking"]
    assert "STS-B-ranking KCC" in again.table() and "90.00" in again.table()


def test_items_are_the_samples_and_give_both_headlines_back():
    from sentlab.evaluation.uncertainty import headline

    pairs = STSPairs(
        *[list(x) for x in zip(*[p[:2] for p in PAIRS])], np.array([p[2] for p in PAIRS]), ["all"] * len(PAIRS)
    )
    pairs.scores[8] = 3.0  # "x" now has an order: two samples
    result = score_ranking(TableScorer(PREDICTED), pairs, items=True)
    assert result.n_samples == 2 and len(result.extra["items"]["values"]) == 2
    assert headline(result.extra["items"]) == pytest.approx(result.kcc)
    assert headline(result.extra["ndcg_items"]) == pytest.approx(result.ndcg)
    assert result.extra["items"]["key"] == result.extra["ndcg_items"]["key"]
