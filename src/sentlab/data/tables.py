"""Training text of any size: a text file, or a JSONL / CSV / TSV file's columns, as a memory-mapped
Arrow table, converted once (:mod:`sentlab.data.text_conversion`) and cached.

The table that training reads is an Arrow file in the cache (``$SENTLAB_CACHE/text/<key>/``)
memory-mapped (``datasets.Dataset.from_file``), so the process's anonymous memory does not grow with
the text: the kernel pages the rows in and can drop them again. This is what sentence-transformers and
transformers' examples hand their trainers (``load_dataset("text", ...)``), with sentlab's checks.

* ``limit`` reads only the first ``limit`` lines (the rest of the file is never read or checked).
* The folder is written as every cached folder is (:mod:`sentlab.cache_folder`: built aside, its
  record ``complete.json`` last, then renamed into place; built under a lock, read without one). It
  holds the table, the row numbers 0 .. n-1 (``rows.arrow``: the ``label`` column RankCSE, RankEncoder
  and TSDAE key their rows by, memory-mapped too) and the record: the source's state
  (:func:`sentlab.cache.file_state`: path, size, mtime, inode, status-change time), ``limit``, the
  row count, the lines' sha256 (the text's identity) and the file's own sha256.
* A folder whose record is for another size or mtime is rebuilt. A file with the same size and mtime
  but another inode or status-change time (a copy that kept its times, an edit that restored them, a
  ``chmod``) is hashed (it reads the file once; a conversion also checks and writes it): the same bytes
  keep the table (its record takes the new state), other bytes rebuild it.
* A file whose state changes while it is read is refused in one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from datasets import Dataset, concatenate_datasets

from sentlab.cache import cache_root, evict_cache, file_sha256, file_state
from sentlab.cache_folder import CacheWriteError, cached_folder, folder_lock, read_record, rewrite_record
from sentlab.data.text_conversion import COLUMN, write_row_numbers, write_rows, write_text
from sentlab.errors import DataError
from sentlab.progress import say

FORMAT_VERSION = 3  # 3: one folder writer, row numbers inside the folder, the file's own hash
ARROW = "sentences.arrow"
ROWS = "rows.arrow"
SAME_BYTES = ("inode", "ctime_ns")  # the parts of a file's state that a hash of its bytes may stand for

__all__ = ["ARROW", "ROWS", "column_table", "iter_column", "sentence_table", "text_record"]


def table_folder(
    path: Path, limit: int | None, root: str | Path | None = None, columns: tuple[str, ...] | None = None
) -> Path:
    """The cache folder of ``path`` (resolved) read to ``limit`` lines (of ``columns``, for a table file)."""
    key = f"{path.resolve()}\0{limit}" + ("" if columns is None else "\0" + "\0".join(columns))
    return cache_root(root) / "text" / hashlib.sha256(key.encode()).hexdigest()[:24]


def sentence_table(path: str | Path, limit: int | None = None, *, root: str | Path | None = None) -> Dataset:
    """The lines of ``path`` (at most ``limit``) as a memory-mapped one-column (``sentence``) table."""
    text_record(path, limit, root=root)
    return Dataset.from_file(str(table_folder(Path(path), limit, root) / ARROW))  # converted by text_record


def column_table(
    path: str | Path,
    columns: Sequence[str],
    names: Sequence[str] | None = None,
    *,
    limit: int | None = None,
    root: str | Path | None = None,
    split: str | None = None,
    subset: str | None = None,
) -> Dataset:
    """``columns`` of a JSONL / CSV / TSV file (at most ``limit`` rows) as a memory-mapped table whose
    columns are called ``names`` (default: ``columns``): converted once, a row at a time, with the
    checks of :func:`~sentlab.data.readers.read_table`, and cached like a text file's table. A
    ``datasets`` source (a ``save_to_disk`` folder, an ``.arrow`` file, ``hf:ID``; its ``split`` and
    ``subset``) is read as it is (:mod:`sentlab.data.datasets_source`)."""
    from sentlab.data.datasets_source import is_datasets_source, open_source, source_columns

    if is_datasets_source(path):
        return source_columns(open_source(path, split, subset), columns, names, limit, str(path))
    if split is not None or subset is not None:
        raise DataError(
            f"{path}: a {Path(path).suffix or 'text'} file has no splits or subsets (data.split, data.subset)"
        )
    text_record(path, limit, root=root, columns=columns)
    table = Dataset.from_file(str(table_folder(Path(path), limit, root, tuple(columns)) / ARROW))
    return table.rename_columns(dict(zip(columns, names))) if names else table


def text_record(
    path: str | Path,
    limit: int | None = None,
    *,
    root: str | Path | None = None,
    columns: Sequence[str] | None = None,
) -> dict:
    """The record of the table of ``path`` read to ``limit`` lines (converting the file first unless a
    valid table is cached): ``rows``, ``sha256`` (the text's identity, as
    :func:`~sentlab.rank.index.corpus_sha256` of the lines; for a table file, of its rows as
    :func:`~sentlab.data.text_conversion._row_bytes` gives them) and the source's state."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a folder; give the file inside it")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if limit is not None and limit < 1:
        raise DataError(f"{path}: data.limit must be at least 1 (got {limit})")
    try:  # a file that cannot be read is said as such, not as a cache that cannot be written
        with path.open("rb"):
            pass
    except OSError as err:
        raise DataError(f"{path}: cannot read it ({err.strerror or err})") from None
    columns = None if columns is None else tuple(columns)
    folder = table_folder(path, limit, root, columns)
    made_from = {"format": FORMAT_VERSION, "limit": limit, "columns": None if columns is None else list(columns)}
    return cached_folder(
        folder,
        made_from,
        _builder(path, limit, columns, made_from),
        current=lambda: _current(folder, path, made_from),
        # the table just built stays, whatever the cap
        after_build=lambda built: evict_cache(cache_root(root), keep=[built]),
    )


def _current(folder: Path, path: Path, made_from: dict) -> dict | None:
    """The record of ``folder`` when its table is ``path``'s as the file is now, else None."""
    state = file_state(path)
    found = read_record(folder, {**made_from, **{k: v for k, v in state.items() if k not in SAME_BYTES}})
    if found is None:
        return None
    if any(found.get(key) != state[key] for key in SAME_BYTES):  # same size and mtime: are they the same bytes?
        if not found.get("source_sha256") or file_sha256(path) != found["source_sha256"]:
            return None
        _take_state(folder, found, state)
        found = {**found, **state}
    return found


def _take_state(folder: Path, found: dict, state: dict) -> None:
    """Write the file's new state into the record of its (same-bytes) table, under the folder's lock and
    only if the record is still the one that was checked; nothing where the cache cannot be written
    (the table stays valid, and the next run hashes the file again)."""
    with contextlib.suppress(CacheWriteError):
        with folder_lock(folder, timeout=0):
            if read_record(folder, {"sha256": found["sha256"], "source_sha256": found["source_sha256"]}) is not None:
                rewrite_record(folder, {**found, **state})


def _builder(path: Path, limit: int | None, columns: tuple[str, ...] | None, made_from: dict):
    """What writes ``path``'s table into a fresh folder (for :func:`~sentlab.cache_folder.cached_folder`)."""

    def build(partial: Path) -> dict:
        start = time.perf_counter()
        before = file_state(path)
        if columns is None:
            rows, digest, raw = write_text(path, limit, partial / ARROW)
        else:
            rows, digest = write_rows(path, columns, limit, partial / ARROW)
            raw = file_sha256(path) if limit is None else None
        if file_state(path) != before:
            raise DataError(f"{path}: changed while it was being read; run again once the file is complete")
        write_row_numbers(rows, partial / ROWS)
        what = "lines" if columns is None else "rows"
        seconds = time.perf_counter() - start
        say(f"read {path}: {rows:,} {what} into a memory-mapped table ({seconds:.1f} s; cached in {partial.parent})")
        return {**made_from, **before, "rows": rows, "sha256": digest, "source_sha256": raw}

    return build


def with_row_index(dataset: Dataset, column: str = "label") -> Dataset:
    """``dataset`` with a ``column`` holding each row's index (0 .. n-1: the key of a frozen vector or
    of a row's noise). A cached table's row numbers are its folder's ``rows.arrow``, memory-mapped, so
    neither column costs anonymous memory; any other table (a small labelled file in memory, a
    selection of rows) gets an in-memory column."""
    n = len(dataset)
    files = dataset.cache_files
    numbers_file = Path(files[0]["filename"]).with_name(ROWS) if files else None
    if numbers_file is not None and numbers_file.is_file():
        numbers = Dataset.from_file(str(numbers_file))
        if len(numbers) == n:
            return concatenate_datasets(
                [dataset, numbers.rename_column("row", column) if column != "row" else numbers], axis=1
            )
    return dataset.add_column(column, np.arange(n, dtype=np.int64))


def iter_column(dataset: Dataset, column: str = COLUMN, chunk: int = 10_000) -> Iterator[str]:
    """A table's column, value by value, read ``chunk`` rows at a time."""
    for start in range(0, len(dataset), chunk):
        yield from dataset[start : start + chunk][column]
