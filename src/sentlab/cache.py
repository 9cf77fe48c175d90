"""sentlab's cache folder: exported inference models and an on-disk embedding cache.

Layout (root: ``$SENTLAB_CACHE``, else ``~/.cache/sentlab``)::

    ROOT/exports/<fingerprint>/<backend>-<precision>/   exported models (sentlab.encoders.backends)
    ROOT/embeddings/<key>.npy                           (n, dim) float32, one row per distinct text
    ROOT/embeddings/<key>.json                          what the rows are: model setting, n, dim, sha256

An embedding entry's key is a sha256 over the model setting (the fp32 model's fingerprint, the
setting's fingerprint, pooling, backend, precision, max length) and the texts, in order. Entries are
written under a temporary name and renamed into place, ``.npy`` first and its ``.json`` last, and the
``.json`` holds the ``.npy``'s size and sha256: an entry killed mid-write, truncated or edited is
detected on read, deleted and encoded again, never returned. Rows are read memory-mapped.

The embedding entries are kept under a size cap (``$SENTLAB_CACHE_MAX_GB``, default 20 GB): after a
write, the least recently used entries are deleted until the total fits. ``sentlab cache info`` and
``sentlab cache clear`` show and empty it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentlab.errors import DataError
from sentlab.progress import say

DEFAULT_MAX_GB = 20.0
FORMAT_VERSION = 1


def cache_root(root: str | Path | None = None) -> Path:
    if root is not None:
        return Path(root)
    env = os.environ.get("SENTLAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sentlab"


def exports_dir(root: str | Path | None = None) -> Path:
    return cache_root(root) / "exports"


def max_bytes_from_env() -> int:
    value = os.environ.get("SENTLAB_CACHE_MAX_GB", str(DEFAULT_MAX_GB))
    try:
        gigabytes = float(value)
    except ValueError:
        raise DataError(f"SENTLAB_CACHE_MAX_GB={value!r}: expected a number of gigabytes") from None
    if gigabytes < 0:
        raise DataError(f"SENTLAB_CACHE_MAX_GB={value!r}: must not be negative")
    return int(gigabytes * 1e9)


def texts_sha256(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "little"))  # length-prefixed: no two lists collide by joining
        digest.update(encoded)
    return digest.hexdigest()


def file_state(path: str | Path) -> dict[str, object]:
    """What a cache built from the file at ``path`` is valid for: its resolved path, size, modification
    time, inode and status-change time. The last two are what copying with the times kept (``cp -p``,
    ``rsync -a``), ``touch -r`` or an editor that restores the mtime cannot fake: writing the file or
    replacing it changes ``st_ctime_ns`` (which no user call sets) or the inode, so a same-size edit
    that keeps the mtime still makes a cached table stale. (Hashing the file on every use would also
    see it, at the cost of reading the whole text each time: 5 GB at about 1 GB/s.)"""
    stat = Path(path).stat()
    return {
        "source": str(Path(path).resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "inode": stat.st_ino,
        "ctime_ns": stat.st_ctime_ns,
    }


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


@dataclass
class EmbeddingStore:
    """Memory-mapped embedding matrices of text lists, keyed by model setting and texts."""

    root: Path
    max_bytes: int = int(DEFAULT_MAX_GB * 1e9)

    @classmethod
    def default(cls) -> EmbeddingStore:
        return cls(cache_root() / "embeddings", max_bytes_from_env())

    @staticmethod
    def key(setting: dict, texts: Sequence[str]) -> str:
        payload = json.dumps({"format": FORMAT_VERSION, "setting": setting}, sort_keys=True)
        return hashlib.sha256(f"{payload}\n{texts_sha256(texts)}".encode()).hexdigest()

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.root / f"{key}.npy", self.root / f"{key}.json"

    def get(self, key: str, n_rows: int) -> np.ndarray | None:
        """The entry's rows (read-only memory map), or None when absent, partial or corrupt (then deleted)."""
        array_path, meta_path = self._paths(key)
        if not meta_path.is_file():
            if array_path.exists():  # the .npy of a write that never finished
                self._delete(key)
            return None
        try:
            meta = json.loads(meta_path.read_text("utf-8"))
            valid = (
                meta.get("format") == FORMAT_VERSION
                and meta["n"] == n_rows
                and array_path.stat().st_size == meta["bytes"]
                and file_sha256(array_path) == meta["sha256"]
            )
            rows = np.load(array_path, mmap_mode="r", allow_pickle=False) if valid else None
            valid = rows is not None and rows.dtype == np.float32 and rows.shape == (meta["n"], meta["dim"])
        except (OSError, ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            say(f"embedding cache entry {key[:12]} is incomplete or corrupt; encoding again")
            self._delete(key)
            return None
        os.utime(meta_path)  # least recently used goes first
        return rows

    def put(self, key: str, rows: np.ndarray, setting: dict) -> bool:
        """Store ``rows`` (float32) under ``key``; False when the entry alone exceeds the size cap."""
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        if rows.nbytes > self.max_bytes:
            return False
        self.root.mkdir(parents=True, exist_ok=True)
        array_path, meta_path = self._paths(key)
        suffix = f".tmp-{os.getpid()}"
        tmp_array, tmp_meta = (
            array_path.with_name(array_path.name + suffix),
            meta_path.with_name(meta_path.name + suffix),
        )
        try:
            with tmp_array.open("wb") as handle:
                np.save(handle, rows, allow_pickle=False)
                handle.flush()
                os.fsync(handle.fileno())
            meta = {
                "format": FORMAT_VERSION,
                "setting": setting,
                "n": int(rows.shape[0]),
                "dim": int(rows.shape[1]),
                "bytes": tmp_array.stat().st_size,
                "sha256": file_sha256(tmp_array),
                "created": time.time(),
            }
            tmp_meta.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            os.replace(tmp_array, array_path)
            os.replace(tmp_meta, meta_path)  # last: the entry exists once its description does
        finally:
            tmp_array.unlink(missing_ok=True)
            tmp_meta.unlink(missing_ok=True)
        self.evict()
        return True

    def _delete(self, key: str) -> None:
        for path in self._paths(key):
            path.unlink(missing_ok=True)

    def entries(self) -> list[tuple[str, int, float]]:
        """(key, bytes, last use) of each complete entry, least recently used first."""
        found = []
        for meta_path in self.root.glob("*.json") if self.root.is_dir() else []:
            array_path = meta_path.with_suffix(".npy")
            if array_path.is_file():
                found.append(
                    (meta_path.stem, array_path.stat().st_size + meta_path.stat().st_size, meta_path.stat().st_mtime)
                )
        return sorted(found, key=lambda entry: entry[2])

    def evict(self) -> list[str]:
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = []
        for key, size, _ in entries:
            if total <= self.max_bytes:
                break
            self._delete(key)
            total -= size
            removed.append(key)
        return removed


def cache_info(root: str | Path | None = None) -> dict:
    root = cache_root(root)
    store = EmbeddingStore(root / "embeddings", max_bytes_from_env())
    entries = store.entries()
    exports = sorted(p for p in exports_dir(root).glob("*/*") if p.is_dir()) if exports_dir(root).is_dir() else []
    return {
        "root": str(root),
        "max_bytes": store.max_bytes,
        "embeddings": {"entries": len(entries), "bytes": sum(size for _, size, _ in entries)},
        "exports": {
            "entries": len(exports),
            "bytes": _folder_bytes(exports_dir(root)),
            "settings": [f"{p.parent.name[:12]}/{p.name}" for p in exports],
        },
    }


def cache_clear(root: str | Path | None = None, what: Sequence[str] = ("embeddings", "exports")) -> int:
    """Delete the named parts of the cache; returns the bytes freed."""
    root = cache_root(root)
    freed = 0
    for part in what:
        folder = root / part
        freed += _folder_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
    return freed
