"""Pair scorers: how a model turns two lists of sentences into similarity scores.

Evaluators take a :class:`PairScorer`, so a method with its own similarity (RankEncoder's Eq. 7,
RSE's relational score) is evaluated by the same code as plain cosine similarity. An asymmetric
scorer (RSE: :class:`sentlab.evaluation.relational.RelationalScorer`) also has ``query_rows``:
rows whose inner product with a candidate's unit embedding is the score, which the retrieval tasks
(USEB, EvalRank) use for their queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from sentence_transformers import SentenceTransformer

from sentlab.cache import EmbeddingStore
from sentlab.encoders.batching import encode_by_length
from sentlab.encoders.loading import finite_length
from sentlab.progress import bars, say


class PairScorer(Protocol):
    name: str

    def encode(self, sentences: Sequence[str]) -> np.ndarray: ...

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray: ...


def encode_unique(
    model: SentenceTransformer, sentences: Sequence[str], batch_size: int = 128, show_progress_bar: bool = False
) -> tuple[np.ndarray, dict[str, int]]:
    """Embeddings of the distinct sentences (float32, not normalised) and each sentence's row."""
    unique = list(dict.fromkeys(sentences))
    embeddings = model.encode(unique, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=show_progress_bar)
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

    def __init__(
        self, model: SentenceTransformer, batch_size: int = 128, name: str = "model", show_progress_bar: bool = False
    ):
        self.model = model
        self.batch_size = batch_size
        self.name = name
        self.show_progress_bar = show_progress_bar

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        embeddings, index = encode_unique(self.model, sentences, self.batch_size, self.show_progress_bar)
        return embeddings[[index[s] for s in sentences]]

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray:
        embeddings, index = encode_unique(
            self.model, [*sentences1, *sentences2], self.batch_size, self.show_progress_bar
        )
        return cosine_rows(embeddings[[index[s] for s in sentences1]], embeddings[[index[s] for s in sentences2]])


def embedding_setting(model: SentenceTransformer) -> dict:
    """What an embedding depends on besides its text: weights, modules, backend, precision, max length."""
    from sentlab.encoders.backends import inference_setting
    from sentlab.rank.index import encoder_fingerprint

    info = getattr(model, "sentlab_inference", None) or {}
    fingerprint = encoder_fingerprint(model)
    return {
        "fp32_fingerprint": info.get("fp32_fingerprint", fingerprint),
        "fingerprint": fingerprint,
        "modules": [f"{type(m).__module__}.{type(m).__qualname__}" for m in model.children()],
        "pooling": [m.get_config_dict() for m in list(model.children())[1:] if hasattr(m, "get_config_dict")],
        "max_seq_length": finite_length(model),
        # the prompt sentence-transformers puts before every text unasked (default_prompt_name)
        **({"default_prompt": model.prompts.get(model.default_prompt_name, "")} if model.default_prompt_name else {}),
        **inference_setting(model),
    }


class EmbeddingCache:
    """A stand-in for a model's ``encode`` that encodes each distinct sentence once, ever.

    Several scorers over the same encoder (cosine, Eq. 7 at several lambdas, analyses) share one
    cache, so the encoder runs once per sentence. Embeddings are returned as float32 numpy arrays.
    At most ``max_rows`` sentences are kept in memory: a large retrieval pool (CQADupStack's 389k
    titles) is encoded without filling memory with rows no other task asks for again.

    With a ``store`` (:class:`sentlab.cache.EmbeddingStore`), every list of at least
    ``min_store_rows`` distinct texts is also kept on disk, keyed by the model setting
    (:func:`embedding_setting`) and the texts, so a later process with the same model, backend,
    precision and max length encodes none of it again. Encoding batches texts by token length
    (:func:`sentlab.encoders.batching.encode_by_length`).
    """

    def __init__(
        self,
        model: SentenceTransformer,
        max_rows: int = 200_000,
        store: EmbeddingStore | None = None,
        min_store_rows: int = 32,
    ):
        self.model = model
        self.device = model.device
        self.max_seq_length = finite_length(model)
        self.max_rows = max_rows
        self.store = store
        self.min_store_rows = min_store_rows
        self.setting = embedding_setting(model) if store is not None else None
        self._rows: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts the model actually encoded (cache misses), for tests and reports

    def _encode_missing(self, unique: list[str], batch_size: int, show_progress_bar: bool) -> dict[str, np.ndarray]:
        missing = [s for s in unique if s not in self._rows]
        if not missing:
            return {}
        many = len(missing) > 4 * batch_size
        if many:
            say(f"encoding {len(missing):,} sentences")
        encoded = encode_by_length(self.model, missing, batch_size, show_progress_bar or (many and bars()))
        self.encoded += len(missing)
        new = dict(zip(missing, encoded))
        room = max(0, self.max_rows - len(self._rows))
        self._rows.update(list(new.items())[:room])
        return new

    def encode(
        self, sentences: Sequence[str], batch_size: int = 128, show_progress_bar: bool = False, **kwargs
    ) -> np.ndarray:
        if not sentences:
            return np.zeros((0, 0), np.float32)
        unique = list(dict.fromkeys(sentences))
        key = (
            self.store.key(self.setting, unique)
            if self.store is not None and len(unique) >= self.min_store_rows
            else None
        )
        matrix = self.store.get(key, len(unique)) if key is not None else None
        if matrix is None:
            new = self._encode_missing(unique, batch_size, show_progress_bar)
            matrix = np.stack([self._rows[s] if s in self._rows else new[s] for s in unique])
            if key is not None:
                self.store.put(key, matrix, self.setting)
        if len(unique) == len(sentences):
            return np.array(matrix)  # a copy: never a view of the read-only memory map
        position = {s: i for i, s in enumerate(unique)}
        return np.asarray(matrix[[position[s] for s in sentences]])
