"""STS evaluation exactly as SimCSE reports it through SentEval.

* Score of a pair: the scorer's similarity (cosine of the embeddings by default).
* Metric: Spearman correlation with the gold scores, x 100 (Pearson is recorded beside it).
* STS12-16: the headline is the "all" setting - all pairs of all subsets of the year pooled into
  one correlation; each subset's correlation and their unweighted mean are recorded too.
* STS-B and SICK-R: the test split.
* ``sts_avg``: the mean of the seven headline numbers.

Also: alignment / uniformity on STS-B dev (RankCSE App. A.4: positives are pairs with gold > 4.0,
uniformity over all STS-B dev sentences) and the "similar pairs" score (RankEncoder Sec. 5.4: STS-B
test pairs whose gold score scaled to 0-1 lies in [0.67, 1.0]).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sentlab.data.sts import STS_TASKS, STSPairs, load_sts_task
from sentlab.evaluation.geometry import alignment, uniformity
from sentlab.evaluation.results import EvalReport, TaskResult
from sentlab.evaluation.scoring import PairScorer
from sentlab.evaluation.uncertainty import items_key, pair_items
from sentlab.progress import say

SIMILAR_PAIRS_RANGE = (0.67, 1.0)
ALIGNMENT_MIN_GOLD = 4.0


def correlations(predicted: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """(Spearman, Pearson) x 100."""
    return float(spearmanr(predicted, gold)[0] * 100), float(pearsonr(predicted, gold)[0] * 100)


def score_task(scorer: PairScorer, pairs: STSPairs, split: str = "test", items: bool = False) -> TaskResult:
    """Spearman / Pearson of one task; with ``items``, the scored pairs are kept (``extra["items"]``,
    :mod:`sentlab.evaluation.uncertainty`) for intervals and paired comparisons."""
    predicted = np.asarray(scorer.score(pairs.sentences1, pairs.sentences2), dtype=np.float64)
    spearman, pearson = correlations(predicted, pairs.scores)
    result = TaskResult(spearman=spearman, pearson=pearson, n_pairs=len(pairs), split=split)
    if items:
        result.extra["items"] = pair_items(
            "spearman", pairs.scores, predicted, items_key(zip(pairs.sentences1, pairs.sentences2))
        )
    names = pairs.subset_names
    if len(names) > 1:
        ids = np.asarray(pairs.subset_ids)
        for name in names:
            mask = ids == name
            if mask.sum() < 2:
                continue
            s, p = correlations(predicted[mask], pairs.scores[mask])
            result.subsets[name] = {"spearman": s, "pearson": p, "n_pairs": int(mask.sum())}
        result.subsets_mean = float(np.mean([r["spearman"] for r in result.subsets.values()]))
    return result


def similar_pairs_score(
    scorer: PairScorer, pairs: STSPairs, band: tuple[float, float] = SIMILAR_PAIRS_RANGE
) -> TaskResult:
    """Spearman on the pairs whose gold score / 5 lies in ``band`` (RankEncoder Sec. 5.4)."""
    scaled = pairs.scores / 5.0
    idx = np.flatnonzero((scaled >= band[0]) & (scaled <= band[1]))
    subset = STSPairs(
        [pairs.sentences1[i] for i in idx],
        [pairs.sentences2[i] for i in idx],
        pairs.scores[idx],
        ["similar"] * len(idx),
    )
    result = score_task(scorer, subset)
    result.extra["gold_range_0_1"] = list(band)
    return result


def alignment_uniformity(scorer: PairScorer, dev: STSPairs) -> dict[str, float]:
    positive = np.flatnonzero(dev.scores > ALIGNMENT_MIN_GOLD)
    emb1 = scorer.encode([dev.sentences1[i] for i in positive])
    emb2 = scorer.encode([dev.sentences2[i] for i in positive])
    everything = scorer.encode(list(dict.fromkeys(dev.sentences1 + dev.sentences2)))
    return {
        "alignment": alignment(emb1, emb2),
        "uniformity": uniformity(everything),
        "n_positive_pairs": int(len(positive)),
        "n_sentences": int(len(everything)),
    }


def evaluate_sts(
    scorer: PairScorer,
    data_dir: str | Path | None = None,
    tasks: Iterable[str] = tuple(STS_TASKS),
    report: EvalReport | None = None,
    extras: bool = True,
    items: bool = False,
) -> EvalReport:
    """Run the STS tasks (and, with ``extras``, similar pairs + alignment / uniformity); ``items``:
    keep each task's scored pairs (:func:`score_task`)."""
    report = report or EvalReport(model=scorer.name)
    headline = []
    for name in tasks:
        say(f"[sts] {name}")
        result = score_task(scorer, load_sts_task(name, data_dir), items=items)
        report.tasks[name] = result
        headline.append(result.spearman)
    if len(headline) == len(STS_TASKS):
        report.summary["sts_avg"] = float(np.mean(headline))
    if extras:
        say("[sts] similar pairs, alignment / uniformity")
        stsb_test = load_sts_task("STS-B", data_dir, split="test")
        report.tasks["STS-B-similar-pairs"] = similar_pairs_score(scorer, stsb_test)
        report.summary.update(alignment_uniformity(scorer, load_sts_task("STS-B", data_dir, split="dev")))
    return report
