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


def subset_items(items: dict[str, Any], indices: Iterable[int]) -> dict[str, Any]:
    """The items at ``indices`` (in that order), keyed by the parent's key and the indices, so that two
    subsets compare pairwise only when they are the same subset of the same items."""
    chosen = [int(i) for i in indices]
    key = items_key([items.get("key"), chosen])
    if items.get("statistic") == "mean":
        return mean_items([items["values"][i] for i in chosen], key)
    return pair_items(items["statistic"], [items["gold"][i] for i in chosen],
                      [items["predicted"][i] for i in chosen], key)


def item_count(items: dict[str, Any]) -> int:
    return len(items["values"] if items.get("statistic") == "mean" else items["gold"])


def split_indices(n: int, seed: int = SEED) -> tuple[list[int], list[int]]:
    """A seeded split of ``n`` items into two disjoint halves (the first gets the extra item of an odd
    ``n``), each in ascending order: one half chooses, the other confirms."""
    if n < 4:
        raise DataError(f"{n} item(s) cannot be split into a choosing and a confirming half (need at least 4)")
    order = np.random.default_rng(seed).permutation(n)
    half = (n + 1) // 2
    return sorted(int(i) for i in order[:half]), sorted(int(i) for i in order[half:])


@dataclass
class SeedItemDifference:
    """Mean over the training seeds of ``a`` minus that of ``b`` (x 100), all scored on the same items,
    with three percentile intervals of the same resamples (:func:`seed_item_difference`): over seeds
    and items together (the one that decides), over the items alone (seeds fixed) and over the seeds
    alone (items fixed) - the two sources' shares of the combined one."""

    difference: float
    low: float
    high: float
    per_seed: list[float]
    item_low: float
    item_high: float
    seed_low: float
    seed_high: float
    seeds: int
    resamples: int
    level: float

    @property
    def training_measured(self) -> bool:
        """Training randomness is measured only with two or more seeds of ``a``."""
        return self.seeds >= 2

    @property
    def beyond_noise(self) -> bool:
        """Beyond the noise only when training randomness was measured, the combined interval excludes
        0, and no seed points the other way (another seed could reverse a difference that one
        already does)."""
        if not self.training_measured or self.low <= 0.0 <= self.high:
            return False
        return all(np.sign(d) == np.sign(self.difference) for d in self.per_seed)

    @property
    def seed_sd(self) -> float | None:
        return float(np.std(self.per_seed, ddof=1)) if len(self.per_seed) > 1 else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "beyond_noise": self.beyond_noise, "training_measured": self.training_measured,
                "seed_sd": self.seed_sd}


def _headlines(items: list[dict[str, Any]], indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(headline of each seed's items, headline of each seed on each item resample: seeds x resamples)."""
    full = np.asarray([headline(i) for i in items])
    arrays = [_arrays(i) for i in items]
    if arrays[0][0] == "mean":
        values = np.stack([first for _, first, _ in arrays])  # seeds x items
        return full, 100 * values[:, indices].mean(axis=2)
    return full, np.asarray([[_statistic(statistic, first[i], second[i]) for i in indices]
                             for statistic, first, second in arrays])


def seed_item_difference(a: list[dict[str, Any]], b: list[dict[str, Any]], resamples: int = RESAMPLES,
                         level: float = LEVEL, seed: int = SEED) -> SeedItemDifference:
    """``a`` minus ``b``, each given as one item set per training seed (``b`` may be a single, untrained
    start model), with the multi-bootstrap of Sellam et al. (2022, "The MultiBERTs", Sec. 3): every
    resample draws the test items with replacement (the same draw for every model and seed: paired)
    and, independently, each model's seeds with replacement, and takes the difference of the seed
    means on those items. Seeds and items are crossed factors, so resampling both at once is Owen's
    (2007) pigeonhole bootstrap; its interval covers the two sources of error together, where a paired
    bootstrap over items covers only the items. With few seeds the seed part is the weak one (three
    seeds have ten distinct resamples and understate the spread by a factor (k-1)/k in variance), so
    :attr:`SeedItemDifference.beyond_noise` also asks that every seed differ in the same direction."""
    if not a or not b:
        raise DataError("a comparison needs at least one result on each side")
    keys = {i.get("key") for i in [*a, *b]}
    statistics = {i.get("statistic") for i in [*a, *b]}
    if len(keys) != 1 or len(statistics) != 1:
        raise DataError("the results do not score the same items; they cannot be compared pairwise")
    n = item_count(a[0])
    if n < 2:
        raise DataError("a bootstrap interval needs at least 2 items")
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, n, size=(resamples, n))
    full_a, resampled_a = _headlines(a, indices)
    full_b, resampled_b = _headlines(b, indices)
    seeds_a = rng.integers(0, len(a), size=(resamples, len(a)))
    seeds_b = rng.integers(0, len(b), size=(resamples, len(b)))
    columns = np.arange(resamples)[:, None]
    combined = resampled_a.T[columns, seeds_a].mean(axis=1) - resampled_b.T[columns, seeds_b].mean(axis=1)
    items_only = resampled_a.mean(axis=0) - resampled_b.mean(axis=0)
    seeds_only = full_a[seeds_a].mean(axis=1) - full_b[seeds_b].mean(axis=1)
    low, high = _interval(combined, level)
    item_low, item_high = _interval(items_only, level)
    seed_low, seed_high = _interval(seeds_only, level)
    return SeedItemDifference(float(full_a.mean() - full_b.mean()), low, high,
                              [float(x - full_b.mean()) for x in full_a], item_low, item_high, seed_low, seed_high,
                              len(a), resamples, level)
