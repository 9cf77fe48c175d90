"""One way to write a cached folder, and the lock that keeps processes from building it twice.

Every folder sentlab caches or keeps beside a run (a text's memory-mapped table, RSE's triples, frozen
vectors, a corpus index) is written by :func:`write_folder` and read back through :func:`read_record`:

* the files are written into a fresh sibling folder (``.NAME.partial-PID``); the record (a JSON file,
  ``complete.json`` unless named otherwise) is written last, with the size of every file beside it;
  then the old folder is removed and the new one renamed into place. A reader therefore sees the old
  folder, no folder, or the complete new one; a process killed while writing leaves a ``.partial``
  folder that is never read.
* :func:`read_record` accepts a folder only when its record parses, holds the expected fields and
  every file it lists has the listed size.
* A valid folder is read without any write: a cache on a read-only file system serves what it holds.
  Only building takes the lock (:func:`folder_lock`: a ``.lock`` file beside the folder, through
  ``filelock``, or a lock file's existence where the file system has no ``flock``), so processes
  that need the same folder at once (``torchrun``'s) build it once. Whoever holds the lock first
  removes what killed builds left (``.NAME.partial-*``).
* A permission error or a full disk while building is one line (:class:`CacheWriteError`) naming the
  folder and what to do, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from sentlab.errors import DataError
from sentlab.progress import say

RECORD = "complete.json"
DEFAULT_LOCK_TIMEOUT_S = 3600.0  # $SENTLAB_LOCK_TIMEOUT: a build that holds a lock longer is stuck
WAIT_NOTICE_S = 2.0  # a process that waits longer than this for a lock says which lock it waits for


class CacheWriteError(DataError):
    """A cached folder could not be written (no permission, a read-only or full disk)."""


def folder_lock(folder: Path, timeout: float | None = None) -> contextlib.AbstractContextManager:
    """An exclusive lock on ``folder`` (``<folder>.lock`` beside it) for as long as it is built. A
    process that has to wait says so once, naming the lock; past ``timeout`` seconds
    (``$SENTLAB_LOCK_TIMEOUT``, default an hour) it stops with one line. On a file system without
    ``flock`` (some network mounts) the lock is a lock file's existence (filelock's ``SoftFileLock``)."""
    return _locked(folder, lock_timeout() if timeout is None else timeout)


def lock_timeout() -> float:
    """``$SENTLAB_LOCK_TIMEOUT`` in seconds (default an hour)."""
    value = os.environ.get("SENTLAB_LOCK_TIMEOUT", str(DEFAULT_LOCK_TIMEOUT_S))
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise DataError(f"SENTLAB_LOCK_TIMEOUT={value!r}: expected a number of seconds (0 or more)")
    return seconds


@contextlib.contextmanager
def _locked(folder: Path, timeout: float) -> Iterator[None]:
    from filelock import FileLock, Timeout

    path = folder.with_name(folder.name + ".lock")
    _writable(lambda: path.parent.mkdir(parents=True, exist_ok=True), folder)
    lock = FileLock(str(path))  # filelock falls back to a lock file's existence where there is no flock
    try:
        _writable(lambda: lock.acquire(timeout=min(WAIT_NOTICE_S, timeout)), folder)
        waited = False
    except Timeout:
        waited = True
    if waited:
        say(f"waiting for {path}: another process is building {folder.name}")
        try:
            _writable(lambda: lock.acquire(timeout=max(0.0, timeout - WAIT_NOTICE_S)), folder)
        except Timeout:
            raise CacheWriteError(
                f"{path}: still locked after {timeout:g} s; if no sentlab process is building {folder.name}, "
                "delete the lock file"
            ) from None
    try:
        yield
    finally:
        lock.release()


def _writable(action: Callable[[], object], folder: Path) -> object:
    """``action()``, with a permission error or a full disk as one line about ``folder``."""
    try:
        return action()
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise CacheWriteError(
                f"{folder}: cannot write here ({os.strerror(err.errno)}); make the folder writable or "
                "point $SENTLAB_CACHE (or the output folder) at a writable one"
            ) from None
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CacheWriteError(
                f"{folder}: the disk is full ({os.strerror(err.errno)}); free space, or lower "
                "$SENTLAB_CACHE_MAX_GB and run `sentlab cache clear`"
            ) from None
        raise


def read_record(folder: Path, expected: dict, record: str = RECORD) -> dict | None:
    """The record of ``folder`` when the folder is complete and made from what ``expected`` says
    (each of its keys has that value in the record), else None."""
    try:
        found = json.loads((folder / record).read_text("utf-8"))
        if not isinstance(found, dict) or any(found.get(key) != value for key, value in expected.items()):
            return None
        files = found.get("files")
        if not isinstance(files, dict) or any((folder / name).stat().st_size != size for name, size in files.items()):
            return None
    except (OSError, ValueError):
        return None
    return found


def mark_used(folder: Path, record: str = RECORD) -> None:
    """Note that ``folder`` was used now (its record's mtime: the cache evicts the least recently used
    first); nothing on a read-only cache."""
    with contextlib.suppress(OSError):
        os.utime(folder / record)


def write_folder(folder: Path, write: Callable[[Path], dict], record: str = RECORD) -> dict:
    """Build ``folder``: ``write(partial)`` writes the files into the fresh folder ``partial`` and returns
    the record's fields; the record (those fields and ``files``: each file's size) is written last,
    then ``partial`` replaces ``folder``. On any error ``partial`` is removed and ``folder`` is left
    as it was."""
    folder = Path(folder)
    partial = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
    try:
        _writable(lambda: shutil.rmtree(partial, ignore_errors=True) or partial.mkdir(parents=True), folder)
        fields = _writable(lambda: write(partial), folder)  # a full disk mid-write is one line too
        files = {p.name: p.stat().st_size for p in sorted(partial.iterdir()) if p.is_file()}
        done = {**fields, "files": files}
        _writable(lambda: _write_json(partial / record, done), folder)
        _writable(lambda: _replace(partial, folder), folder)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return done


def _write_json(path: Path, value: dict) -> None:
    with path.open("w", encoding="utf-8") as out:
        json.dump(value, out, indent=1)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())


def _replace(partial: Path, folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)  # a reader that has its files mapped keeps them until it lets go
    os.replace(partial, folder)


def rewrite_record(folder: Path, record_fields: dict, record: str = RECORD) -> None:
    """Replace a valid folder's record by ``record_fields`` (written beside it and renamed); nothing on
    a read-only cache, whose folder stays valid for what it was made from."""
    with contextlib.suppress(OSError):
        partial = folder / f".{record}.{os.getpid()}"
        _write_json(partial, record_fields)
        os.replace(partial, folder / record)


def remove_partials(folder: Path) -> None:
    """Remove what killed builds of ``folder`` left beside it (call with the folder's lock held)."""
    for partial in folder.parent.glob(f".{folder.name}.partial-*"):
        shutil.rmtree(partial, ignore_errors=True)


def cached_folder(
    folder: Path,
    expected: dict,
    build: Callable[[Path], dict],
    record: str = RECORD,
    after_build: Callable[[Path], object] | None = None,
    current: Callable[[], dict | None] | None = None,
) -> dict:
    """The record of ``folder`` when it is valid for ``expected`` (read without writing anything), else
    of the folder built by ``build`` under the folder's lock (rechecked once the lock is held: another
    process may have built it meanwhile); ``after_build(folder)`` runs once a build is done and the
    lock released (the cache's eviction). ``current()``, when given, says instead whether the folder is
    valid (its record, or None): for a validity a record's fields alone do not decide."""
    valid = current or (lambda: read_record(folder, expected, record))
    found = valid()
    if found is None:
        with folder_lock(folder):
            found = valid()
            if found is None:
                remove_partials(folder)
                found = write_folder(folder, build, record)
                built = True
            else:
                built = False
        if built and after_build is not None:
            after_build(folder)
    mark_used(folder, record)
    return found
