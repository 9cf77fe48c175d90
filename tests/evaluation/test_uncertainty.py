"""Bootstrap intervals and paired differences against a naive loop and hand-made cases."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentlab.errors import DataError
from sentlab.evaluation.uncertainty import (
    bootstrap_interval,
    headline,
    mean_items,
    pair_items,
    paired_difference,
    parts_items,
    seed_item_difference,
)


def test_mean_interval_equals_a_naive_loop_over_the_same_resamples():
    values = np.random.default_rng(3).random(50)
    low, high = bootstrap_interval(mean_items(values, "k"), resamples=200, seed=7)
    indices = np.random.default_rng(7).integers(0, 50, size=(200, 50))
    naive = sorted(100 * sum(values[j] for j in row) / 50 for row in indices)
    # the vectorised mean and the Python sum add the same numbers in another order: 1e-9 covers it
    assert low == pytest.approx(np.quantile(naive, 0.025), abs=1e-9)
    assert high == pytest.approx(np.quantile(naive, 0.975), abs=1e-9)
    assert low < 100 * values.mean() < high


def test_spearman_items_headline_and_interval():
    rng = np.random.default_rng(0)
    gold = rng.random(80)
    predicted = gold + 0.3 * rng.random(80)
    items = pair_items("spearman", gold, predicted, "k")
    assert headline(items) == pytest.approx(100 * spearmanr(gold, predicted)[0])
    low, high = bootstrap_interval(items, resamples=200)
    assert low < headline(items) < high <= 100


def test_paired_difference_sees_a_constant_shift_exactly():
    base = np.linspace(0, 0.5, 40)
    shifted = paired_difference(mean_items(base + 0.2, "k"), mean_items(base, "k"), resamples=100)
    # every resample differs by exactly 20 points: the interval has no width and excludes 0
    assert shifted.difference == pytest.approx(20.0) and shifted.low == pytest.approx(20.0)
    assert shifted.high == pytest.approx(20.0) and not shifted.inside_noise
    same = paired_difference(mean_items(base, "k"), mean_items(base, "k"), resamples=100)
    assert same.inside_noise and "inside the noise" in same.describe()


def test_noisy_difference_is_inside_the_noise():
    rng = np.random.default_rng(1)
    a, b = rng.random(30), rng.random(30)  # two draws of the same distribution
    difference = paired_difference(mean_items(a, "k"), mean_items(b, "k"))
    assert difference.low < difference.difference < difference.high and difference.inside_noise


def test_different_items_are_not_compared():
    with pytest.raises(DataError, match="same items"):
        paired_difference(mean_items([1, 2], "a"), mean_items([1, 2], "b"))


def _two_parts(shift: float = 0.0) -> dict:
    """A headline over two tasks of different sizes and statistics (like the STS average)."""
    rng = np.random.default_rng(5)
    gold = rng.random(30)
    return parts_items(
        [
            pair_items("spearman", gold, gold + 0.5 * rng.random(30), "sts"),
            mean_items(rng.random(12) + shift, "queries"),
        ]
    )


def test_a_headline_over_parts_is_the_mean_of_the_parts_and_resamples_each_part_alone():
    items = _two_parts()
    spearman_part, mean_part = items["parts"]
    assert headline(items) == pytest.approx((headline(spearman_part) + headline(mean_part)) / 2)
    low, high = bootstrap_interval(items, resamples=100, seed=3)
    # naive stratified bootstrap: each part drawn with replacement from itself, in the parts' order
    rng = np.random.default_rng(3)
    first, second = rng.integers(0, 30, size=(100, 30)), rng.integers(0, 12, size=(100, 12))
    gold, predicted = np.asarray(spearman_part["gold"]), np.asarray(spearman_part["predicted"])
    values = np.asarray(mean_part["values"])
    naive = [(100 * spearmanr(gold[i], predicted[i])[0] + 100 * values[j].mean()) / 2 for i, j in zip(first, second)]
    # the same numbers summed in another order: 1e-9 covers the rounding
    assert low == pytest.approx(np.quantile(naive, 0.025), abs=1e-9)
    assert high == pytest.approx(np.quantile(naive, 0.975), abs=1e-9)


def test_one_part_compares_exactly_as_the_part_itself():
    rng = np.random.default_rng(2)
    seeds = [mean_items(rng.random(40) + 0.1 * s, "k") for s in range(3)]
    start = [mean_items(rng.random(40), "k")]
    plain = seed_item_difference(seeds, start, resamples=200)
    wrapped = seed_item_difference([parts_items([s]) for s in seeds], [parts_items(start)], resamples=200)
    assert wrapped.to_dict() == plain.to_dict()


def test_parts_are_compared_only_with_the_same_parts():
    shifted = paired_difference(_two_parts(0.2), _two_parts(), resamples=100)
    assert shifted.difference == pytest.approx(10.0)  # 20 points on one of two parts
    assert shifted.low == pytest.approx(10.0) and shifted.high == pytest.approx(10.0)
    with pytest.raises(DataError, match="same items"):
        paired_difference(_two_parts(), _two_parts()["parts"][1])


def test_a_value_without_a_definition_is_left_out_as_the_headline_leaves_it_out():
    values = [0.2, float("nan"), 0.6, 0.4]  # e.g. Kendall's tau of a sample whose predictions are all equal
    assert headline(mean_items(values, "k")) == pytest.approx(40.0)
    low, high = bootstrap_interval(mean_items(values, "k"), resamples=200)
    assert 20.0 <= low <= 40.0 <= high <= 60.0
