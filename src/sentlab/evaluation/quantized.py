"""Scoring a model at a given dimension and precision: what search over stored, smaller embeddings
would see (``sentlab eval --dims K --embedding-precision P``).

:class:`QuantizedEmbeddings` stands in for the embedding cache: each embedding is truncated to its
first K dimensions and re-normalised (:func:`sentlab.encoders.matryoshka.truncate`), quantized
(:func:`sentlab.quantize.quantize`) and handed to the scorer as the vector a search over the stored
codes compares: float16 as stored; int8 / uint8 as their 256 codes (uint8 shifted by 128, so both
score alike), int8's ranges from a calibration sample of sentences encoded first (recorded in the
report's settings); binary / ubinary as +1 / -1 a bit, whose cosine is 1 - 2 x Hamming distance / K,
the order a Hamming search returns. Every scorer of cosines then scores the stored form.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from sentlab.encoders.matryoshka import truncate
from sentlab.quantize import quantize, ranges_of


class QuantizedEmbeddings:
    """``encode(sentences)`` of ``cache`` at ``dims`` dimensions (None: all) and ``precision``.

    Args:
        cache: what encodes (:class:`~sentlab.evaluation.scoring.EmbeddingCache`).
        dims: keep the first ``dims`` dimensions, re-normalised.
        precision: one of :data:`sentlab.quantize.PRECISIONS`.
        calibration: the sentences whose embeddings set int8's / uint8's ranges (needed for those).
    """

    def __init__(self, cache, dims: int | None, precision: str, calibration: Sequence[str] | None = None):
        self.cache, self.dims, self.precision = cache, dims, precision
        self.device = getattr(cache, "device", None)
        self.ranges = None
        self.calibration = None
        if precision.endswith("int8"):
            if not calibration:
                raise ValueError(f"{precision} needs calibration sentences")
            self.ranges = ranges_of(self._floats(list(calibration)))
            digest = hashlib.sha256("\n".join(calibration).encode("utf-8")).hexdigest()
            self.calibration = {"sentences": len(calibration), "sha256": digest}

    def _floats(self, sentences: list[str], **kwargs) -> np.ndarray:
        embeddings = self.cache.encode(sentences, **kwargs)
        return truncate(embeddings, self.dims) if self.dims is not None else embeddings

    def encode(self, sentences: Sequence[str], **kwargs) -> np.ndarray:
        """The vectors a search over the stored codes compares (module doc), float32."""
        floats = self._floats(list(sentences), **kwargs)
        if self.precision == "float32" or len(floats) == 0:
            return floats
        codes = quantize(floats, self.precision, self.ranges)
        if self.precision == "float16":
            return codes.astype(np.float32)
        if self.precision.endswith("int8"):
            return codes.astype(np.float32) - (128.0 if self.precision == "uint8" else 0.0)
        bits = np.unpackbits(
            (codes.astype(np.int16) + 128).astype(np.uint8) if self.precision == "binary" else codes, axis=1
        )
        return bits[:, : floats.shape[1]].astype(np.float32) * 2 - 1

    def stored_form(self) -> dict:
        """What the report records: the dimensions, the precision and int8's calibration sample."""
        return {"dims": self.dims, "embedding_precision": self.precision, "calibration": self.calibration}
