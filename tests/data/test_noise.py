import numpy as np
import pytest
from scipy.stats import binomtest

from sentlab.data.noise import NOISE_TYPES, NoisyPairs, add_noise, corpus_vocabulary

WORDS = [f"w{i}" for i in range(20)]


def test_deletion_ratio_is_the_share_deleted_not_kept():
    rng = np.random.default_rng(0)
    kept = sum(len(add_noise(WORDS, "delete", 0.6, rng)) for _ in range(2000))
    total = 2000 * len(WORDS)
    # kept ~ Binomial(n, 0.4) (the guarantee of one word almost never fires with 20 words);
    # a script that keeps 60 % would sit ~100 standard deviations away
    assert binomtest(kept, total, 0.4).pvalue > 1e-4
    assert binomtest(kept, total, 0.6).pvalue < 1e-12


def test_deletion_keeps_at_least_one_word_in_order():
    rng = np.random.default_rng(1)
    for _ in range(500):
        out = add_noise(["a", "b", "c"], "delete", 0.99, rng)
        assert len(out) >= 1
        assert out == [w for w in ["a", "b", "c"] if w in out]  # order kept


def test_swap_mask_replace_add_by_counting():
    rng = np.random.default_rng(2)
    vocab = ["x1", "x2", "x3"]
    swapped, masked, replaced, added = 0, 0, 0, 0
    for _ in range(1000):
        out = add_noise(WORDS, "swap", 0.3, rng)
        assert sorted(out) == sorted(WORDS)  # a permutation
        swapped += sum(a != b for a, b in zip(out, WORDS))
        out = add_noise(WORDS, "mask", 0.3, rng, mask_token="<M>")
        assert len(out) == len(WORDS) and all(o in ("<M>", w) for o, w in zip(out, WORDS))
        masked += out.count("<M>")
        out = add_noise(WORDS, "replace", 0.3, rng, vocabulary=vocab)
        assert all(o == w or o in vocab for o, w in zip(out, WORDS))
        replaced += sum(o in vocab for o in out)
        out = add_noise(WORDS, "add", 0.3, rng, vocabulary=vocab)
        assert [o for o in out if o not in vocab] == WORDS  # originals in order, additions between
        added += len(out) - len(WORDS)
    total = 1000 * len(WORDS)
    for count in (masked, replaced, added):
        assert binomtest(count, total, 0.3).pvalue > 1e-4
    assert 0.2 * total < swapped < 0.3 * total  # selected words move unless they land on their own slot


def test_unknown_noise_and_missing_vocabulary_are_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown noise type"):
        add_noise(WORDS, "shuffle", 0.3, rng)
    with pytest.raises(ValueError, match="vocabulary"):
        add_noise(WORDS, "replace", 0.3, rng)
    assert set(NOISE_TYPES) == {"delete", "swap", "mask", "replace", "add"}


def test_noise_is_drawn_afresh_per_read_and_reproducible_by_seed():
    sentence = " ".join(WORDS)
    batch = {"sentence": [sentence], "label": [7]}
    a, b = NoisyPairs("delete", 0.6, seed=3), NoisyPairs("delete", 0.6, seed=3)
    first, second = a(batch)["noisy"][0], a(batch)["noisy"][0]
    assert first != second  # a new draw the second time the row is read
    assert [b(batch)["noisy"][0], b(batch)["noisy"][0]] == [first, second]  # same seed, same draws
    assert NoisyPairs("delete", 0.6, seed=4)(batch)["noisy"][0] != first
    out = a(batch)
    assert list(out) == ["noisy", "sentence"] and out["sentence"] == [sentence]


def test_corpus_vocabulary_is_distinct_words_in_order():
    assert corpus_vocabulary(["a b a", "c b"]) == ["a", "b", "c"]
