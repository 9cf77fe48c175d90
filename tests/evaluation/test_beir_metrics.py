"""sentlab's retrieval-card metrics against trec_eval's (pytrec_eval, as BEIR and MTEB compute them) on
random ranked lists, with binary and with graded relevance: nDCG@10 (the grade as the gain), MAP@k
(map_cut) and Recall@k are the same numbers; MRR@10 is pytrec_eval's reciprocal rank cut at rank 10."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.evaluation.task_cards import ranking_metrics

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize("seed", range(20))
def test_the_retrieval_metrics_are_beirs(seed):
    rng = np.random.default_rng(seed)
    documents, k = 60, 20
    relevant = int(rng.integers(1, 30))  # over k for some seeds: map_cut divides by all of them
    hits = np.zeros(documents, dtype=bool)
    hits[rng.choice(documents, size=relevant, replace=False)] = True
    ours = ranking_metrics(hits, relevant, k)
    run = {"q": {f"d{i}": float(documents - i) for i in range(documents)}}  # ranked in index order
    qrels = {"q": {f"d{i}": 1 for i in np.flatnonzero(hits)}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{k}", "ndcg_cut.10", f"recall.{k}", "recip_rank"})
    theirs = theirs.evaluate(run)["q"]
    # pytrec_eval sums in double precision as numpy does; 1e-12 covers the order of the sums
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg_cut_10"], abs=1e-12)
    assert ours[f"recall@{k}"] == pytest.approx(theirs[f"recall_{k}"], abs=1e-12)
    first = int(np.flatnonzero(hits)[0]) + 1
    assert ours["mrr@10"] == pytest.approx(theirs["recip_rank"] if first <= 10 else 0.0, abs=1e-12)
    assert ours[f"map@{k}"] == pytest.approx(theirs[f"map_cut_{k}"], abs=1e-12)  # over every relevant one


@pytest.mark.parametrize("seed", range(20))
def test_graded_relevance_is_scored_as_trec_eval_scores_it(seed):
    """Grades 1 to 3 (0: not relevant), some relevant documents never retrieved: nDCG@10 takes the grade
    as the gain and its ideal from every judged grade; the other metrics read a grade above 0."""
    rng = np.random.default_rng(100 + seed)
    documents, k = 50, 10
    grades = np.zeros(documents)
    judged = rng.choice(documents, size=int(rng.integers(1, 20)), replace=False)
    grades[judged] = rng.integers(1, 4, size=len(judged))
    unretrieved = [3.0] * int(rng.integers(0, 3))  # relevant documents outside the ranked list
    ours = ranking_metrics(grades, [*grades[grades > 0], *unretrieved], k)
    run = {"q": {f"d{i}": float(documents - i) for i in range(documents)}}
    qrels = {"q": {**{f"d{i}": int(grades[i]) for i in judged}, **{f"x{i}": 3 for i in range(len(unretrieved))}}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{k}", "ndcg_cut.10", f"recall.{k}", "recip_rank"})
    theirs = theirs.evaluate(run)["q"]
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg_cut_10"], abs=1e-12)
    assert ours[f"map@{k}"] == pytest.approx(theirs[f"map_cut_{k}"], abs=1e-12)
    assert ours[f"recall@{k}"] == pytest.approx(theirs[f"recall_{k}"], abs=1e-12)
