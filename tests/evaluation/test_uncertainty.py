"""Bootstrap intervals and paired differences against a naive loop and hand-made cases."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentlab.errors import DataError
from sentlab.evaluation.uncertainty import (bootstrap_interval, headline, mean_items, pair_items,
                                            paired_difference)


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
