"""A corpus index: a corpus C encoded once by a base encoder (RankEncoder Sec. 3.2, App. A.7).

Folder layout::

    INDEX/index.json        format version, encoder name + fingerprint, corpus sha256, n, dim, and the
                            size of each file (the record, written last)
    INDEX/sentences.arrow   the corpus, one sentence a row (an Arrow stream, column ``sentence``)
    INDEX/vectors.npy       (n, dim) float32, L2-normalised rows

The encoder fingerprint is a sha256 over the model's module configs and weights, so an index is
refused (one-line error) when used with any other encoder, including a later checkpoint of the same
run. The folder is written as every cached folder is (:mod:`sentlab.cache_folder`): built aside,
``index.json`` last, renamed into place; a folder whose files are not the sizes its record gives is
refused. Loading writes nothing: ``vectors.npy`` is memory-mapped (copy-on-write: never written back)
and ``sentences.arrow`` is memory-mapped as it is, so a RankEncoder model loads from a read-only
folder, needs no cache and makes no copy of its corpus, and a large index costs no memory until its
rows are read. Building encodes :data:`BUILD_CHUNK` sentences at a time into a file-backed array and
writes the sentences in chunks, so neither the text nor the vectors of a corpus of millions of
sentences need to be in memory. Encoding can be sharded over several devices
(or CPU processes) with sentence-transformers' own multi-process pool.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from sentlab.cache_folder import read_record, write_folder
from sentlab.data.text_conversion import SCHEMA
from sentlab.errors import DataError

FORMAT_VERSION = 2  # 2: the sentences as an Arrow file in the folder, the files' sizes in the record
INDEX_FILES = {"meta": "index.json", "sentences": "sentences.arrow", "vectors": "vectors.npy"}


BUILD_CHUNK = 65_536  # sentences CorpusIndex.build encodes at a time


def _file_backed(shape: tuple[int, int]) -> np.memmap:
    """A float32 array on an unnamed temporary file: its pages are the file's, which the kernel writes
    back and drops under pressure, so a corpus's vectors need not fit in memory beside its text."""
    return np.memmap(tempfile.TemporaryFile(prefix="sentlab-index-"), dtype=np.float32, mode="w+", shape=shape)


class StaleIndexError(DataError):
    """The index was built from another encoder or another corpus than the one in use."""


def corpus_sha256(sentences: Iterable[str]) -> str:
    """sha256 of the sentences, each followed by a newline (a text file's bytes, one sentence a line)."""
    digest = hashlib.sha256()
    for _, chunk in _chunks(sentences):
        digest.update("".join(s + "\n" for s in chunk).encode("utf-8"))
    return digest.hexdigest()


def _chunks(sentences: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """``sentences`` (a list, a table's lazy column or any iterable) :data:`BUILD_CHUNK` at a time,
    with the index of each chunk's first sentence."""
    size = BUILD_CHUNK
    if hasattr(sentences, "__len__") and hasattr(sentences, "__getitem__"):  # a list or a table's column
        for start in range(0, len(sentences), size):
            yield start, list(sentences[start : start + size])
        return
    chunk: list[str] = []
    start = 0
    for sentence in sentences:
        chunk.append(sentence)
        if len(chunk) == size:
            yield start, chunk
            start, chunk = start + size, []
    if chunk:
        yield start, chunk


def encoder_fingerprint(model: SentenceTransformer) -> str:
    """sha256 of the encoder's module types, configs, max length and weights (training heads excluded).

    A model run on another backend keeps its fp32 fingerprint for fp32 and gets a different one for
    int8 / fp16 / bf16, so an index built from quantised vectors is never taken for the fp32 model's.
    """
    from sentlab.encoders.heads import SimCSEMLPHead

    inference = getattr(model, "sentlab_inference", None)
    if inference:  # set by sentlab.encoders.backends.accelerate: its module no longer holds the weights
        return inference["fingerprint"]
    digest = hashlib.sha256()
    digest.update(str(model.max_seq_length).encode())
    for name, module in model.named_children():
        if isinstance(module, SimCSEMLPHead):
            continue
        digest.update(f"{name}:{type(module).__module__}.{type(module).__qualname__}".encode())
        config = getattr(module, "get_config_dict", None)
        if callable(config):
            digest.update(json.dumps(config(), sort_keys=True, default=str).encode())
        for key, tensor in sorted(module.state_dict().items()):
            digest.update(key.encode())
            digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class CorpusIndex:
    """Corpus sentences and their L2-normalised base-encoder vectors, with provenance.

    ``sentences`` is a list or, for a loaded index, the lazy column of a memory-mapped table
    (``datasets``' ``Column``: indexing and slicing read only those rows)."""

    sentences: Sequence[str]
    vectors: np.ndarray
    encoder_name: str
    encoder_fingerprint: str
    corpus_sha256: str
    extra: dict[str, Any] = field(default_factory=dict)
    _tensors: dict[str, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @classmethod
    def build(
        cls,
        model: SentenceTransformer,
        sentences: Sequence[str],
        encoder_name: str,
        batch_size: int = 128,
        devices: Sequence[str] | None = None,
        show_progress_bar: bool = False,
        encode: Callable[[list[str]], np.ndarray] | None = None,
        sha256: str | None = None,
    ) -> CorpusIndex:
        """Encode ``sentences`` (a list or a table's column) with ``model`` (or with ``encode``, e.g. an
        embedding cache's, whose rows are then L2-normalised); with several ``devices``, shard over
        processes. :data:`BUILD_CHUNK` sentences are encoded at a time into a file-backed array, so
        the vectors of a large corpus never need to fit in memory. ``sha256``: the corpus hash when
        already known (a text file's table records it), else it is computed."""
        if len(sentences) == 0:
            raise DataError("cannot build an index of an empty corpus")
        device: Any = list(devices) if devices and len(devices) > 1 else (devices[0] if devices else None)
        vectors = _file_backed((len(sentences), model.get_embedding_dimension()))
        for start, chunk in _chunks(sentences):
            if encode is not None:
                rows = np.asarray(encode(chunk), dtype=np.float32)
                rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
            else:
                rows = model.encode(
                    chunk,
                    batch_size=batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=show_progress_bar,
                    device=device,
                )
            vectors[start : start + len(chunk)] = rows
        return cls(sentences, vectors, encoder_name, encoder_fingerprint(model), sha256 or corpus_sha256(sentences))

    def save(self, folder: str | Path) -> Path:
        """Write the index to ``folder`` (:func:`sentlab.cache_folder.write_folder`: built aside,
        ``index.json`` last, then renamed into place; an index saved over the one it was loaded from
        keeps reading its old, memory-mapped files until it lets them go)."""
        import pyarrow as pa

        folder = Path(folder)
        if folder.is_dir() and any(folder.iterdir()) and not (folder / INDEX_FILES["meta"]).is_file():
            raise DataError(f"{folder}: exists and is not an index (saving replaces the folder); choose another")

        def write(partial: Path) -> dict:
            with (partial / INDEX_FILES["vectors"]).open("wb") as out:
                np.save(out, np.asarray(self.vectors, dtype=np.float32))
            with (
                pa.OSFile(str(partial / INDEX_FILES["sentences"]), "wb") as sink,
                pa.ipc.new_stream(sink, SCHEMA) as out,
            ):
                for _, chunk in _chunks(self.sentences):
                    out.write_batch(pa.record_batch([pa.array(chunk, pa.string())], schema=SCHEMA))
            return {
                "format_version": FORMAT_VERSION,
                "encoder": {"name": self.encoder_name, "fingerprint": self.encoder_fingerprint},
                "corpus_sha256": self.corpus_sha256,
                "n_sentences": len(self),
                "dim": self.dim,
                **self.extra,
            }

        write_folder(folder, write, INDEX_FILES["meta"])
        return folder

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = True) -> CorpusIndex:
        """The index in ``folder``, reading nothing but its own files and writing nothing: its sentences
        as a memory-mapped table's column, its vectors memory-mapped."""
        from datasets import Dataset

        folder = Path(folder)
        paths = {key: folder / name for key, name in INDEX_FILES.items()}
        if not paths["meta"].is_file():
            raise DataError(f"{folder}: not a sentlab index (index.json missing; build one with `sentlab index build`)")
        try:
            meta = json.loads(paths["meta"].read_text("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise DataError(f"{paths['meta']}: not valid JSON") from None
        if meta.get("format_version") == 1 and (folder / "sentences.txt").is_file():
            return cls._load_v1(folder, meta, mmap)
        if meta.get("format_version") != FORMAT_VERSION:
            raise DataError(
                f"{paths['meta']}: index format {meta.get('format_version')!r}, not {FORMAT_VERSION}; "
                "rebuild it with `sentlab index build`"
            )
        if read_record(folder, {"format_version": FORMAT_VERSION}, INDEX_FILES["meta"]) is None:
            raise StaleIndexError(
                f"{folder}: incomplete or changed (its files are not the ones index.json lists); rebuild the index"
            )
        sentences = Dataset.from_file(str(paths["sentences"]))["sentence"]
        vectors = np.load(paths["vectors"], mmap_mode="c" if mmap else None, allow_pickle=False)
        if vectors.ndim != 2 or vectors.shape != (len(sentences), meta["dim"]) or vectors.dtype != np.float32:
            raise DataError(
                f"{paths['vectors']}: expected float32 ({len(sentences)}, {meta['dim']}), "
                f"got {vectors.dtype} {vectors.shape}"
            )
        known = {"format_version", "encoder", "corpus_sha256", "n_sentences", "dim", "files"}
        return cls(
            sentences,
            vectors,
            meta["encoder"]["name"],
            meta["encoder"]["fingerprint"],
            meta["corpus_sha256"],
            {k: v for k, v in meta.items() if k not in known},
        )

    @classmethod
    def _load_v1(cls, folder: Path, meta: dict, mmap: bool) -> CorpusIndex:
        """An index saved in format 1 (its sentences as ``sentences.txt``), read as that format was:
        the text converted into the cache (which must be writable) and checked against the recorded
        hash. Saving it again writes format 2."""
        from sentlab.data.tables import sentence_table, text_record

        text = folder / "sentences.txt"
        if text_record(text)["sha256"] != meta["corpus_sha256"]:
            raise StaleIndexError(f"{text}: corpus differs from the one the index was built from; rebuild the index")
        sentences = sentence_table(text)["sentence"]
        vectors = np.load(folder / INDEX_FILES["vectors"], mmap_mode="c" if mmap else None, allow_pickle=False)
        if vectors.shape != (len(sentences), meta["dim"]) or vectors.dtype != np.float32:
            raise DataError(f"{folder / INDEX_FILES['vectors']}: expected float32 ({len(sentences)}, {meta['dim']})")
        known = {"format_version", "encoder", "corpus_sha256", "n_sentences", "dim"}
        extra = {k: v for k, v in meta.items() if k not in known}
        return cls(
            sentences, vectors, meta["encoder"]["name"], meta["encoder"]["fingerprint"], meta["corpus_sha256"], extra
        )

    def check_encoder(self, model: SentenceTransformer, fingerprint: str | None = None) -> None:
        """Refuse an index built by another encoder than ``model``."""
        if (fingerprint or encoder_fingerprint(model)) != self.encoder_fingerprint:
            raise StaleIndexError(
                f"index was built with encoder {self.encoder_name!r} (fingerprint {self.encoder_fingerprint[:12]}), "
                "which is not the encoder in use; rebuild it with `sentlab index build`"
            )

    def check_corpus(self, sentences: Sequence[str], sha256: str | None = None) -> None:
        """Refuse an index of another corpus than ``sentences`` (or than the corpus whose hash is
        ``sha256``, when known)."""
        if (sha256 or corpus_sha256(sentences)) != self.corpus_sha256:
            raise StaleIndexError(
                f"index corpus differs from the given corpus ({len(self)} indexed sentences, "
                f"{len(sentences)} given); rebuild the index"
            )

    def tensor(self, device: str | torch.device = "cpu") -> torch.Tensor:
        """The vectors as a float32 tensor on ``device`` (cached; on CPU it shares the memory map)."""
        key = str(torch.device(device))
        if key not in self._tensors:
            self._tensors[key] = torch.from_numpy(self.vectors).to(device)
        return self._tensors[key]
