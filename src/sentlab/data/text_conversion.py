"""Text into Arrow: a text file's lines, or a JSONL / CSV / TSV file's columns, written as an Arrow
stream with sentlab's checks (the caching around it is :mod:`sentlab.data.tables`).

A text file is read in blocks of :data:`BLOCK_BYTES` and its lines are built from the newline offsets,
with no Python string per line. Each problem is a one-line :class:`~sentlab.errors.DataError` naming the
file and the line: not UTF-8, a NUL byte (a binary file), an empty or whitespace-only line, a line longer
than :data:`MAX_LINE_BYTES`, no line at all. The lines' sha256 (``\\r\\n`` read as ``\\n``) equals
:func:`sentlab.rank.index.corpus_sha256` of the same lines: the text's identity, whatever its path.
"""

from __future__ import annotations

import hashlib
import itertools
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sentlab.data.readers import iter_table
from sentlab.errors import DataError

MAX_LINE_BYTES = 1_000_000  # a "sentence" longer than this is a file that is not one sentence a line
BLOCK_BYTES = 16 << 20  # read and converted at a time: the conversion holds a few copies of one block
COLUMN = "sentence"
SCHEMA = pa.schema([pa.field(COLUMN, pa.string())])
ROWS_PER_BATCH = 65_536  # rows of a table file converted at a time
ROW_CHUNK = 1 << 20  # row numbers written at a time by write_row_numbers


def write_rows(path: Path, columns: tuple[str, ...], limit: int | None, out: Path) -> tuple[int, str]:
    """The rows of a JSONL / CSV / TSV file (:func:`~sentlab.data.readers.iter_table`) to the Arrow
    stream ``out``, :data:`ROWS_PER_BATCH` at a time: (rows, sha256 of the rows, :func:`_row_bytes`)."""
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


def write_text(path: Path, limit: int | None, out: Path) -> tuple[int, str, str | None]:
    """The lines of the text file ``path`` (at most ``limit``) to the Arrow stream ``out``, a block of
    :data:`BLOCK_BYTES` at a time, checked: (rows, sha256 of the lines, sha256 of the file's bytes
    when the whole file was read, else None)."""
    digest = hashlib.sha256()
    raw = hashlib.sha256()  # the file's own bytes: what a cached table is checked against (tables.py)
    whole = False
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
            raw.update(block)  # the file's own bytes, every block as read (not all of a block is lines)
            data = carry + block
            if not block:  # end of file: the last line may lack its newline
                if not data:
                    whole = True
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
    return rows, digest.hexdigest(), raw.hexdigest() if whole else None


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


def write_row_numbers(n: int, out: Path, column: str = "row") -> None:
    """The row numbers 0 .. n-1 as a one-column (int64) Arrow stream, :data:`ROW_CHUNK` at a time."""
    schema = pa.schema([pa.field(column, pa.int64())])
    with pa.OSFile(str(out), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for start in range(0, n, ROW_CHUNK):
            writer.write_batch(
                pa.record_batch([pa.array(np.arange(start, min(n, start + ROW_CHUNK), dtype=np.int64))], schema=schema)
            )
