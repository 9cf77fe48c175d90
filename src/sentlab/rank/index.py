"""A corpus index: a corpus C encoded once by a base encoder (RankEncoder Sec. 3.2, App. A.7).

Folder layout::

    INDEX/index.json     format version, encoder name + fingerprint, corpus sha256, n, dim
    INDEX/sentences.txt  the corpus, one sentence a line (UTF-8)
    INDEX/vectors.npy    (n, dim) float32, L2-normalised rows

The encoder fingerprint is a sha256 over the model's module configs and weights, so an index is
refused (one-line error) when used with any other encoder, including a later checkpoint of the same
run. The corpus hash is checked on load, so an edited ``sentences.txt`` is refused too.
``vectors.npy`` is memory-mapped (copy-on-write: never written back), so a large index costs no
memory until its rows are read. Encoding can be sharded over several devices (or CPU processes)
with sentence-transformers' own multi-process pool.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from sentlab.data.readers import read_sentences
from sentlab.errors import DataError

FORMAT_VERSION = 1
INDEX_FILES = {"meta": "index.json", "sentences": "sentences.txt", "vectors": "vectors.npy"}


BUILD_CHUNK = 65_536  # sentences CorpusIndex.build encodes at a time


def _file_backed(shape: tuple[int, int]) -> np.memmap:
    """A float32 array on an unnamed temporary file: its pages are the file's, which the kernel writes
    back and drops under pressure, so a corpus's vectors need not fit in memory beside its text."""
    return np.memmap(tempfile.TemporaryFile(prefix="sentlab-index-"), dtype=np.float32, mode="w+", shape=shape)


class StaleIndexError(DataError):
    """The index was built from another encoder or another corpus than the one in use."""


def corpus_sha256(sentences: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for sentence in sentences:
        digest.update(sentence.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


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
    """Corpus sentences and their L2-normalised base-encoder vectors, with provenance."""

    sentences: list[str]
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
    ) -> CorpusIndex:
        """Encode ``sentences`` with ``model`` (or with ``encode``, e.g. an embedding cache's, whose
        rows are then L2-normalised); with several ``devices``, shard over processes."""
        sentences = list(sentences)
        if not sentences:
            raise DataError("cannot build an index of an empty corpus")
        if encode is not None:
            vectors = np.asarray(encode(sentences), dtype=np.float32)
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        else:
            device: Any = list(devices) if devices and len(devices) > 1 else (devices[0] if devices else None)
            vectors = _file_backed((len(sentences), model.get_embedding_dimension()))
            for start in range(0, len(sentences), BUILD_CHUNK):  # a chunk at a time: no full copy in memory
                vectors[start : start + BUILD_CHUNK] = model.encode(
                    sentences[start : start + BUILD_CHUNK],
                    batch_size=batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=show_progress_bar,
                    device=device,
                )
        return cls(
            sentences,
            vectors if isinstance(vectors, np.memmap) else np.ascontiguousarray(vectors, dtype=np.float32),
            encoder_name,
            encoder_fingerprint(model),
            corpus_sha256(sentences),
        )

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / INDEX_FILES["vectors"], np.asarray(self.vectors, dtype=np.float32))
        (folder / INDEX_FILES["sentences"]).write_text("".join(s + "\n" for s in self.sentences), encoding="utf-8")
        meta = {
            "format_version": FORMAT_VERSION,
            "encoder": {"name": self.encoder_name, "fingerprint": self.encoder_fingerprint},
            "corpus_sha256": self.corpus_sha256,
            "n_sentences": len(self),
            "dim": self.dim,
            **self.extra,
        }
        (folder / INDEX_FILES["meta"]).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        return folder

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = True) -> CorpusIndex:
        folder = Path(folder)
        paths = {key: folder / name for key, name in INDEX_FILES.items()}
        for path in paths.values():
            if not path.is_file():
                raise DataError(
                    f"{folder}: not a sentlab index ({path.name} missing; build one with `sentlab index build`)"
                )
        try:
            meta = json.loads(paths["meta"].read_text("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise DataError(f"{paths['meta']}: not valid JSON") from None
        if meta.get("format_version") != FORMAT_VERSION:
            raise DataError(f"{paths['meta']}: unsupported index format {meta.get('format_version')!r}")
        sentences = read_sentences(paths["sentences"])
        if corpus_sha256(sentences) != meta["corpus_sha256"]:
            raise StaleIndexError(
                f"{paths['sentences']}: corpus differs from the one the index was built from "
                "(hash mismatch); rebuild the index"
            )
        vectors = np.load(paths["vectors"], mmap_mode="c" if mmap else None, allow_pickle=False)
        if vectors.ndim != 2 or vectors.shape != (len(sentences), meta["dim"]) or vectors.dtype != np.float32:
            raise DataError(
                f"{paths['vectors']}: expected float32 ({len(sentences)}, {meta['dim']}), "
                f"got {vectors.dtype} {vectors.shape}"
            )
        known = {"format_version", "encoder", "corpus_sha256", "n_sentences", "dim"}
        return cls(
            sentences,
            vectors,
            meta["encoder"]["name"],
            meta["encoder"]["fingerprint"],
            meta["corpus_sha256"],
            {k: v for k, v in meta.items() if k not in known},
        )

    def check_encoder(self, model: SentenceTransformer, fingerprint: str | None = None) -> None:
        """Refuse an index built by another encoder than ``model``."""
        if (fingerprint or encoder_fingerprint(model)) != self.encoder_fingerprint:
            raise StaleIndexError(
                f"index was built with encoder {self.encoder_name!r} (fingerprint {self.encoder_fingerprint[:12]}), "
                "which is not the encoder in use; rebuild it with `sentlab index build`"
            )

    def check_corpus(self, sentences: Sequence[str]) -> None:
        if corpus_sha256(sentences) != self.corpus_sha256:
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
