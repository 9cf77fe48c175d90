"""How sure a score is: percentile bootstrap over a task's items, and paired bootstrap
differences between two models scored on the same items.

A task's *items* are what its headline is computed from, kept with the result so that intervals and
comparisons need no re-encoding:

* ``{"statistic": "mean", "values": [...]}`` - the headline is the mean of per-item values (AP of a
  query for retrieval and re-ranking, 0 / 1 correctness of a test sentence for classification, Kendall's
  tau of a ranking sample); a NaN value (a sample without a defined value) is left out, as the
  headline leaves it out;
* ``{"statistic": "spearman" | "ap", "gold": [...], "predicted": [...]}`` - the headline is a
  statistic of the pairs (Spearman for scored pairs, average precision for labelled pairs).

Both carry ``key``, a sha256 of what the items are (pair texts, query ids), so that two results are
compared only when they score the same items in the same order. A headline that averages several
tasks' headlines (the STS average over seven tasks, CQADupStack's MAP@100 over forums) is
``{"statistic": "parts", "parts": [items, ...]}`` (:func:`parts_items`): a resample draws each
part's items separately (a stratified bootstrap: every part keeps its size and its weight).

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
import warnings
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
    return {
        "statistic": statistic,
        "gold": [float(v) for v in gold],
        "predicted": [float(v) for v in predicted],
        "key": key,
    }


def parts_items(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Items whose headline is the unweighted mean of the parts' headlines (each part: items of any
    kind), keyed by the parts' keys in order."""
    parts = list(parts)
    if not parts:
        raise DataError("a headline over parts needs at least one part")
    return {"statistic": "parts", "parts": parts, "key": items_key(p.get("key") for p in parts)}


def _arrays(items: dict[str, Any]) -> tuple[str, np.ndarray, np.ndarray | None]:
    statistic = items.get("statistic")
    if statistic == "mean":
        return statistic, np.asarray(items["values"], dtype=np.float64), None
    if statistic in ("spearman", "ap"):
        return statistic, np.asarray(items["gold"], dtype=np.float64), np.asarray(items["predicted"], np.float64)
    raise DataError(f"unknown item statistic {statistic!r} (expected mean, spearman or ap)")


def _statistic(statistic: str, first: np.ndarray, second: np.ndarray | None) -> float:
    """The headline (x 100) of the given items; NaN where a resample leaves it undefined."""
    if statistic == "mean":  # NaN values (e.g. Kendall's tau of a constant prediction) are left out
        return 100 * float(np.nanmean(first))
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
    if items.get("statistic") == "parts":
        return float(np.mean([headline(part) for part in items["parts"]]))
    return _statistic(*_arrays(items))


def _draw(items: dict[str, Any], resamples: int, rng: np.random.Generator) -> np.ndarray | list:
    """Resampled item indices: ``resamples x n``, or one such array per part (stratified)."""
    if items.get("statistic") == "parts":
        return [_draw(part, resamples, rng) for part in items["parts"]]
    n = item_count(items)
    if n < 2:
        raise DataError("a bootstrap interval needs at least 2 items")
    return rng.integers(0, n, size=(resamples, n))


def _resampled(items: dict[str, Any], draw: np.ndarray | list) -> np.ndarray:
    """The headline (x 100) on every resample of ``draw``; NaN where a resample leaves it undefined."""
    if items.get("statistic") == "parts":
        return np.mean([_resampled(part, d) for part, d in zip(items["parts"], draw)], axis=0)
    statistic, first, second = _arrays(items)
    if statistic == "mean":  # vectorised: the mean of every resample at once
        values = first[draw]
        if not np.isnan(first).any():
            return 100 * values.mean(axis=1)
        with warnings.catch_warnings():  # a resample of NaN values only has no headline: NaN, left out
            warnings.simplefilter("ignore", RuntimeWarning)
            return 100 * np.nanmean(values, axis=1)
    return np.asarray([_statistic(statistic, first[i], second[i]) for i in draw])


def _check_same_items(results: Iterable[dict[str, Any]]) -> None:
    results = list(results)
    if len({r.get("key") for r in results}) != 1 or len({r.get("statistic") for r in results}) != 1:
        raise DataError("the results do not score the same items; they cannot be compared pairwise")


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bootstrap_interval(
    items: dict[str, Any], resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> tuple[float, float]:
    """Percentile bootstrap interval of the headline (x 100)."""
    return _interval(_resampled(items, _draw(items, resamples, np.random.default_rng(seed))), level)


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
        return f"{self.difference:+.2f} ({100 * self.level:.0f}% CI [{self.low:+.2f}, {self.high:+.2f}], {verdict})"


def paired_difference(
    a: dict[str, Any], b: dict[str, Any], resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> Difference:
    """Headline of ``a`` minus headline of ``b``, both scored on the same items, with the percentile
    interval of the difference over shared resamples."""
    _check_same_items([a, b])
    draw = _draw(a, resamples, np.random.default_rng(seed))
    low, high = _interval(_resampled(a, draw) - _resampled(b, draw), level)
    return Difference(headline(a) - headline(b), low, high, resamples, level)


def subset_items(items: dict[str, Any], indices: Iterable[int]) -> dict[str, Any]:
    """The items at ``indices`` (in that order), keyed by the parent's key and the indices, so that two
    subsets compare pairwise only when they are the same subset of the same items."""
    if items.get("statistic") == "parts":
        raise DataError("a headline over parts cannot be split into item subsets; split each part")
    chosen = [int(i) for i in indices]
    key = items_key([items.get("key"), chosen])
    if items.get("statistic") == "mean":
        return mean_items([items["values"][i] for i in chosen], key)
    return pair_items(
        items["statistic"], [items["gold"][i] for i in chosen], [items["predicted"][i] for i in chosen], key
    )


def item_count(items: dict[str, Any]) -> int:
    if items.get("statistic") == "parts":
        return sum(item_count(part) for part in items["parts"])
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
        return {
            **asdict(self),
            "beyond_noise": self.beyond_noise,
            "training_measured": self.training_measured,
            "seed_sd": self.seed_sd,
        }


def seed_item_difference(
    a: list[dict[str, Any]], b: list[dict[str, Any]], resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> SeedItemDifference:
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
    _check_same_items([*a, *b])
    rng = np.random.default_rng(seed)
    draw = _draw(a[0], resamples, rng)
    full_a, full_b = (np.asarray([headline(i) for i in side]) for side in (a, b))
    resampled_a, resampled_b = (np.asarray([_resampled(i, draw) for i in side]) for side in (a, b))
    seeds_a = rng.integers(0, len(a), size=(resamples, len(a)))
    seeds_b = rng.integers(0, len(b), size=(resamples, len(b)))
    columns = np.arange(resamples)[:, None]
    combined = resampled_a.T[columns, seeds_a].mean(axis=1) - resampled_b.T[columns, seeds_b].mean(axis=1)
    items_only = resampled_a.mean(axis=0) - resampled_b.mean(axis=0)
    seeds_only = full_a[seeds_a].mean(axis=1) - full_b[seeds_b].mean(axis=1)
    low, high = _interval(combined, level)
    item_low, item_high = _interval(items_only, level)
    seed_low, seed_high = _interval(seeds_only, level)
    return SeedItemDifference(
        float(full_a.mean() - full_b.mean()),
        low,
        high,
        [float(x - full_b.mean()) for x in full_a],
        item_low,
        item_high,
        seed_low,
        seed_high,
        len(a),
        resamples,
        level,
    )
