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
from pathlib import Path

import numpy as np

from sentlab.encoders.matryoshka import truncate
from sentlab.quantize import calibration_rows, quantize, ranges_of


def calibration_sample(path: str | Path) -> list[str]:
    """The sentences of a text file (one a line) that set int8's and uint8's ranges: the seeded sample
    of :func:`sentlab.quantize.calibration_rows` (every line of a file of at most 10,000)."""
    from sentlab.data.tables import sentence_table

    table = sentence_table(path)
    return table.select(calibration_rows(len(table)))["sentence"]


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
        self._sample = list(calibration or [])
        self._ranges_by_prompt: dict[str, np.ndarray] = {}  # a prompt -> the ranges of its prompted sample
        if precision.endswith("int8"):
            self.ranges = ranges_of(self._floats(self._sample))
            digest = hashlib.sha256("\n".join(self._sample).encode("utf-8")).hexdigest()
            self.calibration = {"sentences": len(self._sample), "sha256": digest, "prompts": []}

    def use_prompts(self, prompts: Sequence[str]) -> None:
        """Texts that begin with one of ``prompts`` are quantized with the ranges of the calibration sample
        under that prompt, as ``sentlab encode --prompt`` calibrates its codes (int8 / uint8 only)."""
        from sentlab.encoders.prompts import prompted

        if self.ranges is None:
            return
        for prompt in prompts:
            if prompt and prompt not in self._ranges_by_prompt:
                self._ranges_by_prompt[prompt] = ranges_of(self._floats(prompted(self._sample, prompt)))
        self.calibration["prompts"] = sorted(self._ranges_by_prompt)

    def _codes(self, sentences: list[str], floats: np.ndarray) -> np.ndarray:
        """int8 / uint8 codes of ``floats``, each row with the ranges of its text's prompt (the longest
        known prompt it begins with), else those of the plain sample."""
        if not self._ranges_by_prompt:
            return quantize(floats, self.precision, self.ranges)
        longest = sorted(self._ranges_by_prompt, key=len, reverse=True)
        which = [next((p for p in longest if text.startswith(p)), "") for text in sentences]
        codes = np.empty(floats.shape, dtype=np.uint8 if self.precision == "uint8" else np.int8)
        for prompt in set(which):
            rows = [i for i, p in enumerate(which) if p == prompt]
            ranges = self._ranges_by_prompt.get(prompt, self.ranges)
            codes[rows] = quantize(floats[rows], self.precision, ranges)
        return codes

    def _floats(self, sentences: list[str], **kwargs) -> np.ndarray:
        """The first ``dims`` dimensions, unit length: what ``sentlab encode`` stores at this precision
        (it normalises before quantizing too), so the codes scored are the codes it writes."""
        embeddings = self.cache.encode(sentences, **kwargs)
        return truncate(embeddings, self.dims or embeddings.shape[1]) if len(embeddings) else embeddings

    def encode(self, sentences: Sequence[str], **kwargs) -> np.ndarray:
        """The vectors a search over the stored codes compares (module doc), float32."""
        floats = self._floats(list(sentences), **kwargs)
        if self.precision == "float32" or len(floats) == 0:
            return floats
        if self.precision.endswith("binary"):  # binary and ubinary store the same bits
            bits = np.unpackbits(quantize(floats, "ubinary"), axis=1)
            return bits[:, : floats.shape[1]].astype(np.float32) * 2 - 1
        codes = self._codes(list(sentences), floats).astype(np.float32)
        return codes - 128.0 if self.precision == "uint8" else codes  # uint8: int8's codes shifted

    def stored_form(self) -> dict:
        """What the report records: the dimensions, the precision and int8's calibration sample."""
        return {
            "dims": self.dims,
            "embedding_precision": self.precision,
            "normalize": True,
            "calibration": self.calibration,
        }
