"""EvalRank: ranks by hand on a symmetric fixture, and against a naive loop on random vectors."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.errors import DataError
from sentlab.evaluation.evalrank import load_evalrank, pair_ranks, score_evalrank
from tests.angles import angle_vectors
from tests.fake_data import write_evalrank

# unit vectors summing to zero (so centring keeps them): opposite angles in pairs
ANGLES = {"the dog runs": 0, "music plays": 180, "a dog runs": 30, "a cat sits": 210, "the cat sits": 100,
          "the car drives": 280}


def test_sentence_set_is_pairs_first_then_background_once(tmp_path):
    data = load_evalrank(write_evalrank(tmp_path).parent)
    assert data.sentences == ["the dog runs", "a dog runs", "the cat sits", "a cat sits", "music plays",
                              "the car drives"]
    assert len(data.pairs) == 3


@pytest.mark.parametrize("offset", [(0.0, 0.0), (5.0, -3.0)])  # a shared offset is removed by centring
def test_ranks_by_hand(tmp_path, offset):
    # pair 1 (0 -> 30 deg) and pair 2 (30 -> 0 deg): nothing closer, rank 1.
    # pair 3 (100 -> 210 deg, cos 110 deg): closer are 0 (100 deg), 180 (80 deg) and 30 (70 deg): rank 4.
    result = score_evalrank(angle_vectors(ANGLES, offset), load_evalrank(write_evalrank(tmp_path).parent))
    assert result.scores["mrr"] == pytest.approx(100 * (1 + 1 + 1 / 4) / 3, abs=1e-4)
    assert result.scores["hits@1"] == pytest.approx(100 * 2 / 3) and result.scores["hits@3"] == pytest.approx(100 * 2 / 3)
    assert result.scores["hits@10"] == pytest.approx(100.0) and result.scores["mean_rank"] == pytest.approx(2.0)


def test_pair_ranks_equal_a_naive_loop():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(60, 5)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = rng.choice(60, size=(40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    naive = []
    for a, b in pairs:
        positive = float(vectors[a] @ vectors[b])
        naive.append(1 + sum(1 for c in range(60) if c not in (a, b) and float(vectors[a] @ vectors[c]) > positive))
    np.testing.assert_array_equal(pair_ranks(vectors, pairs, block=7), naive)


def test_malformed_pair_line(tmp_path):
    folder = write_evalrank(tmp_path)
    (folder / "pos_pair.txt").write_text("only one sentence\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"pos_pair.txt:1: expected 'sentence<TAB>sentence'"):
        load_evalrank(tmp_path)
