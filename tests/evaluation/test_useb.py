"""USEB metrics on small fixtures whose scores are computed by hand (angles -> known cosines)."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.data.useb import load_askubuntu, load_cqadupstack, load_scidocs, load_twitterpara
from sentlab.evaluation.useb import (
    evaluate_useb,
    ranked_precision_metrics,
    score_askubuntu,
    score_cqadupstack,
    score_scidocs,
    score_twitterpara,
    top_k,
    trec_average_precision,
)
from tests.angles import angle_vectors
from tests.fake_data import write_askubuntu, write_cqadupstack, write_scidocs, write_twitterpara


def test_ranked_precision_metrics_by_hand():
    m = ranked_precision_metrics([False, True, False, True, False])
    assert m["map"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert (m["p@1"], m["p@5"], m["mrr"]) == (0.0, pytest.approx(2 / 5), 0.5)


ASKU = {
    "the dog runs": 0,
    "a dog runs": 26,
    "the dog": 53,
    "a car drives": 60,
    "the cat sits": 127,
    "the girl reads": 90,
    "music plays": 0,
    "a bird flies": 170,
}


def test_askubuntu_by_hand(tmp_path):
    # query 1 at 0 deg: a dog runs (26, relevant), the dog (53), a car drives (60, relevant), the cat sits (127),
    #   a bird flies (170) -> hits at ranks 1 and 3: AP = (1/1 + 2/3) / 2, P@5 = 2/5
    # query 7 at 90 deg: "the dog" (53) and "the cat sits" (127) tie at cos 37 deg; BM25 order keeps "the dog"
    #   (relevant) first -> AP = 1, P@5 = 1/5
    result = score_askubuntu(angle_vectors(ASKU), load_askubuntu(write_askubuntu(tmp_path)))
    assert result.n == 2  # the query without a similar question is skipped
    assert result.scores["map"] == pytest.approx(100 * ((1 + 2 / 3) / 2 + 1) / 2, abs=1e-4)
    assert result.scores["p@1"] == pytest.approx(100.0) and result.scores["mrr"] == pytest.approx(100.0)
    assert result.scores["p@5"] == pytest.approx(100 * (2 / 5 + 1 / 5) / 2)


CQA = {
    "the dog runs fast": 0,
    "the dog runs": 10,
    "a car drives": 90,
    "the car drives": 80,
    "a cat sits": 120,
    "music plays": 140,
    "the boy plays": 0,
    "a boy plays ball": 20,
    "the bird flies": 40,
}


def test_cqadupstack_map_at_100_by_hand(tmp_path):
    forums = load_cqadupstack(write_cqadupstack(tmp_path))
    vectors = angle_vectors(CQA)
    result = score_cqadupstack(vectors, forums)
    # android: q1 -> d1 first (AP 1); q2 -> d3 (rel), d2, d4 (rel), d1: AP (1 + 2/3) / 2. gaming: q9 -> e1, e2 (rel): 1/2
    android, gaming = (1 + (1 + 2 / 3) / 2) / 2, 0.5
    assert result.parts["android"]["map@100"] == pytest.approx(100 * android, abs=1e-4)
    assert result.main == pytest.approx(100 * (android + gaming) / 2, abs=1e-4)
    # USEB's AP@k counts the hits inside the top k only: with k = 1, q2 scores 1 (d3 first), q9 scores 0
    assert score_cqadupstack(vectors, forums, k=1).main == pytest.approx(100 * (1.0 + 0.0) / 2)


def test_blocked_top_k_equals_a_full_sort():
    rng = np.random.default_rng(0)
    queries, pool = rng.normal(size=(37, 8)).astype(np.float32), rng.normal(size=(200, 8)).astype(np.float32)
    scores, index = top_k(queries, pool, k=10, block=8)
    full = queries.astype(np.float64) @ pool.astype(np.float64).T
    # blocked float32 products and this float64 one round differently, so two near-equal scores may
    # come back in either order: check that each returned index carries its true score and that the
    # scores are the ten largest (float32 rounding of 8-term products of normals: < 1e-5)
    np.testing.assert_allclose(np.take_along_axis(full, index, axis=1), scores, atol=1e-5)
    np.testing.assert_allclose(scores, np.sort(full, axis=1)[:, ::-1][:, :10], atol=1e-5)
    assert all(len(set(row)) == 10 for row in index)


TWITTER = {
    "the dog runs": 0,
    "the dog runs fast": 60,
    "a cat sits": 0,
    "the car drives": 30,
    "a boy reads": 0,
    "a boy reads a book": 0,
    "the sky": 0,
    "the bird flies": 80,
    "the man plays": 0,
    "the man plays guitar": 10,
    "the girl swims": 0,
    "a red car": 50,
    "the dog eats": 0,
    "the dog eats food": 0,
}


def test_twitterpara_by_hand(tmp_path):
    result = score_twitterpara(angle_vectors(TWITTER), load_twitterpara(write_twitterpara(tmp_path)))
    # TURL decided pairs by cosine: (30 deg, no), (60, yes), (80, no) -> AP = 1/2. PIT: (10, yes), (50, no) -> 1.
    assert result.parts["TURL"]["ap"] == pytest.approx(50.0) and result.parts["PIT"]["ap"] == pytest.approx(100.0)
    assert result.main == pytest.approx(75.0)
    # Spearman over all pairs, undecided included: TURL gold 100, 0, 60, 20 vs cos ranks 2, 3, 4, 1 -> 0;
    # PIT gold 80, 20, 60 vs cos ranks 2, 1, 3 -> 1 - 6 * 2 / (3 * 8) = 0.5
    assert result.parts["TURL"]["spearman"] == pytest.approx(0.0, abs=1e-9)
    assert result.scores["spearman"] == pytest.approx(25.0)
    assert result.parts["TURL"]["n_undecided"] == 1


def test_trec_average_precision_by_hand():
    assert trec_average_precision([0.9, 0.5, 0.7], ["a", "b", "c"], {"a": 1, "b": 1, "x": 1}) == pytest.approx(
        (1 / 1 + 2 / 3) / 3
    )  # the unretrieved relevant "x" counts in the denominator
    assert trec_average_precision([0.5, 0.5], ["a", "b"], {"a": 1}) == pytest.approx(0.5)  # tie: "b" ranks first


SCIDOCS = {"the dog runs": 0, "a dog runs": 20, "the cat sits": 40, "music plays": 60}


def test_scidocs_by_hand(tmp_path):
    result = score_scidocs(angle_vectors(SCIDOCS), load_scidocs(write_scidocs(tmp_path)))
    expected = {"cite": (1 + 2 / 3) / 2, "cocite": (1 / 2) / 2, "coread": 1.0, "coview": 1 / 2}
    for relation, value in expected.items():
        assert result.parts[relation]["map"] == pytest.approx(100 * value, abs=1e-4), relation
    assert result.main == pytest.approx(100 * np.mean(list(expected.values())), abs=1e-4)


def test_evaluate_useb_skips_absent_tasks_with_reasons(tmp_path):
    write_twitterpara(tmp_path)
    report = evaluate_useb(angle_vectors(TWITTER), tmp_path)
    assert list(report.tasks) == ["TwitterPara"] and "useb_avg" not in report.summary
    assert sorted(report.summary["skipped"]) == ["AskUbuntu", "CQADupStack", "SciDocs"]


def test_query_rows_are_used_for_the_query_side(tmp_path):
    """Asymmetric (RSE) scoring: queries take ``query_rows``, candidates their unit rows. Unit rows as
    query rows reproduce the cosine figures; query rows pointing elsewhere change them."""
    from sentlab.evaluation.useb import unit_rows

    asku, cqa = load_askubuntu(write_askubuntu(tmp_path / "a")), load_cqadupstack(write_cqadupstack(tmp_path / "c"))
    for table, score, data in ((ASKU, score_askubuntu, asku), (CQA, score_cqadupstack, cqa)):
        vectors = angle_vectors(table)
        same = score(vectors, data, query_rows=lambda texts, v=vectors: unit_rows(v(texts)))
        assert same.scores == score(vectors, data).scores
        flipped = score(vectors, data, query_rows=lambda texts, v=vectors: -unit_rows(v(texts)))
        assert flipped.main < same.main  # the most dissimilar candidates now rank first


def test_items_give_every_headline_back(tmp_path):
    """With ``items``, what each headline is computed from is kept: per-query AP (AskUbuntu), forums /
    sets / relations as parts (CQADupStack, TwitterPara, SciDocs)."""
    from sentlab.evaluation.uncertainty import headline

    cases = [
        (score_askubuntu, ASKU, load_askubuntu(write_askubuntu(tmp_path / "a")), "mean"),
        (score_cqadupstack, CQA, load_cqadupstack(write_cqadupstack(tmp_path / "c")), "parts"),
        (score_twitterpara, TWITTER, load_twitterpara(write_twitterpara(tmp_path / "t")), "parts"),
        (score_scidocs, SCIDOCS, load_scidocs(write_scidocs(tmp_path / "s")), "parts"),
    ]
    for score, angles, data, statistic in cases:
        result = score(angle_vectors(angles), data, items=True)
        assert result.extra["items"]["statistic"] == statistic
        assert headline(result.extra["items"]) == pytest.approx(result.main, abs=1e-9), score.__name__
        assert "items" not in score(angle_vectors(angles), data).extra
