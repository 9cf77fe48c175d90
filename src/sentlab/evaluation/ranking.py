"""The ranking tasks of RankCSE (App. A.6 / Table 10), built from the STS datasets.

For every sentence x_i that occurs in more than three pairs (x_i, x_i^j) of a dataset (on either
side), {x_i, x_i^j, y_i^j} is one ranking sample: the model's similarities to the partners are
compared with the gold scores by Kendall's tau (tau-b, scipy) and NDCG (scikit-learn, gold scores as
gains, the whole list). Both are averaged over a dataset's samples (x 100); samples whose gold scores
are all equal have no order and are skipped (counted). STS12-16 pool all subsets of a year; STS-B
and SICK-R use their test splits. ``ranking_avg`` is the mean over the seven datasets.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau
from sklearn.metrics import ndcg_score

from sentlab.data.sts import STS_TASKS, STSPairs, load_sts_task
from sentlab.evaluation.results import EvalReport, RankingResult
from sentlab.evaluation.scoring import PairScorer
from sentlab.evaluation.uncertainty import items_key, mean_items

MIN_PARTNERS = 4  # "more than three sentence pairs"


def ranking_samples(pairs: STSPairs, min_partners: int = MIN_PARTNERS) -> list[np.ndarray]:
    """Per anchor sentence with >= ``min_partners`` pairs: the indices of its pairs."""
    by_sentence: dict[str, list[int]] = defaultdict(list)
    for k, (a, b) in enumerate(zip(pairs.sentences1, pairs.sentences2)):
        by_sentence[a].append(k)
        if b != a:
            by_sentence[b].append(k)
    return [np.asarray(rows) for rows in by_sentence.values() if len(rows) >= min_partners]


def score_ranking(scorer: PairScorer, pairs: STSPairs, split: str = "test", items: bool = False) -> RankingResult:
    """Mean KCC and NDCG over the task's samples; with ``items``, each sample's values are kept
    (``extra["items"]``: KCC, ``extra["ndcg_items"]``: NDCG) for intervals and paired comparisons."""
    predicted = np.asarray(scorer.score(pairs.sentences1, pairs.sentences2), dtype=np.float64)
    kcc, ndcg, anchors, skipped = [], [], [], 0
    for rows in ranking_samples(pairs):
        gold = pairs.scores[rows]
        if np.ptp(gold) == 0:
            skipped += 1
            continue
        kcc.append(kendalltau(predicted[rows], gold).statistic)
        ndcg.append(ndcg_score(gold[None, :], predicted[rows][None, :]))
        anchors.append([int(r) for r in rows])
    result = RankingResult(
        kcc=float(np.nanmean(kcc) * 100) if kcc else float("nan"),
        ndcg=float(np.mean(ndcg) * 100) if ndcg else float("nan"),
        n_samples=len(kcc),
        n_skipped_constant_gold=skipped,
        split=split,
    )
    if items:
        key = items_key([*anchors, *zip(pairs.sentences1, pairs.sentences2)])
        result.extra["items"] = mean_items(kcc, key)
        result.extra["ndcg_items"] = mean_items(ndcg, key)
    return result


def evaluate_ranking(
    scorer: PairScorer,
    data_dir: str | Path | None = None,
    tasks: Iterable[str] = tuple(STS_TASKS),
    report: EvalReport | None = None,
    items: bool = False,
) -> EvalReport:
    report = report or EvalReport(model=scorer.name)
    results = []
    for name in tasks:
        result = score_ranking(scorer, load_sts_task(name, data_dir), items=items)
        report.tasks[f"{name}-ranking"] = result
        results.append(result)
    if len(results) == len(STS_TASKS):
        report.summary["ranking_kcc_avg"] = float(np.mean([r.kcc for r in results]))
        report.summary["ranking_ndcg_avg"] = float(np.mean([r.ndcg for r in results]))
    return report
