"""How sure a score is (issue 14): percentile bootstrap over a task's items, and paired bootstrap
differences between two models scored on the same items.

A task's *items* are what its headline is computed from, kept with the result so that intervals and
comparisons need no re-encoding:

* ``{"statistic": "mean", "values": [...]}`` - the headline is the mean of per-item values (AP of a
  query for retrieval and re-ranking, 0 / 1 correctness of a test sentence for classification);
* ``{"statistic": "spearman" | "ap", "gold": [...], "predicted": [...]}`` - the headline is a
  statistic of the pairs (Spearman for scored pairs, average precision for labelled pairs).

Both carry ``key``, a sha256 of what the items are (pair texts, query ids), so that two results are
compared only when they score the same items in the same order.

Percentile bootstrap (Efron and Tibshirani 1993, ch. 13): resample the items with replacement
``resamples`` times with a seeded generator, recompute the headline, take the (1 - level) / 2 and
(1 + level) / 2 quantiles. For a paired comparison the same resampled indices are applied to both
models' items and the interval is that of the difference; a difference whose interval holds 0 is
*inside the noise*. The interval covers sampling of the test items only, not the training seed:
seeds are a second, separate source (``sentlab adapt --seeds``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sentlab.errors import DataError

RESAMPLES = 1000
LEVEL = 0.95
SEED = 0


def items_key(parts: Iterable[Any]) -> str:
    """sha256 over what the items are, in order (pair texts, query ids)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def mean_items(values: Iterable[float], key: str) -> dict[str, Any]:
    return {"statistic": "mean", "values": [float(v) for v in values], "key": key}


def pair_items(statistic: str, gold: Iterable[float], predicted: Iterable[float], key: str) -> dict[str, Any]:
    return {"statistic": statistic, "gold": [float(v) for v in gold], "predicted": [float(v) for v in predicted],
            "key": key}


def _arrays(items: dict[str, Any]) -> tuple[str, np.ndarray, np.ndarray | None]:
    statistic = items.get("statistic")
    if statistic == "mean":
        return statistic, np.asarray(items["values"], dtype=np.float64), None
    if statistic in ("spearman", "ap"):
        return statistic, np.asarray(items["gold"], dtype=np.float64), np.asarray(items["predicted"], np.float64)
    raise DataError(f"unknown item statistic {statistic!r} (expected mean, spearman or ap)")


def _statistic(statistic: str, first: np.ndarray, second: np.ndarray | None) -> float:
    """The headline (x 100) of the given items; NaN where a resample leaves it undefined."""
    if statistic == "mean":
        return 100 * float(first.mean())
    if statistic == "spearman":
        from scipy.stats import spearmanr

        if np.ptp(first) == 0 or np.ptp(second) == 0:
            return float("nan")
        return 100 * float(spearmanr(first, second)[0])
    from sklearn.metrics import average_precision_score

    if first.min() == first.max():
        return float("nan")
    return 100 * float(average_precision_score(first, second))


def headline(items: dict[str, Any]) -> float:
    return _statistic(*_arrays(items))


def _indices(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bootstrap_interval(items: dict[str, Any], resamples: int = RESAMPLES, level: float = LEVEL,
                       seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the headline (x 100)."""
    statistic, first, second = _arrays(items)
    if len(first) < 2:
        raise DataError("a bootstrap interval needs at least 2 items")
    if statistic == "mean":  # vectorised: the mean of every resample at once
        return _interval(100 * first[_indices(len(first), resamples, seed)].mean(axis=1), level)
    draws = [_statistic(statistic, first[i], second[i]) for i in _indices(len(first), resamples, seed)]
    return _interval(np.asarray(draws), level)


@dataclass
class Difference:
    """``a - b`` on the same items (x 100) with its paired bootstrap interval."""

    difference: float
    low: float
    high: float
    resamples: int
    level: float

    @property
    def inside_noise(self) -> bool:
        return self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "inside_noise": self.inside_noise}

    def describe(self) -> str:
        verdict = "inside the noise" if self.inside_noise else "beyond the noise"
        return (f"{self.difference:+.2f} ({100 * self.level:.0f}% CI [{self.low:+.2f}, {self.high:+.2f}], "
                f"{verdict})")


def paired_difference(a: dict[str, Any], b: dict[str, Any], resamples: int = RESAMPLES, level: float = LEVEL,
                      seed: int = SEED) -> Difference:
    """Headline of ``a`` minus headline of ``b``, both scored on the same items, with the percentile
    interval of the difference over shared resamples."""
    if a.get("key") != b.get("key") or a.get("statistic") != b.get("statistic"):
        raise DataError("the two results do not score the same items; they cannot be compared pairwise")
    statistic, first_a, second_a = _arrays(a)
    _, first_b, second_b = _arrays(b)
    indices = _indices(len(first_a), resamples, seed)
    if statistic == "mean":
        draws = 100 * (first_a[indices].mean(axis=1) - first_b[indices].mean(axis=1))
    else:
        draws = np.asarray([_statistic(statistic, first_a[i], second_a[i]) - _statistic(statistic, first_b[i],
                                                                                         second_b[i])
                            for i in indices])
    low, high = _interval(draws, level)
    return Difference(headline(a) - headline(b), low, high, resamples, level)
