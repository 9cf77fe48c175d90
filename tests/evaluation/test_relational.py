import numpy as np
import pytest

from sentlab.errors import ConfigError
from sentlab.evaluation.relational import RelationalScorer, RelationTable, parse_relation_weights

EMBEDDINGS = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}


class FixedModel:
    """encode() from a fixed table, so every score can be computed by hand."""

    def encode(self, sentences, **kwargs):
        return np.asarray([EMBEDDINGS[s] for s in sentences], dtype=np.float32)


TABLE = RelationTable(
    ["entailment", "duplicate_question"],
    np.asarray([[0.0, 1.0], [-1.0, 0.0]], np.float32),
    {"entailment": 1.0, "duplicate_question": 0.5},
)


def test_relation_scores_by_hand():
    scorer = RelationalScorer(FixedModel(), TABLE)
    scores = scorer.relation_scores(["a", "b"], ["b", "a"])
    # a + r1 = (1, 1): cos with b = 1/sqrt2; a + r2 = (0, 0) -> 0.  b + r1 = (0, 2): cos with a = 0;
    # b + r2 = (-1, 1): cos with a = -1/sqrt2
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(scores, [[s, 0.0], [0.0, -s]], atol=1e-7)
    # the saved weights 1 : 0.5, normalised to 2/3 : 1/3
    np.testing.assert_allclose(scorer.score(["a", "b"], ["b", "a"]), [2 / 3 * s, -1 / 3 * s], atol=1e-7)
    # max over both directions: (a, b) forward 2/3 s, backward (b -> a) -1/3 s
    both = RelationalScorer(FixedModel(), TABLE, direction="max")
    np.testing.assert_allclose(both.score(["a", "b"], ["b", "a"]), [2 / 3 * s, 2 / 3 * s], atol=1e-7)
    one = RelationalScorer(FixedModel(), TABLE, weights={"duplicate_question": 3})
    np.testing.assert_allclose(one.score(["c"], ["b"]), [1.0], atol=1e-7)  # c + r2 = (0, 1) = b


def test_query_rows_give_the_mixed_score_as_an_inner_product():
    scorer = RelationalScorer(FixedModel(), TABLE)
    rows = scorer.query_rows(["a", "b", "c"])
    unit = np.asarray([EMBEDDINGS[s] for s in "abc"]) / np.linalg.norm([EMBEDDINGS[s] for s in "abc"], axis=1)[:, None]
    direct = np.asarray([[scorer.score([q], [d])[0] for d in "abc"] for q in "abc"])
    np.testing.assert_allclose(rows @ unit.T, direct, atol=1e-6)  # float32 rows vs float64 scores


def test_bad_weights_and_directions_are_one_line_errors():
    with pytest.raises(ConfigError, match="unknown relation"):
        RelationalScorer(FixedModel(), TABLE, weights={"paraphrase": 1})
    with pytest.raises(ConfigError, match="sum to 0"):
        RelationalScorer(FixedModel(), TABLE, weights={"entailment": 0})
    with pytest.raises(ConfigError, match=">= 0"):
        RelationalScorer(FixedModel(), TABLE, weights={"entailment": -1})
    with pytest.raises(ConfigError, match="unknown direction"):
        RelationalScorer(FixedModel(), TABLE, direction="both")
    assert parse_relation_weights("entailment=1, duplicate_question=0.5") == {
        "entailment": 1.0,
        "duplicate_question": 0.5,
    }
    for bad in ("entailment", "entailment=x", "=1", ""):
        with pytest.raises(ConfigError, match="relation-weights"):
            parse_relation_weights(bad)


def test_table_round_trip_and_heatmap_matrix(tmp_path):
    TABLE.save(tmp_path)
    again = RelationTable.load(tmp_path, 2)
    np.testing.assert_array_equal(again.vectors, TABLE.vectors)
    assert again.names == TABLE.names and again.weights == TABLE.weights
    np.testing.assert_allclose(again.similarity(), [[1.0, 0.0], [0.0, 1.0]], atol=1e-12)
    with pytest.raises(ConfigError, match="relation table is"):
        RelationTable.load(tmp_path, 3)
