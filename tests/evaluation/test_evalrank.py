"""EvalRank: ranks by hand on a symmetric fixture, and against a naive loop on random vectors."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.errors import DataError
from sentlab.evaluation.evalrank import load_evalrank, pair_ranks, score_evalrank, toolkit_ranks
from tests.angles import angle_vectors
from tests.fake_data import write_evalrank

# unit vectors summing to zero (so centring keeps them): opposite angles in pairs
ANGLES = {
    "the dog runs": 0,
    "music plays": 180,
    "a dog runs": 30,
    "a cat sits": 210,
    "the cat sits": 100,
    "the car drives": 280,
}


def test_sentence_set_is_pairs_first_then_background_once(tmp_path):
    data = load_evalrank(write_evalrank(tmp_path).parent)
    assert data.sentences == [
        "the dog runs",
        "a dog runs",
        "the cat sits",
        "a cat sits",
        "music plays",
        "the car drives",
    ]
    assert len(data.pairs) == 3


@pytest.mark.parametrize("offset", [(0.0, 0.0), (5.0, -3.0)])  # a shared offset is removed by centring
def test_ranks_by_hand(tmp_path, offset):
    # pair 1 (0 -> 30 deg) and pair 2 (30 -> 0 deg): nothing closer, rank 1.
    # pair 3 (100 -> 210 deg, cos 110 deg): closer are 0 (100 deg), 180 (80 deg) and 30 (70 deg): rank 4.
    # (the corrected figures: the toolkit's may add s2 itself to a rank by float rounding, see below)
    result = score_evalrank(angle_vectors(ANGLES, offset), load_evalrank(write_evalrank(tmp_path).parent))
    scores = result.scores
    assert scores["mrr_corrected"] == pytest.approx(100 * (1 + 1 + 1 / 4) / 3, abs=1e-4)
    assert scores["hits@1_corrected"] == pytest.approx(100 * 2 / 3) and scores["hits@3_corrected"] == pytest.approx(
        100 * 2 / 3
    )
    assert scores["hits@10_corrected"] == pytest.approx(100.0) and scores["mean_rank_corrected"] == pytest.approx(2.0)
    assert result.main_metric == "mrr" and {"mrr", "hits@1", "hits@3", "mean_rank"} <= set(scores)


def random_pairs(seed: int, n: int, dim: int, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit float32 vectors and pairs of distinct rows."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = rng.choice(n, size=(n_pairs, 2))
    return vectors, pairs[pairs[:, 0] != pairs[:, 1]]


def test_pair_ranks_equal_a_naive_loop():
    vectors, pairs = random_pairs(0, 60, 5, 40)
    naive = []
    v64 = vectors.astype(np.float64)
    for a, b in pairs:
        positive = float(v64[a] @ v64[b])
        naive.append(1 + sum(1 for c in range(60) if c not in (a, b) and float(v64[a] @ v64[c]) > positive))
    # float64 on both sides: the two summation orders differ by ~1e-16, and random 5-d vectors have no
    # competitor that close to a pair score (the gaps are ~1e-3), so the comparisons cannot flip
    np.testing.assert_array_equal(pair_ranks(vectors, pairs, block=7), naive)


def literal_toolkit_loop(vectors: np.ndarray, pairs: np.ndarray) -> list[int]:
    """The EvalRank toolkit's ranking loop (s_evaluation.py, cosine), written out as it is there."""
    from threadpoolctl import threadpool_limits

    ranks = []
    with threadpool_limits(limits=1):
        for a, b in pairs:
            s1_emb, s2_emb = vectors[[a]], vectors[[b]]
            pos_score = np.dot(s1_emb, s2_emb.T).squeeze()
            background_scores = np.sort(np.squeeze(np.dot(vectors, s1_emb.T)))[::-1]
            rank = len(background_scores) - np.searchsorted(background_scores[::-1], pos_score, side="right")
            ranks.append(max(int(rank), 1))
    return ranks


def test_toolkit_ranks_are_the_toolkits_own_computation():
    vectors, pairs = random_pairs(1, 300, 16, 200)
    # the same numpy calls on the same float32 inputs, single-threaded: identical by construction
    toolkit = toolkit_ranks(vectors, pairs)
    np.testing.assert_array_equal(toolkit, literal_toolkit_loop(vectors, pairs))
    corrected = pair_ranks(vectors, pairs)
    # the two definitions agree up to float rounding: s2 itself (+1 when its entry in the big product
    # rounds above the pair score) and competitors within float32 rounding of the pair score
    assert np.all(np.abs(toolkit - corrected) <= 1)


def test_malformed_pair_line(tmp_path):
    folder = write_evalrank(tmp_path)
    (folder / "pos_pair.txt").write_text("only one sentence\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"pos_pair.txt:1: expected 'sentence<TAB>sentence'"):
        load_evalrank(tmp_path)


def test_query_rows_rank_against_uncentred_unit_rows(tmp_path):
    from sentlab.evaluation.useb import unit_rows

    data = load_evalrank(write_evalrank(tmp_path).parent)
    vectors = angle_vectors(ANGLES)  # centring is a no-op here, so unit query rows reproduce the cosine ranks
    same = score_evalrank(vectors, data, query_rows=lambda texts: unit_rows(vectors(texts)))
    assert same.scores == score_evalrank(vectors, data).scores and same.extra["centred"] is False
    shifted = angle_vectors(ANGLES, (5.0, -3.0))  # not centred now: every vector leans the same way
    assert score_evalrank(shifted, data, query_rows=lambda t: unit_rows(shifted(t))).scores != same.scores
