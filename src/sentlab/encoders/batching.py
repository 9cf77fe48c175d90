"""Encode with batches of similar token length.

sentence-transformers' ``encode`` sorts a list by character length before batching; token counts
follow character counts only loosely, so batches sorted that way still carry much padding.
Sorting by the tokenizer's own counts first and handing ``encode`` one batch at a time removes most
of it on every backend (the gain is measured by ``benchmarks/perf/inference_backends.py``); the vectors are those of plain ``encode`` (padding is
masked; only float rounding differs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sentence_transformers import SentenceTransformer
from tqdm.auto import tqdm


def token_lengths(model: SentenceTransformer, texts: Sequence[str]) -> np.ndarray | None:
    """Each text's token count as the model will see it (None if the model has no text tokenizer)."""
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None or not callable(tokenizer):
        return None
    encoded = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=model.max_seq_length or None)[
        "input_ids"
    ]
    return np.fromiter((len(ids) for ids in encoded), dtype=np.int64, count=len(texts))


def encode_by_length(
    model: SentenceTransformer,
    texts: Sequence[str],
    batch_size: int = 128,
    show_progress_bar: bool = False,
    normalize_embeddings: bool = False,
) -> np.ndarray:
    """``model.encode(texts)`` as float32 numpy, batched by token length (longest batches first); a
    static model's in order, its tokenizer threaded (:func:`~sentlab.encoders.static.encode_static`)."""
    from sentlab.encoders.static import encode_static, is_static

    texts = list(texts)
    if is_static(model):
        return encode_static(model, texts, batch_size, normalize_embeddings)
    lengths = token_lengths(model, texts) if len(texts) > batch_size else None
    if lengths is None:
        out = model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            show_progress_bar=show_progress_bar,
            normalize_embeddings=normalize_embeddings,
        )
        return np.asarray(out, dtype=np.float32)
    order = np.argsort(-lengths, kind="stable")
    result: np.ndarray | None = None
    for start in tqdm(range(0, len(texts), batch_size), desc="Batches", disable=not show_progress_bar):
        rows = order[start : start + batch_size]
        vectors = model.encode(
            [texts[i] for i in rows],
            batch_size=len(rows),
            convert_to_numpy=True,
            show_progress_bar=False,
            normalize_embeddings=normalize_embeddings,
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        if result is None:
            result = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        result[rows] = vectors
    return result
