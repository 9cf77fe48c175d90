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
  folder and what to do, never a traceback; a source file that cannot be read is named as such.
* A process that uses a cached folder marks it in use for as long as it runs (:func:`hold_in_use`: a
  shared lock on the same ``.lock`` file); eviction and ``sentlab cache clear`` take that lock
  exclusively without waiting, so they pass over a folder that is being built or read.
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
from sentlab.paths import write_text_atomic
from sentlab.progress import say

RECORD = "complete.json"
DEFAULT_LOCK_TIMEOUT_S = 3600.0  # $SENTLAB_LOCK_TIMEOUT: a build that holds a lock longer is stuck
WAIT_NOTICE_S = 2.0  # a process that waits longer than this for a lock says which lock it waits for


class CacheWriteError(DataError):
    """A cached folder could not be written (no permission, a read-only or full disk)."""


def folder_lock(
    folder: Path, timeout: float | None = None, ready: Callable[[], object] | None = None
) -> contextlib.AbstractContextManager[bool]:
    """An exclusive lock on ``folder`` (``<folder>.lock`` beside it) for as long as it is built; the
    block gets True. A process that has to wait says so once, naming the lock; past ``timeout``
    seconds (``$SENTLAB_LOCK_TIMEOUT``, default an hour) it stops with one line. While it waits it asks
    ``ready()``: once that gives something (another process built the folder), the block runs at once
    without the lock and gets False, so a waiter never needs the lock a reader of the new folder holds
    shared. On a file system without ``flock`` (some network mounts) the lock is a lock file's
    existence (filelock's ``SoftFileLock``)."""
    return _locked(folder, lock_timeout() if timeout is None else timeout, ready)


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


_HELD: dict[str, int] = {}  # lock file -> the descriptor holding this process's shared lock on it


def lock_path(folder: Path) -> Path:
    """The ``.lock`` file beside ``folder``: held exclusively while the folder is built or evicted."""
    return folder.with_name(folder.name + ".lock")


def in_use_path(folder: Path) -> Path:
    """The ``.inuse`` file beside ``folder``: shared by the processes that read the folder, taken
    exclusively (without waiting) by eviction and ``sentlab cache clear``; a build never takes it, so
    a reader never holds up another process's rebuild (of a changed source, say)."""
    return folder.with_name(folder.name + ".inuse")


def hold_in_use(folder: Path) -> bool:
    """Mark ``folder`` in use by this process until it exits (its tables are memory-mapped, and some
    are opened again by path): a shared ``flock`` on its ``.inuse`` file, which eviction and
    ``sentlab cache clear`` honour (they take it exclusively without waiting, and pass over the
    folder when they cannot). False where the mark cannot be made (a read-only cache, a file system
    without ``flock``, where nothing is left behind): such a folder is not protected."""
    path = in_use_path(folder)
    if str(path) in _HELD:
        return True
    try:
        import fcntl

        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
    except (ImportError, OSError):
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
    except OSError:  # no flock here: the empty file means nothing to filelock's soft locks (another name)
        os.close(descriptor)
        return False
    _HELD[str(path)] = descriptor
    return True


@contextlib.contextmanager
def nobody_reads(folder: Path) -> Iterator[bool]:
    """Whether no process marks ``folder`` in use (True: the block may remove it; the mark is held
    exclusively meanwhile, so no reader starts): asked without waiting; False also where ``flock``
    is missing and nothing can tell."""
    path = in_use_path(folder)
    if not path.exists():
        yield True
        return
    try:
        import fcntl

        descriptor = os.open(path, os.O_RDONLY)
    except (ImportError, OSError):
        yield False
        return
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)


def release_all_in_use() -> None:
    """Let go of every mark this process holds (a long-lived process that is done with its tables)."""
    for key in list(_HELD):
        os.close(_HELD.pop(key))


POLL_S = 0.25  # how often a waiter asks whether the folder it waits for is ready


@contextlib.contextmanager
def _locked(folder: Path, timeout: float, ready: Callable[[], object] | None = None) -> Iterator[bool]:
    import time

    from filelock import FileLock, SoftFileLock, Timeout

    path = lock_path(folder)
    _writable(lambda: path.parent.mkdir(parents=True, exist_ok=True), folder)
    lock = FileLock(str(path))
    start = time.monotonic()
    said = False
    while True:
        left = timeout - (time.monotonic() - start)
        try:
            _writable(lambda: lock.acquire(timeout=max(0.0, min(POLL_S, left))), folder)
            break
        except Timeout:
            pass
        except NotImplementedError:  # no flock here: filelock before 3.24 says so instead of falling back itself
            lock = SoftFileLock(str(path))
            continue
        if ready is not None and ready() is not None:
            yield False  # built meanwhile by the process that held the lock
            return
        if time.monotonic() - start >= timeout:
            raise CacheWriteError(
                f"{path}: still locked after {timeout:g} s by a process building or reading {folder.name}; if "
                "no sentlab process runs, delete the lock file"
            ) from None
        if not said and time.monotonic() - start >= WAIT_NOTICE_S:
            say(f"waiting for {path}: another process is building or reading {folder.name}")
            said = True
    try:
        yield True
    finally:
        lock.release()


def _writable(action: Callable[[], object], folder: Path) -> object:
    """``action()``, with a permission error or a full disk as one line about ``folder``."""
    try:
        return action()
    except OSError as err:
        named = Path(err.filename) if isinstance(err.filename, str) else None
        if named is not None and folder.parent not in (named, *named.parents):  # a source, not the cache
            raise DataError(f"{named}: cannot read it ({os.strerror(err.errno) if err.errno else err})") from None
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
    """Replace a valid folder's record by ``record_fields`` (:func:`~sentlab.paths.write_text_atomic`);
    nothing on a read-only cache, whose folder stays valid for what it was made from."""
    with contextlib.suppress(OSError):
        write_text_atomic(folder / record, json.dumps(record_fields, indent=1) + "\n")


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
    built = False
    found = valid()
    while True:
        if found is not None and hold_in_use(folder):
            found = valid()  # marked now: an eviction that ran before the mark shows here
        if found is not None:
            break
        with folder_lock(folder, ready=valid) as locked:
            found = valid()
            if found is None and locked:
                remove_partials(folder)
                found = write_folder(folder, build, record)
                built = True
        # built here or by the process that held the lock: marked and checked once more above
    if built and after_build is not None:
        after_build(folder)
    mark_used(folder, record)
    return found
