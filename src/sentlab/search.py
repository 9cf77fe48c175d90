"""Search over stored codes: passages kept as uint8 or binary codes, calibrated on the passages and
centred, searched with faiss, and the candidates ranked again by the float query against the float
passages.

sentence-transformers' ``semantic_search_faiss`` quantizes the query as it quantizes the passages and
compares the codes: uint8 codes run 0-255 from each dimension's lowest value, so their inner product
grows with where a passage lies in each range, not only with its direction; binary codes are each
dimension's sign. :class:`CodeIndex` keeps the query in float32 and centres the codes:

- ``uint8``: faiss's 8-bit scalar quantizer (``IndexScalarQuantizer``, ``QT_8bit``), trained on the
  passages (each dimension's range); faiss decodes each code to the middle of its step and takes the
  float query's inner product with it, so the ranking is the one of the passages' centred values;
- ``ubinary``: a dimension's bit says whether the passage lies above the passages' mean on it (not
  above 0), the query's likewise; faiss ranks by Hamming distance (``IndexBinaryFlat``).

The ``rescore`` × ``top_k`` best candidates are then ranked by the float query's inner product with the
float passages, read from a memory-mapped ``.npy`` (only the candidates' rows are read). With unit
vectors that inner product is the cosine.

Example::

    index = CodeIndex.build(np.load("passages.npy"), "uint8")  # unit float32 rows
    index.save("passages.index")
    ids, scores = CodeIndex.load("passages.index").search(queries, top_k=10)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sentlab.errors import DataError
from sentlab.paths import atomic_path, json_text

PRECISIONS = ("uint8", "ubinary")
FORMAT = 1
META = "index.json"  # written last: a folder without it is a half-written index


class CodeIndex:
    """Passages as codes in a faiss index beside their float32 rows (module doc).

    Args:
        index: the faiss index over the codes (``IndexScalarQuantizer`` or ``IndexBinaryFlat``).
        precision: ``uint8`` or ``ubinary``.
        floats: the float32 passages, one row a passage (a memory map once saved).
        centre: ``ubinary``'s per-dimension threshold (the passages' mean); None for ``uint8``.
    """

    def __init__(self, index, precision: str, floats: np.ndarray, centre: np.ndarray | None = None):
        self.index, self.precision, self.floats, self.centre = index, precision, floats, centre

    @classmethod
    def build(cls, passages: np.ndarray, precision: str) -> CodeIndex:
        """Calibrate on ``passages`` (float32 rows, unit length for cosines) and store their codes."""
        import faiss

        if precision not in PRECISIONS:
            raise DataError(f"index precision {precision!r}: one of {', '.join(PRECISIONS)}")
        floats = np.ascontiguousarray(passages, dtype=np.float32)
        if floats.ndim != 2 or len(floats) < 2:
            raise DataError(f"an index needs two or more passages as rows of floats, got shape {floats.shape}")
        if precision == "uint8":
            index = faiss.IndexScalarQuantizer(
                floats.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
            index.train(floats)
            index.add(floats)
            return cls(index, precision, floats)
        if floats.shape[1] % 8:
            raise DataError(f"ubinary packs 8 dimensions a byte: {floats.shape[1]} dimensions is not a multiple of 8")
        centre = floats.mean(axis=0)
        index = faiss.IndexBinaryFlat(floats.shape[1])
        index.add(np.packbits(floats > centre, axis=1))
        return cls(index, precision, floats, centre)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def bytes_a_passage(self) -> int:
        """The bytes of codes a passage takes in the searched index (the float rows stay on disk)."""
        return self.floats.shape[1] // 8 if self.precision == "ubinary" else self.floats.shape[1]

    def candidates(self, queries: np.ndarray, count: int) -> np.ndarray:
        """The ``count`` best passages of each query by the codes alone, best first."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        count = min(count, len(self))
        if self.precision == "uint8":
            _, ids = self.index.search(queries, count)
        else:
            _, ids = self.index.search(np.packbits(queries > self.centre, axis=1), count)
        return ids

    def search(self, queries: np.ndarray, top_k: int = 10, rescore: int = 2) -> tuple[np.ndarray, np.ndarray]:
        """Each query's ``top_k`` passages (ids and float inner products, best first): the codes' best
        ``rescore`` × ``top_k`` ranked again by the float query against the float passages."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.floats.shape[1]:
            raise DataError(f"queries of shape {queries.shape}: the index holds {self.floats.shape[1]} dimensions")
        found = self.candidates(queries, max(top_k, rescore * top_k))
        ids = np.empty((len(queries), min(top_k, found.shape[1])), dtype=np.int64)
        scores = np.empty(ids.shape, dtype=np.float32)
        for row, (query, candidates) in enumerate(zip(queries, found)):
            candidates = candidates[candidates >= 0]
            exact = np.asarray(self.floats[np.sort(candidates)]) @ query  # rows read in file order
            order = np.argsort(-exact, kind="stable")[: ids.shape[1]]
            ids[row], scores[row] = np.sort(candidates)[order], exact[order]
        return ids, scores

    def save(self, folder: str | Path) -> Path:
        """The codes (faiss's own file format), the float rows and the centre, then ``index.json``."""
        import faiss

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / META).unlink(missing_ok=True)  # no earlier index reads as this one while it is written
        write = faiss.write_index_binary if self.precision == "ubinary" else faiss.write_index
        with atomic_path(folder / "codes.faiss") as partial:
            write(self.index, str(partial))
        with atomic_path(folder / "floats.npy") as partial, partial.open("wb") as handle:
            np.save(handle, np.asarray(self.floats))
        if self.centre is not None:
            with atomic_path(folder / "centre.npy") as partial, partial.open("wb") as handle:
                np.save(handle, self.centre)
        meta = {"format": FORMAT, "precision": self.precision, "passages": len(self), "dim": self.floats.shape[1]}
        with atomic_path(folder / META) as partial:
            partial.write_text(json_text(meta, indent=1), encoding="utf-8")
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> CodeIndex:
        """An index :meth:`save` wrote whole; the float rows memory-mapped. A folder without its
        ``index.json``, or whose files disagree with it, is one line."""
        import faiss

        folder = Path(folder)
        if not (folder / META).is_file():
            raise DataError(f"{folder}: not a whole index (no {META}: never written, or its writing stopped)")
        meta = json.loads((folder / META).read_text("utf-8"))
        if meta.get("format") != FORMAT or meta.get("precision") not in PRECISIONS:
            raise DataError(f"{folder}: an index of another format ({meta.get('format')}); build it again")
        read = faiss.read_index_binary if meta["precision"] == "ubinary" else faiss.read_index
        index = read(str(folder / "codes.faiss"))
        floats = np.load(folder / "floats.npy", mmap_mode="r", allow_pickle=False)
        centre = np.load(folder / "centre.npy", allow_pickle=False) if meta["precision"] == "ubinary" else None
        if index.ntotal != meta["passages"] or floats.shape != (meta["passages"], meta["dim"]):
            raise DataError(f"{folder}: its codes and float rows disagree with {META}; build it again")
        return cls(index, meta["precision"], floats, centre)
