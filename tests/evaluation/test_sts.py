import itertools
import math

import numpy as np
import pytest

from sentlab.data.sts import STSPairs
from sentlab.evaluation.geometry import alignment, uniformity
from sentlab.evaluation.sts import score_task, similar_pairs_score


class TableScorer:
    """Scores looked up from a dict; embeddings from a dict (for geometry)."""

    name = "table"

    def __init__(self, scores=None, vectors=None):
        self.scores, self.vectors = scores or {}, vectors or {}

    def score(self, s1, s2):
        return np.array([self.scores[(a, b)] for a, b in zip(s1, s2)])

    def encode(self, sentences):
        return np.array([self.vectors[s] for s in sentences])


def naive_spearman(x, y):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r

    rx, ry = ranks(list(x)), ranks(list(y))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def make_pairs():
    s1 = [f"a{i}" for i in range(8)]
    s2 = [f"b{i}" for i in range(8)]
    gold = np.array([0.5, 1.0, 4.0, 3.0, 2.0, 5.0, 3.4, 3.4])
    predicted = [0.1, 0.3, 0.2, 0.9, 0.5, 0.8, 0.4, 0.7]
    subsets = ["x"] * 4 + ["y"] * 4
    return STSPairs(s1, s2, gold, subsets), TableScorer({(a, b): p for a, b, p in zip(s1, s2, predicted)}), predicted


def test_all_setting_pools_subsets_and_records_each():
    pairs, scorer, predicted = make_pairs()
    result = score_task(scorer, pairs)
    assert result.spearman == pytest.approx(100 * naive_spearman(predicted, pairs.scores))
    x = naive_spearman(predicted[:4], pairs.scores[:4]) * 100
    y = naive_spearman(predicted[4:], pairs.scores[4:]) * 100
    assert result.subsets["x"]["spearman"] == pytest.approx(x)
    assert result.subsets["y"]["spearman"] == pytest.approx(y)
    assert result.subsets_mean == pytest.approx((x + y) / 2)
    # pooling is not the mean of the subsets
    assert abs(result.spearman - result.subsets_mean) > 1


def test_items_are_the_scored_pairs_and_give_the_headline_back():
    from sentlab.evaluation.uncertainty import headline

    pairs, scorer, predicted = make_pairs()
    assert "items" not in score_task(scorer, pairs).extra  # only when asked: a results file stays small
    items = score_task(scorer, pairs, items=True).extra["items"]
    assert items["gold"] == list(pairs.scores) and items["predicted"] == pytest.approx(predicted)
    assert headline(items) == pytest.approx(score_task(scorer, pairs).spearman)


def test_similar_pairs_keep_gold_between_067_and_1():
    pairs, scorer, predicted = make_pairs()
    result = similar_pairs_score(scorer, pairs)
    keep = [i for i, g in enumerate(pairs.scores) if 0.67 <= g / 5 <= 1.0]  # 4.0, 5.0, 3.4, 3.4
    assert keep == [2, 5, 6, 7] and result.n_pairs == 4
    assert result.spearman == pytest.approx(100 * naive_spearman([predicted[i] for i in keep], pairs.scores[keep]))


def test_alignment_and_uniformity_match_naive_loops():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    nx = x / np.linalg.norm(x, axis=1, keepdims=True)
    ny = y / np.linalg.norm(y, axis=1, keepdims=True)
    assert alignment(x, y) == pytest.approx(np.mean([np.sum((a - b) ** 2) for a, b in zip(nx, ny)]))
    pair_terms = [math.exp(-2 * np.sum((nx[i] - nx[j]) ** 2)) for i, j in itertools.combinations(range(5), 2)]
    assert uniformity(x) == pytest.approx(math.log(np.mean(pair_terms)))
