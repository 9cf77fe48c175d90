"""Matryoshka embeddings (Kusupati et al. 2022): a model trained so that the first K dimensions of its
embedding, re-normalised, are an embedding of their own for every K it was trained at.

Training wraps the method's loss in sentence-transformers' ``MatryoshkaLoss`` (``train.matryoshka_dims``);
the saved model records the dimensions and weights it was trained at in ``sentlab_matryoshka.json``
beside its weights, which :func:`trained_dims` reads back (``sentlab encode --dims`` says whether a
dimension is one of them). :func:`truncate` is what every reader of a shorter embedding applies.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sentlab.errors import DataError
from sentlab.paths import write_text_atomic

MATRYOSHKA_FILE = "sentlab_matryoshka.json"


def save_dims(folder: str | Path, dims: list[int], weights: list[float]) -> None:
    """Record in a saved model's folder the Matryoshka dimensions (largest first) and their weights."""
    order = sorted(range(len(dims)), key=lambda i: -dims[i])
    record = {"dims": [int(dims[i]) for i in order], "weights": [float(weights[i]) for i in order]}
    write_text_atomic(Path(folder) / MATRYOSHKA_FILE, json.dumps(record, indent=1) + "\n")


def trained_dims(folder: str | Path) -> list[int] | None:
    """The dimensions a saved model was trained at with Matryoshka, or None (not trained so, or not a
    folder of sentlab's)."""
    path = Path(folder) / MATRYOSHKA_FILE
    if not path.is_file():
        return None
    return [int(d) for d in json.loads(path.read_text("utf-8"))["dims"]]


def truncate(embeddings: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` columns, each row re-normalised to unit length (a zero row stays zero)."""
    if not 1 <= dims <= embeddings.shape[1]:
        raise DataError(f"--dims {dims}: the model's embeddings have {embeddings.shape[1]} dimensions")
    head = np.asarray(embeddings[:, :dims], dtype=np.float32)
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    return head / np.where(norms > 0, norms, 1.0)
