"""Pair scorers: how a model turns two lists of sentences into similarity scores.

Evaluators take a :class:`PairScorer`, so a method with its own similarity (RankEncoder's Eq. 7)
is evaluated by the same code as plain cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from sentence_transformers import SentenceTransformer

from sentlab.progress import bars, say


class PairScorer(Protocol):
    name: str

    def encode(self, sentences: Sequence[str]) -> np.ndarray: ...

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray: ...


def encode_unique(model: SentenceTransformer, sentences: Sequence[str], batch_size: int = 128,
                  show_progress_bar: bool = False) -> tuple[np.ndarray, dict[str, int]]:
    """Embeddings of the distinct sentences (float32, not normalised) and each sentence's row."""
    unique = list(dict.fromkeys(sentences))
    embeddings = model.encode(unique, batch_size=batch_size, convert_to_numpy=True,
                              show_progress_bar=show_progress_bar)
    return np.asarray(embeddings, dtype=np.float32), {s: i for i, s in enumerate(unique)}


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two equally long matrices (float64)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-12)


class CosineScorer:
    """Cosine similarity of the model's embeddings; each distinct sentence is encoded once."""

    def __init__(self, model: SentenceTransformer, batch_size: int = 128, name: str = "model",
                 show_progress_bar: bool = False):
        self.model = model
        self.batch_size = batch_size
        self.name = name
        self.show_progress_bar = show_progress_bar

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        embeddings, index = encode_unique(self.model, sentences, self.batch_size, self.show_progress_bar)
        return embeddings[[index[s] for s in sentences]]

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray:
        embeddings, index = encode_unique(self.model, [*sentences1, *sentences2], self.batch_size,
                                          self.show_progress_bar)
        return cosine_rows(embeddings[[index[s] for s in sentences1]], embeddings[[index[s] for s in sentences2]])


class EmbeddingCache:
    """A stand-in for a model's ``encode`` that encodes each distinct sentence once, ever.

    Several scorers over the same encoder (cosine, Eq. 7 at several lambdas, analyses) share one
    cache, so the encoder runs once per sentence. Embeddings are returned as float32 numpy arrays.
    At most ``max_rows`` sentences are kept: a large retrieval pool (CQADupStack's 389k titles) is
    encoded without filling memory with rows no other task asks for again.
    """

    def __init__(self, model: SentenceTransformer, max_rows: int = 200_000):
        self.model = model
        self.device = model.device
        self.max_seq_length = model.max_seq_length
        self.max_rows = max_rows
        self._rows: dict[str, np.ndarray] = {}

    def encode(self, sentences: Sequence[str], batch_size: int = 128, show_progress_bar: bool = False,
               **kwargs) -> np.ndarray:
        missing = [s for s in dict.fromkeys(sentences) if s not in self._rows]
        new: dict[str, np.ndarray] = {}
        if missing:
            many = len(missing) > 4 * batch_size
            if many:
                say(f"encoding {len(missing):,} sentences")
            encoded = self.model.encode(missing, batch_size=batch_size, convert_to_numpy=True,
                                        show_progress_bar=show_progress_bar or (many and bars()))
            new = dict(zip(missing, np.asarray(encoded, dtype=np.float32)))
            room = max(0, self.max_rows - len(self._rows))
            self._rows.update(list(new.items())[:room])
        if not sentences:
            return np.zeros((0, 0), np.float32)
        return np.stack([self._rows[s] if s in self._rows else new[s] for s in sentences])
