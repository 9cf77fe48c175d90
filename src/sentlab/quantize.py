"""Smaller embeddings to store and search: the first K dimensions (:func:`sentlab.encoders.matryoshka.truncate`)
and fewer bytes a dimension, through sentence-transformers' ``quantize_embeddings``.

===========  ===========================  ==================================================
precision    stored as                    bytes a sentence at K dimensions
===========  ===========================  ==================================================
float32      float32                      4 K
float16      float16                      2 K
int8, uint8  one byte a dimension         K (each dimension's range from a calibration sample)
binary       int8, 8 dimensions a byte    ceil(K / 8) (the sign of each dimension)
ubinary      uint8, 8 dimensions a byte   ceil(K / 8)
===========  ===========================  ==================================================

int8 and uint8 map each dimension's [min, max] over a calibration sample (:func:`calibration_rows`:
a seeded sample of the rows, recorded with its size and seed) onto 256 steps; the ranges are kept
beside the output, so later rows are quantized alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: `sentlab --help` reads PRECISIONS alone
    import numpy as np

PRECISIONS = ("float32", "float16", "int8", "uint8", "binary", "ubinary")
CALIBRATION_ROWS = 10_000  # rows whose embeddings set int8's and uint8's ranges
CALIBRATION_SEED = 0


def stored_shape(rows: int, dims: int, precision: str) -> tuple[tuple[int, int], np.dtype]:
    """The matrix ``rows`` embeddings of ``dims`` dimensions take in ``precision``: shape and dtype."""
    import numpy as np

    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: choose from {', '.join(PRECISIONS)}")
    width = (dims + 7) // 8 if precision.endswith("binary") else dims
    dtype = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "binary": np.int8}.get(precision, np.uint8)
    return (rows, width), np.dtype(dtype)


def calibration_rows(rows: int, size: int = CALIBRATION_ROWS, seed: int = CALIBRATION_SEED) -> np.ndarray:
    """The sorted row numbers of the calibration sample: every row when there are at most ``size``."""
    import numpy as np

    if rows <= size:
        return np.arange(rows)
    return np.sort(np.random.default_rng(seed).choice(rows, size=size, replace=False))


def ranges_of(calibration: np.ndarray) -> np.ndarray:
    """Each dimension's [min, max] over the calibration embeddings: shape (2, dims), float32; fewer than
    two rows, or a dimension with one value over them, give no range (every code would be the same) and
    are refused."""
    import numpy as np

    from sentlab.errors import DataError

    if len(calibration) < 2:
        raise DataError(
            f"int8 / uint8 need at least 2 sentences to calibrate each dimension's range, got {len(calibration)}"
        )
    low, high = calibration.min(axis=0), calibration.max(axis=0)
    flat = np.flatnonzero(high <= low)
    if flat.size:  # one value over the sample: no range to spread over 256 codes (every code the same)
        raise DataError(
            f"int8 / uint8: {flat.size} of {low.size} dimensions take one value over the {len(calibration)} "
            f"calibration sentences (the first: {flat[0]}); calibrate on more varied sentences"
        )
    return np.vstack([low, high]).astype(np.float32)


def quantize(embeddings: np.ndarray, precision: str, ranges: np.ndarray | None = None) -> np.ndarray:
    """``embeddings`` (float32) in ``precision``; int8 and uint8 need ``ranges`` (:func:`ranges_of`)."""
    import numpy as np
    from sentence_transformers.util.quantization import quantize_embeddings

    if precision == "float16":
        return embeddings.astype(np.float16)
    if precision.endswith("int8") and ranges is None:
        raise ValueError(f"{precision} needs the ranges of a calibration sample")
    return quantize_embeddings(np.asarray(embeddings, dtype=np.float32), precision, ranges=ranges)
