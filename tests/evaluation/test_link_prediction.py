"""Link prediction (RSE App. B): filtered ranks by hand on 2-d vectors at known angles."""

import numpy as np
import pytest

from sentlab.data.relations import Triple
from sentlab.errors import DataError
from sentlab.evaluation.link_prediction import link_prediction, tail_ranks
from sentlab.evaluation.relational import RelationTable
from tests.angles import angle_vectors

ANGLES = {"h1": 0, "h2": 30, "t1": 10, "t2": 20, "t3": 100, "t4": 85}
# "turn" maps a head at 0 deg to 90 deg: (1, 0) + (-1, 1) = (0, 1)
TABLE = RelationTable(["same", "turn"], np.asarray([[0.0, 0.0], [-1.0, 1.0]], np.float32), {"same": 1.0})
TRIPLES = [
    Triple("h1", "same", "t2"),
    Triple("h1", "same", "t1"),
    Triple("h1", "turn", "t3"),
    Triple("h2", "same", "t4"),
]


def test_filtered_ranks_by_hand():
    # (h1, same, t2): query 0 deg; t1 (10 deg) is closer but is another true tail of (h1, same): filtered -> 1
    # (h1, same, t1): t2 filtered -> 1
    # (h1, turn, t3): query 90 deg; t3 at 10 deg from it, t4 at 5 deg -> 2
    # (h2, same, t4): query 30 deg; t4 at 55 deg, t2 (10) and t1 (20) closer, t3 (70) not -> 3
    np.testing.assert_array_equal(tail_ranks(angle_vectors(ANGLES), TABLE, TRIPLES), [1, 1, 2, 3])
    # candidates of the triple's relation only: "turn" has one tail, t3 -> 1
    np.testing.assert_array_equal(
        tail_ranks(angle_vectors(ANGLES), TABLE, TRIPLES, candidates="relation"), [1, 1, 1, 3]
    )


def test_metrics_per_relation_and_overall():
    result = link_prediction(angle_vectors(ANGLES), TABLE, TRIPLES)
    assert list(result) == ["same", "turn", "all"]
    assert result["same"]["mr"] == pytest.approx(5 / 3) and result["same"]["mrr"] == pytest.approx(7 / 9)
    assert result["same"]["hits@1"] == pytest.approx(2 / 3) and result["same"]["hits@3"] == 1.0
    assert result["turn"] == {"mr": 2.0, "mrr": 0.5, "n": 1, "hits@1": 0.0, "hits@3": 1.0, "hits@10": 1.0}
    assert result["all"]["mrr"] == pytest.approx((1 + 1 + 0.5 + 1 / 3) / 4) and result["all"]["n"] == 4


def test_the_head_is_not_its_own_candidate_and_start_models_score_with_zero_vectors():
    angles = {"a": 0, "b": 40, "c": 60}
    triples = [Triple("a", "same", "b"), Triple("b", "same", "c")]
    zeros = RelationTable.zeros(["same"], 2)  # the start model: plain cosine
    # (b, same, c): b is also a tail (cosine 1 with itself) but not a candidate for itself -> 1
    np.testing.assert_array_equal(tail_ranks(angle_vectors(angles), zeros, triples), [1, 1])


def test_bad_input():
    with pytest.raises(DataError, match="no relation vector"):
        tail_ranks(angle_vectors(ANGLES), TABLE, [Triple("h1", "paraphrase", "t1")])
    with pytest.raises(DataError, match="unknown candidate set"):
        tail_ranks(angle_vectors(ANGLES), TABLE, TRIPLES, candidates="all")
    with pytest.raises(DataError, match="no held-out triples"):
        tail_ranks(angle_vectors(ANGLES), TABLE, [])
