"""sentlab's cache folder: exported inference models and an on-disk embedding cache.

Layout (root: ``$SENTLAB_CACHE``, else ``~/.cache/sentlab``)::

    ROOT/exports/<fingerprint>/<backend>-<precision>/   exported models (sentlab.encoders.backends)
    ROOT/embeddings/<key>.npy                           (n, dim) float32, one row per distinct text
    ROOT/embeddings/<key>.json                          what the rows are: model setting, n, dim, sha256
    ROOT/text/<key>/                                    a text's (or a table file's) memory-mapped table,
                                                        its row numbers and the packed blocks made from
                                                        it (sentlab.data.tables)
    ROOT/rse/<key>/                                     RSE's triples table (sentlab.data.relations)
    ROOT/models/<org>--<name>/                          a reference model fetched from the package index
                                                        by its hub id (benchmarks/reference_models.py)

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
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentlab.errors import DataError
from sentlab.paths import TEMPORARY, atomic_path, json_text, write_text_atomic
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


def fetched_model_dir(hub_id: str, root: str | Path | None = None) -> Path:
    """Where a reference model fetched by its hub id lives (``ROOT/models/<org>--<name>``)."""
    return cache_root(root) / "models" / hub_id.replace("/", "--")


def fetched_model(hub_id: str, root: str | Path | None = None) -> Path | None:
    """The complete fetched copy of the model ``hub_id`` in the cache (its record valid, every file it
    lists of its size), else None; read only."""
    from sentlab.cache_folder import read_record

    folder = fetched_model_dir(hub_id, root)
    record = read_record(folder, {"hub_id": hub_id})
    if record is None:
        return None
    sizes, hashes = record.get("sizes", {}), record.get("sha256", {})  # every file, its sub-folders' too
    if not isinstance(sizes, dict) or not isinstance(hashes, dict) or set(hashes) - set(sizes):
        return None
    if any(not (folder / name).is_file() or (folder / name).stat().st_size != size for name, size in sizes.items()):
        return None
    # a same-size edit keeps every size: each file's sha256 against the record, once a process per state
    state = tuple((name, (folder / name).stat().st_mtime_ns) for name in sorted(hashes))
    if _verified.get(folder) != state:
        if any(file_sha256(folder / name) != digest for name, digest in hashes.items()):
            return None
        _verified[folder] = state
    return folder


_verified: dict[Path, tuple] = {}  # fetched folders whose files matched their sha256, by the files' mtimes


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


# every part of the cache, as cache info and clear name them, and how deep its entries lie
PARTS = ("embeddings", "exports", "text", "rse", "models")
DEPTH = {
    "embeddings": 1,
    "exports": 2,
    "text": 1,
    "rse": 1,
    "models": 1,
}  # exports: ROOT/exports/<fingerprint>/<setting>
RECORD_OF = {"exports": "export.json"}  # a folder's record (its mtime: last used); else complete.json
# what a build in progress writes, with the writer's PID: write_folder's folders, atomic_path's files,
# and the temporary files of earlier versions of the embedding store
IN_PROGRESS = (re.compile(r"^\..+\.partial-(\d+)$"), TEMPORARY, re.compile(r"^.+\.tmp-(\d+)$"))
ORPHAN_AGE_S = 600.0  # what a build left is a leftover only when nothing in it changed for this long


def _writer(path: Path) -> int | None:
    """The PID of the process writing ``path`` when it is a build in progress (or what one left)."""
    for pattern in IN_PROGRESS:
        found = pattern.match(path.name)
        if found:
            return int(found.group(1))
    return None


def _quiet_for(path: Path, seconds: float = ORPHAN_AGE_S) -> bool:
    """Nothing in ``path`` (a file, or a folder and its files) was written in the last ``seconds``:
    a build on another machine, whose PID this one cannot see, still writes."""
    newest = max((p.stat().st_mtime for p in [path, *path.rglob("*")] if p.exists()), default=0.0)
    return time.time() - newest > seconds


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a cache shared between machines cannot tell)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


@dataclass
class CacheEntry:
    """One thing the cache holds: an embedding entry (its .npy and .json), an exported model's folder,
    a table's folder; or a build in progress (``state`` "building"), or what a killed one left
    (``state`` "leftover": a ``.partial-PID`` folder or a ``.tmp`` file whose process is gone)."""

    part: str
    paths: list[Path]
    bytes: int
    last_used: float  # its record's mtime (touched on every use)
    lock: Path | None = None  # exclusive while built or evicted, shared while a process reads it
    record: Path | None = None
    state: str = "ready"

    @property
    def name(self) -> str:
        return f"{self.part}/{self.paths[0].name}"


def cache_entries(root: str | Path | None = None) -> list[CacheEntry]:
    """Every entry of every part of the cache, by one rule for all parts, least recently used first:
    each part's items at its depth are entries, builds in progress or leftovers (by the PID in their
    name), and lock files are not entries (an entry another process removes meanwhile is left out)."""
    from sentlab.cache_folder import lock_path

    root = cache_root(root)
    found: list[CacheEntry] = []

    def add(part: str, paths: list[Path], record: Path, lock: Path | None = None, state: str = "ready") -> None:
        try:
            size = sum(_folder_bytes(p) if p.is_dir() else p.stat().st_size for p in paths if p.exists())
            found.append(CacheEntry(part, paths, size, record.stat().st_mtime, lock, record, state))
        except OSError:  # removed while it was looked at
            pass

    for part in PARTS:
        base = root / part
        for item in sorted(base.glob("/".join(["*"] * DEPTH[part]))) if base.is_dir() else []:
            writer = _writer(item)
            if item.name.endswith((".lock", ".inuse")):
                continue
            if writer is not None:
                try:
                    gone = not _alive(writer) and _quiet_for(item)
                except OSError:  # removed meanwhile
                    continue
                target = item.with_name(item.name.lstrip(".").split(".partial-")[0]) if item.is_dir() else None
                add(part, [item], item, lock_path(target) if target else None, "leftover" if gone else "building")
            elif part == "embeddings":
                if item.suffix == ".json":
                    add(part, [item.with_suffix(".npy"), item], item)
                elif item.suffix == ".npy" and not item.with_suffix(".json").exists():
                    with contextlib.suppress(OSError):
                        if time.time() - item.stat().st_mtime > ORPHAN_AGE_S:
                            add(part, [item], item, state="leftover")
            elif item.is_dir():
                record = item / RECORD_OF.get(part, "complete.json")
                add(part, [item], record if record.is_file() else item, lock_path(item))
    return sorted(found, key=lambda entry: entry.last_used)


def _remove(entry: CacheEntry, check_use: bool = True) -> bool:
    """Delete ``entry`` under its lock taken exclusively without waiting (an entry being built or read
    by another process is passed over, False); ``check_use``: not if it was used since it was listed."""
    from filelock import FileLock, Timeout

    from sentlab.cache_folder import nobody_reads

    folder = entry.paths[0]
    try:
        with (
            FileLock(str(entry.lock), timeout=0) if entry.lock else contextlib.nullcontext(),
            nobody_reads(folder) if entry.part != "embeddings" else contextlib.nullcontext(True) as free,
        ):
            if not free:
                return False  # another process reads it
            if check_use and entry.record is not None and entry.record.exists():
                if entry.record.stat().st_mtime != entry.last_used:
                    return False  # used since the list was made
            existed = [p for p in entry.paths if p.exists()]
            for path in existed:
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    except (Timeout, OSError, NotImplementedError):  # being built or read; a cache this process may not change;
        return False  # no flock (filelock before 3.24): nothing can say whether another process reads it
    return bool(existed)


def evict_cache(root: str | Path | None = None, max_bytes: int | None = None, keep: Sequence[Path] = ()) -> list[str]:
    """Delete what killed builds left, then the least recently used entries of the whole cache until
    it fits ``max_bytes`` (``$SENTLAB_CACHE_MAX_GB``), except those in ``keep`` (just written), builds
    in progress, folders another process is reading (:func:`~sentlab.cache_folder.hold_in_use`; an
    embedding entry is read memory-mapped, which its removal does not disturb) and entries used since
    the list was made; says what it removed, and returns their names. Best
    effort: nothing on a read-only cache, and an entry another process removes first is not counted."""
    cap = max_bytes_from_env() if max_bytes is None else max_bytes
    entries = cache_entries(root)
    total = sum(entry.bytes for entry in entries)
    kept = {Path(p).resolve() for p in keep}
    removed: list[str] = []
    freed = 0
    leftovers = [entry for entry in entries if entry.state == "leftover"]
    ready = [entry for entry in entries if entry.state == "ready"]
    for entry in [*leftovers, *ready]:
        if entry.state == "ready" and total <= cap:
            break
        if any(p.resolve() in kept for p in entry.paths) or not _remove(entry):
            continue
        total -= entry.bytes
        freed += entry.bytes
        removed.append(entry.name)
    if removed:
        say(
            f"cache over its cap of {cap / 1e9:g} GB ($SENTLAB_CACHE_MAX_GB) or holding what killed builds left: "
            f"removed {len(removed)} entries ({freed / 1e6:,.1f} MB): {', '.join(removed)}"
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
            with contextlib.suppress(OSError):  # the .npy of a write that never finished (another's, if recent)
                if array_path.exists() and time.time() - array_path.stat().st_mtime > ORPHAN_AGE_S:
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
        array_path, meta_path = self._paths(key)
        meta_path.unlink(missing_ok=True)  # an old description never vouches for the new matrix
        with atomic_path(array_path) as temporary:
            with temporary.open("wb") as handle:
                np.save(handle, rows, allow_pickle=False)
            meta = {
                "format": FORMAT_VERSION,
                "setting": setting,
                "n": int(rows.shape[0]),
                "dim": int(rows.shape[1]),
                "bytes": temporary.stat().st_size,
                "sha256": file_sha256(temporary),
                "created": time.time(),
            }
        write_text_atomic(meta_path, json_text(meta, indent=2))  # last: the entry exists once described

    def _delete(self, key: str) -> None:
        for path in self._paths(key):
            with contextlib.suppress(OSError):  # a read-only cache keeps it (and it is never read as valid)
                path.unlink(missing_ok=True)


def cache_info(root: str | Path | None = None) -> dict:
    """Where the cache is, its cap, and each part's entries and bytes (exports with their settings),
    with the builds in progress and what killed builds left (both count toward the cap)."""
    root = cache_root(root)
    entries = cache_entries(root)
    info: dict = {"root": str(root), "max_bytes": max_bytes_from_env()}
    for part in PARTS:
        mine = [entry for entry in entries if entry.part == part]
        info[part] = {
            state_name: {
                "entries": len(chosen := [e for e in mine if e.state == state]),
                "bytes": sum(e.bytes for e in chosen),
            }
            for state, state_name in (("building", "building"), ("leftover", "leftovers"))
        }
        ready = [e for e in mine if e.state == "ready"]
        info[part] |= {"entries": len(ready), "bytes": sum(e.bytes for e in mine)}
    info["exports"]["settings"] = [
        f"{e.paths[0].parent.name[:12]}/{e.paths[0].name}"
        for e in entries
        if e.part == "exports" and e.state == "ready"
    ]
    return info


def cache_clear(root: str | Path | None = None, what: Sequence[str] = PARTS) -> tuple[int, list[str]]:
    """Delete the entries of the named parts of the cache and what killed builds left there, each
    under its lock taken without waiting: a build in progress and an entry another process is
    reading are left (returned by name, with the bytes freed). Lock files stay (another process may
    be waiting on one)."""
    freed, skipped = 0, []
    for entry in cache_entries(root):
        if entry.part not in what:
            continue
        if entry.state != "building" and _remove(entry, check_use=False):
            freed += entry.bytes
        elif any(p.exists() for p in entry.paths):
            skipped.append(entry.name)
    return freed, skipped
