"""sentlab's retrieval-card metrics against BEIR's (pytrec_eval, as BEIR and MTEB compute them) on random
ranked lists with binary relevance: nDCG@10 and Recall@k are the same numbers; MAP@k is the same where a
query has at most k relevant documents (sentlab's divides by min(relevant, k), TREC's by every relevant
document); MRR@10 is pytrec_eval's reciprocal rank cut at rank 10 (docs/guides/mteb.md)."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.evaluation.task_cards import ranking_metrics

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize("seed", range(20))
def test_the_retrieval_metrics_are_beirs(seed):
    rng = np.random.default_rng(seed)
    documents, k = 60, 20
    relevant = int(rng.integers(1, 30))  # over k for some seeds: MAP@k differs there, by definition
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
    trec = theirs[f"map_cut_{k}"]
    if relevant <= k:
        assert ours[f"map@{k}"] == pytest.approx(trec, abs=1e-12)
    else:  # sentlab divides by k, TREC by every relevant document
        assert ours[f"map@{k}"] == pytest.approx(trec * relevant / k, abs=1e-12)
