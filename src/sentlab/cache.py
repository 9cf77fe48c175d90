"""sentlab's cache folder: exported inference models and an on-disk embedding cache.

Layout (root: ``$SENTLAB_CACHE``, else ``~/.cache/sentlab``)::

    ROOT/exports/<fingerprint>/<backend>-<precision>/   exported models (sentlab.encoders.backends)
    ROOT/embeddings/<key>.npy                           (n, dim) float32, one row per distinct text
    ROOT/embeddings/<key>.json                          what the rows are: model setting, n, dim, sha256
    ROOT/text/<key>/                                    a text's (or a table file's) memory-mapped table,
                                                        its row numbers and the packed blocks made from
                                                        it (sentlab.data.tables)
    ROOT/rse/<key>/                                     RSE's triples table (sentlab.data.relations)

An embedding entry's key is a sha256 over the model setting (the fp32 model's fingerprint, the
setting's fingerprint, pooling, backend, precision, max length) and the texts, in order. Entries are
written under a temporary name and renamed into place, ``.npy`` first and its ``.json`` last, and the
``.json`` holds the ``.npy``'s size and sha256: an entry killed mid-write, truncated or edited is
detected on read, deleted and encoded again, never returned. Rows are read memory-mapped.

The whole cache is kept under one size cap (``$SENTLAB_CACHE_MAX_GB``, default 20 GB): after a write
(an embedding entry, a table), the least recently used entries of every part are deleted until the
total fits, a table being built (its lock held) and the entry just written excepted, and the run log
says what was removed. ``sentlab cache info`` and ``sentlab cache clear`` show and empty every part.
"""

from __future__ import annotations

import contextlib
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
    see it, at the cost of reading the whole text each time: sentlab.data.tables hashes only when size
    and mtime agree but inode or status-change time do not.)"""
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


PARTS = ("embeddings", "exports", "text", "rse")  # every part of the cache, as cache info and clear name them


@dataclass
class CacheEntry:
    """One thing the cache holds: an embedding entry (its .npy and .json), an exported model's folder,
    a table's folder."""

    part: str
    paths: list[Path]
    bytes: int
    last_used: float  # its record's mtime (touched on every use)
    lock: Path | None = None  # held while a folder is built: such a folder is never evicted

    @property
    def name(self) -> str:
        return f"{self.part}/{self.paths[0].name}"


def cache_entries(root: str | Path | None = None) -> list[CacheEntry]:
    """Every entry of every part of the cache, least recently used first (an entry another process
    removes meanwhile is left out)."""
    root = cache_root(root)
    found: list[CacheEntry] = []

    def add(part: str, paths: list[Path], record: Path, lock: Path | None = None) -> None:
        try:
            size = sum(_folder_bytes(p) if p.is_dir() else p.stat().st_size for p in paths)
            found.append(CacheEntry(part, paths, size, record.stat().st_mtime, lock))
        except OSError:  # removed while it was looked at
            pass

    embeddings = root / "embeddings"
    for meta in sorted(embeddings.glob("*.json")) if embeddings.is_dir() else []:
        add("embeddings", [meta.with_suffix(".npy"), meta], meta)
    exports = root / "exports"
    for folder in sorted(exports.glob("*/*")) if exports.is_dir() else []:
        if folder.is_dir():
            add("exports", [folder], folder / "export.json" if (folder / "export.json").is_file() else folder)
    for part in ("text", "rse"):
        for folder in sorted((root / part).iterdir()) if (root / part).is_dir() else []:
            if folder.is_dir() and not folder.name.startswith("."):  # ".NAME.partial-PID": being built
                record = folder / "complete.json"
                add(part, [folder], record if record.is_file() else folder, folder.with_name(folder.name + ".lock"))
    return sorted(found, key=lambda entry: entry.last_used)


def evict_cache(root: str | Path | None = None, max_bytes: int | None = None, keep: Sequence[Path] = ()) -> list[str]:
    """Delete the least recently used entries of the whole cache until it fits ``max_bytes``
    (``$SENTLAB_CACHE_MAX_GB``), except those in ``keep`` (just written), folders being built (their
    lock held) and entries used since the list was made; says what it removed, and returns their
    names. Best effort: nothing on a read-only cache, and an entry another process removes first is
    not counted."""
    from filelock import FileLock, Timeout

    cap = max_bytes_from_env() if max_bytes is None else max_bytes
    entries = cache_entries(root)
    total = sum(entry.bytes for entry in entries)
    kept = {Path(p).resolve() for p in keep}
    removed: list[str] = []
    freed = 0
    for entry in entries:
        if total <= cap:
            break
        if any(p.resolve() in kept for p in entry.paths):
            continue
        try:
            with FileLock(str(entry.lock), timeout=0) if entry.lock else contextlib.nullcontext():
                record = entry.paths[0] / "complete.json" if entry.paths[0].is_dir() else entry.paths[-1]
                if record.exists() and record.stat().st_mtime != entry.last_used:
                    continue  # used since the list was made: no longer the least recent
                existed = [p for p in entry.paths if p.exists()]
                for path in existed:
                    shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        except (Timeout, OSError):  # being built, or a cache this process may not change
            continue
        if not existed:
            continue
        total -= entry.bytes
        freed += entry.bytes
        removed.append(entry.name)
    if removed:
        say(
            f"cache over its cap of {cap / 1e9:g} GB ($SENTLAB_CACHE_MAX_GB): removed the {len(removed)} least "
            f"recently used entries ({freed / 1e6:,.1f} MB): {', '.join(removed)}"
        )
    return removed


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
        with contextlib.suppress(OSError):  # least recently used goes first; nothing on a read-only cache
            os.utime(meta_path)
        return rows

    def put(self, key: str, rows: np.ndarray, setting: dict) -> bool:
        """Store ``rows`` (float32) under ``key``; False when the entry alone exceeds the size cap or the
        cache cannot be written (read-only, full: said once in one line; the vectors are still used)."""
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        if rows.nbytes > self.max_bytes:
            return False
        try:
            self._write(key, rows, setting)
        except OSError as err:
            say(f"embedding cache {self.root}: not stored ({err.strerror or err}); the vectors are used without it")
            return False
        evict_cache(self.root.parent, self.max_bytes, keep=[self._paths(key)[0]])
        return True

    def _write(self, key: str, rows: np.ndarray, setting: dict) -> None:
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
            with contextlib.suppress(OSError):
                tmp_array.unlink(missing_ok=True)
                tmp_meta.unlink(missing_ok=True)

    def _delete(self, key: str) -> None:
        for path in self._paths(key):
            with contextlib.suppress(OSError):  # a read-only cache keeps it (and it is never read as valid)
                path.unlink(missing_ok=True)


def cache_info(root: str | Path | None = None) -> dict:
    """Where the cache is, its cap, and each part's entries and bytes (exports with their settings)."""
    root = cache_root(root)
    entries = cache_entries(root)
    info: dict = {"root": str(root), "max_bytes": max_bytes_from_env()}
    for part in PARTS:
        mine = [entry for entry in entries if entry.part == part]
        info[part] = {"entries": len(mine), "bytes": sum(entry.bytes for entry in mine)}
    info["exports"]["settings"] = [
        f"{e.paths[0].parent.name[:12]}/{e.paths[0].name}" for e in entries if e.part == "exports"
    ]
    return info


def cache_clear(root: str | Path | None = None, what: Sequence[str] = PARTS) -> int:
    """Delete the named parts of the cache; returns the bytes freed."""
    root = cache_root(root)
    freed = 0
    for part in what:
        folder = root / part
        before = _folder_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
        freed += before - _folder_bytes(folder)  # what was really removed (a read-only cache keeps it)
    return freed
