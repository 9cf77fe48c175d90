"""The shared embedding cache: each sentence encoded once, bounded memory, same rows either way."""

from __future__ import annotations

import numpy as np

from sentlab.evaluation.scoring import EmbeddingCache


class CountingModel:
    device = "cpu"
    max_seq_length = 8

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, sentences, **kwargs):
        self.seen += list(sentences)
        return np.asarray([[len(s), s.count("a")] for s in sentences], dtype=np.float32)


def test_each_sentence_is_encoded_once_and_rows_beyond_the_bound_are_not_kept():
    model = CountingModel()
    cache = EmbeddingCache(model, max_rows=2)
    first = cache.encode(["aa", "b", "ccc", "aa"])
    np.testing.assert_array_equal(first, [[2, 2], [1, 0], [3, 0], [2, 2]])
    assert model.seen == ["aa", "b", "ccc"] and len(cache._rows) == 2
    again = cache.encode(["ccc", "aa"])  # "ccc" was not kept: encoded again, same row
    np.testing.assert_array_equal(again, [[3, 0], [2, 2]])
    assert model.seen == ["aa", "b", "ccc", "ccc"]
