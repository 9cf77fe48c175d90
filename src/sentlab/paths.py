"""Where sentlab finds its data, and how it writes a file whole.

The data folder comes from (in order) an explicit argument, the ``SENTLAB_DATA`` environment
variable, or ``../shared/data`` relative to the current directory. A preset names its files as
``$SENTLAB_DATA/<path>``: :func:`expand_data_paths` puts the data folder in its place.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

DATA_ENV_VAR = "SENTLAB_DATA"
DEFAULT_DATA_DIR = Path("../shared/data")
DATA_PREFIXES = ("$SENTLAB_DATA/", "${SENTLAB_DATA}/")


def data_dir(explicit: str | Path | None = None) -> Path:
    """Resolve the data folder (it is not required to exist: readers report missing files)."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ENV_VAR)
    return Path(env).expanduser() if env else DEFAULT_DATA_DIR


def expand_data_paths(tree: object, root: Path) -> list[Path]:
    """Replace, in place, every string of a config tree that starts with ``$SENTLAB_DATA/`` by the path
    under ``root``; returns the expanded paths (to check that they exist before a long run starts)."""
    expanded: list[Path] = []

    def visit(node: object) -> object:
        if isinstance(node, dict):
            for key, value in node.items():
                node[key] = visit(value)
        elif isinstance(node, list):
            node[:] = [visit(value) for value in node]
        elif isinstance(node, str):
            for prefix in DATA_PREFIXES:
                if node.startswith(prefix):
                    path = root / node[len(prefix) :]
                    expanded.append(path)
                    return str(path)
        return node

    visit(tree)
    return expanded


TEMPORARY = re.compile(r"^\..+\.(\d+)-[0-9a-f]{8}\.tmp$")  # atomic_path's temporary names (PID inside)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """The one way sentlab writes a file whole or not at all: a fresh temporary path beside ``path``
    (``.NAME.PID-RANDOM.tmp``: no two writers share it) to write in the block; when the block ends the
    file is flushed to disk (fsync) and renamed over ``path``, and on an error it is removed and
    ``path`` left as it was. A reader sees the old file or the whole new one; a process killed in the
    block leaves only the temporary file, which the cache counts and cleans (its PID is dead)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        yield temporary
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def json_text(data: object, indent: int | None = None) -> str:
    """``data`` as strict JSON and a newline: a float that is not finite (a static model's unbounded
    length, a NaN score) is ``null``, never ``Infinity`` or ``NaN``, which JSON does not have
    (``allow_nan=False`` stops any other path to them)."""
    import json
    import math

    def finite(value: object) -> object:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {key: finite(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(item) for item in value]
        return value

    return json.dumps(finite(data), indent=indent, allow_nan=False, default=str) + "\n"


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) whole or not at all (:func:`atomic_path`)."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def reserve_file(path: str | Path, size: int) -> None:
    """Give the file ``path`` (already created, e.g. a sparse memory map) ``size`` bytes on disk now,
    with ``posix_fallocate``: a disk without room is a one-line :class:`DataError` ("needs N GB at
    FOLDER, M free") before anything is written, not a SIGBUS when a write into the map finds no
    block. Bytes the file already holds on disk count (a resumed run). A file system that cannot
    allocate ahead (``EOPNOTSUPP``) is checked against its free space only."""
    import errno
    import shutil

    from sentlab.errors import DataError

    path = Path(path)
    held = path.stat().st_blocks * 512
    free = shutil.disk_usage(path.parent).free

    def amount(count: int) -> str:
        return f"{count / 1e9:.2f} GB" if count >= 1e8 else f"{count / 1e6:.2f} MB"

    def refused() -> DataError:
        return DataError(f"{path}: needs {amount(size)} at {path.parent}, {amount(free)} free")

    if size - held > free:
        raise refused()
    allocate = getattr(os, "posix_fallocate", None)  # not on macOS: the free-space check stands alone
    if allocate is None:
        return
    descriptor = os.open(path, os.O_RDWR)
    try:
        allocate(descriptor, 0, size)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise refused() from None
        if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
    finally:
        os.close(descriptor)
