"""Training text of any size: a text file as a memory-mapped Arrow table, converted once and cached.

:func:`sentence_table` reads a UTF-8 text file, one sentence a line, in blocks of 16 MB and writes its
lines to an Arrow file in the cache (``$SENTLAB_CACHE/text/``); the table that training reads is that
file memory-mapped (``datasets.Dataset.from_file``), so the process's anonymous memory does not grow
with the text: the kernel pages the rows in and can drop them again. This is what sentence-transformers
and transformers' examples hand their trainers (``load_dataset("text", ...)``), with sentlab's checks.

* ``limit`` reads only the first ``limit`` lines (the rest of the file is never read or checked).
* The checks of :mod:`sentlab.data.readers`, each a one-line :class:`~sentlab.errors.DataError` naming the
  file and the line: not UTF-8, a NUL byte (a binary file), an empty or whitespace-only line, a line
  longer than :data:`MAX_LINE_BYTES`, no line at all; and a file whose size or modification time
  changed while it was read.
* The conversion writes to a temporary file that is renamed when complete, and a provenance record
  (``complete.json``: the source's path, size, modification time, inode and status-change time
  (:func:`sentlab.cache.file_state`), ``limit``, the row count and the lines' sha256) is written last. A folder without it (a crash while converting), with a record of
  another source state (the file changed), or with an Arrow file of another size is rebuilt, never read.
* The record's ``sha256`` of the lines equals :func:`sentlab.rank.index.corpus_sha256` of the same
  lines: the text's identity, whatever its path.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import random
import shutil
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets import Dataset, concatenate_datasets

from sentlab.cache import cache_root, file_state
from sentlab.data.readers import iter_table
from sentlab.errors import DataError
from sentlab.paths import write_text_atomic
from sentlab.progress import say

FORMAT_VERSION = 2  # 2: the source's inode and ctime in the record; rows hashed length-prefixed
MAX_LINE_BYTES = 1_000_000  # a "sentence" longer than this is a file that is not one sentence a line
BLOCK_BYTES = 16 << 20  # read and converted at a time: the conversion holds a few copies of one block
COLUMN = "sentence"
SCHEMA = pa.schema([pa.field(COLUMN, pa.string())])
RECORD = "complete.json"
ARROW = "sentences.arrow"
ROWS_PER_BATCH = 65_536  # rows of a table file converted at a time


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
) -> Dataset:
    """``columns`` of a JSONL / CSV / TSV file (at most ``limit`` rows) as a memory-mapped table whose
    columns are called ``names`` (default: ``columns``): converted once, a row at a time, with the
    checks of :func:`~sentlab.data.readers.read_table`, and cached like a text file's table."""
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
    """The provenance record of the table of ``path`` read to ``limit`` lines (converting the file
    first unless a valid table is cached): ``rows``, ``sha256`` (the text's identity, as
    :func:`~sentlab.rank.index.corpus_sha256` of the lines; for a table file, of its rows as
    :func:`_row_bytes` gives them), the source's state (:func:`~sentlab.cache.file_state`)."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a folder; give the file inside it")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if limit is not None and limit < 1:
        raise DataError(f"{path}: data.limit must be at least 1 (got {limit})")
    columns = None if columns is None else tuple(columns)
    folder = table_folder(path, limit, root, columns)
    with folder_lock(folder):
        return _valid_record(folder, path, limit, columns) or _convert(path, limit, folder, columns)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (a ``.lock`` file beside it) while checking and building it:
    processes that need the same table at once (``torchrun``'s, two runs on one file) build it once, the
    others wait and then read it, instead of removing each other's half-written files."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _source_state(path: Path) -> dict[str, object]:
    return file_state(path)


def _valid_record(folder: Path, path: Path, limit: int | None, columns: tuple[str, ...] | None) -> dict | None:
    try:
        record = json.loads((folder / RECORD).read_text("utf-8"))
        arrow_size = (folder / ARROW).stat().st_size
    except (OSError, ValueError):
        return None
    expected = {
        "format": FORMAT_VERSION,
        **_source_state(path),
        "limit": limit,
        "columns": None if columns is None else list(columns),
        "arrow_bytes": arrow_size,
    }
    if not isinstance(record, dict) or any(record.get(key) != value for key, value in expected.items()):
        return None
    return record


def _convert(path: Path, limit: int | None, folder: Path, columns: tuple[str, ...] | None) -> dict:
    """Write the table to ``folder`` (a fresh one: whatever was there is removed first)."""
    start = time.perf_counter()
    before = _source_state(path)
    fields = {"format": FORMAT_VERSION, **before, "limit": limit, "columns": None if columns is None else list(columns)}

    def write(partial: Path) -> dict:
        rows, digest = _write(path, limit, partial) if columns is None else _write_rows(path, columns, limit, partial)
        if _source_state(path) != before:
            raise DataError(f"{path}: changed while it was being read; run again once the file is complete")
        return {**fields, "rows": rows, "sha256": digest}

    record = write_table_folder(folder, ARROW, write)
    seconds = time.perf_counter() - start
    what = "lines" if columns is None else "rows"
    rows = record["rows"]
    say(f"read {path}: {rows:,} {what} into a memory-mapped table ({seconds:.1f} s; cached in {folder})")
    return record


def write_table_folder(folder: Path, name: str, write: Callable[[Path], dict]) -> dict:
    """A table written into a fresh ``folder`` (whatever was there is removed first): ``write(partial)``
    writes the Arrow file and returns the record's fields; the file is renamed to ``name`` once
    complete, and the record (:data:`RECORD`, with the file's size as ``arrow_bytes``) is written last.
    On any error the folder is removed: nothing half-written is left to be read as complete."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    partial = folder / f"{name}.{os.getpid()}.partial"
    try:
        fields = write(partial)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    os.replace(partial, folder / name)
    record = {**fields, "arrow_bytes": (folder / name).stat().st_size}
    write_text_atomic(folder / RECORD, json.dumps(record, indent=1) + "\n")
    return record


def _write_rows(path: Path, columns: tuple[str, ...], limit: int | None, out: Path) -> tuple[int, str]:
    """The rows of a JSONL / CSV / TSV file (:func:`~sentlab.data.readers.iter_table`) to ``out``,
    :data:`ROWS_PER_BATCH` at a time."""
    schema = pa.schema([pa.field(column, pa.string()) for column in columns])
    digest = hashlib.sha256()
    rows = 0
    source = iter_table(path, columns, limit=limit)
    with pa.OSFile(str(out), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        while batch := list(itertools.islice(source, ROWS_PER_BATCH)):
            writer.write_batch(
                pa.record_batch([pa.array(values, pa.string()) for values in zip(*batch)], schema=schema)
            )
            for row in batch:
                digest.update(_row_bytes(row))
            rows += len(batch)
    if rows == 0:
        raise DataError(f"{path}: file has no rows")
    return rows, digest.hexdigest()


def _row_bytes(row: tuple[str, ...]) -> bytes:
    """What a table file's row adds to its table's hash. A one-column row whose value has no line
    break or NUL adds ``value + "\\n"``, as a text file's line does, so a column of sentences has the hash of
    the text file of them (:func:`~sentlab.rank.index.corpus_sha256`, the key of frozen vectors). Any
    other row adds each field length-prefixed after a NUL byte (which no text file's line holds): a tab
    or a newline inside a value cannot make two tables' rows hash alike."""
    if len(row) == 1 and not any(c in row[0] for c in "\n\r\0"):
        return (row[0] + "\n").encode("utf-8")
    out = bytearray(b"\0")
    for value in row:
        encoded = value.encode("utf-8")
        out += len(encoded).to_bytes(8, "little") + encoded
    return bytes(out)


def _write(path: Path, limit: int | None, out: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    hashing: Future | None = None  # the previous block's hash, computed by a second thread (no GIL held)
    rows = 0  # lines written so far
    offset = 0  # bytes of the file before ``carry``
    carry = b""
    with (
        path.open("rb") as source,
        pa.OSFile(str(out), "wb") as sink,
        pa.ipc.new_stream(sink, SCHEMA) as writer,
        ThreadPoolExecutor(1) as hasher,
    ):
        while limit is None or rows < limit:
            block = source.read(BLOCK_BYTES)
            data = carry + block
            if not block:  # end of file: the last line may lack its newline
                if not data:
                    break
                if not data.endswith(b"\n"):
                    data += b"\n"
                cut = len(data)
            else:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    if len(data) > MAX_LINE_BYTES:
                        raise _too_long(path, rows + 1, len(data))
                    carry = data
                    continue
            lines, carry = data[:cut], data[cut:]
            count = lines.count(b"\n")
            if limit is not None and rows + count > limit:  # keep only what the limit keeps
                end = -1
                for _ in range(limit - rows):
                    end = lines.index(b"\n", end + 1)
                lines, count, carry = lines[: end + 1], limit - rows, b""
            normal = lines.replace(b"\r\n", b"\n") if b"\r" in lines else lines
            if hashing is not None:
                hashing.result()  # in order, and at most one block waiting
            hashing = hasher.submit(digest.update, normal)
            column = _column(path, lines, normal, rows, offset)
            _check_lines(path, column, rows)
            writer.write_batch(pa.record_batch([column], schema=SCHEMA))
            rows += count
            offset += len(lines)
            if len(carry) > MAX_LINE_BYTES:
                raise _too_long(path, rows + 1, len(carry))
        if hashing is not None:
            hashing.result()
    if rows == 0:
        raise DataError(f"{path}: file has no sentences")
    return rows, digest.hexdigest()


def _column(path: Path, lines: bytes, normal: bytes, rows: int, offset: int) -> pa.Array:
    """Newline-terminated ``lines`` (``normal``: with ``\\r\\n`` as ``\\n``) as an Arrow string array, built from the newline positions (no
    Python string per line); a NUL byte or a byte that is not UTF-8 is a one-line error."""
    nul = lines.find(b"\0")
    if nul >= 0:
        line = rows + lines.count(b"\n", 0, nul) + 1
        raise DataError(f"{path}:{line}: a NUL byte: this looks like a binary file, not text with one sentence a line")
    ends = np.flatnonzero(np.frombuffer(normal, np.uint8) == ord("\n"))
    offsets = np.empty(len(ends) + 1, np.int32)  # a block is far below 2 GB
    offsets[0] = 0
    offsets[1:] = ends - np.arange(len(ends))  # each line's end once the newlines before it are gone
    column = pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(normal.replace(b"\n", b"")))
    try:
        column.validate(full=True)  # UTF-8 of every value
    except pa.ArrowInvalid:
        try:
            lines.decode("utf-8")
        except UnicodeDecodeError as err:
            line = rows + lines.count(b"\n", 0, err.start) + 1
            raise DataError(f"{path}:{line}: line is not valid UTF-8 (byte {offset + err.start})") from None
        raise
    return column


def _check_lines(path: Path, column: pa.Array, rows: int) -> None:
    empty = pc.equal(pc.utf8_trim_whitespace(column), "")
    first = pc.index(empty, True).as_py()
    if first >= 0:
        raise DataError(f"{path}:{rows + first + 1}: empty line (one sentence a line)")
    long = pc.index(pc.greater(pc.binary_length(column), MAX_LINE_BYTES), True).as_py()
    if long >= 0:
        raise _too_long(path, rows + long + 1, len(column[long].as_py().encode()))


def _too_long(path: Path, line: int, size: int) -> DataError:
    return DataError(
        f"{path}:{line}: line is longer than {MAX_LINE_BYTES:,} bytes ({size:,} or more): expected one sentence a line"
    )


ROW_CHUNK = 1 << 20  # row numbers written at a time by with_row_index


def with_row_index(dataset: Dataset, column: str = "label") -> Dataset:
    """``dataset`` with a ``column`` holding each row's index (0 .. n-1: the key of a frozen vector or
    of a row's noise). For a memory-mapped table the column is a memory-mapped Arrow file too
    (``rows-N.arrow`` beside the table, written once and renamed into place), so neither column
    costs anonymous memory; an in-memory table (a small labelled file) gets an in-memory column."""
    n = len(dataset)
    files = dataset.cache_files
    if not files:
        return dataset.add_column(column, np.arange(n, dtype=np.int64))
    path = Path(files[0]["filename"]).with_name(f"rows-{column}-{n}.arrow")
    if not path.is_file():
        schema = pa.schema([pa.field(column, pa.int64())])
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for start in range(0, n, ROW_CHUNK):
                rows = pa.array(np.arange(start, min(n, start + ROW_CHUNK), dtype=np.int64))
                writer.write_batch(pa.record_batch([rows], schema=schema))
        os.replace(partial, path)
    return concatenate_datasets([dataset, Dataset.from_file(str(path))], axis=1)


def shuffled_rows(n: int, seed: int) -> array:
    """The permutation ``random.Random(seed).shuffle(list(range(n)))`` makes (the same Fisher-Yates
    draws), kept as 8-byte integers rather than a list of Python ints."""
    order = array("q", range(n))
    randbelow = random.Random(seed)._randbelow  # what Random.shuffle draws with
    for i in reversed(range(1, n)):
        j = randbelow(i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def iter_column(dataset: Dataset, column: str = COLUMN, chunk: int = 10_000) -> Iterator[str]:
    """A table's column, value by value, read ``chunk`` rows at a time."""
    for start in range(0, len(dataset), chunk):
        yield from dataset[start : start + chunk][column]
