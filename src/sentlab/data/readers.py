"""Readers for user text: plain-text corpora, JSONL and CSV/TSV columns.

All readers are strict: a missing file (or a folder where a file is expected), a line that is not
UTF-8, an empty or whitespace-only sentence, a CSV / TSV row with more or fewer fields than its
header, or a row without the requested column raises :class:`~sentlab.errors.DataError` whose
message names the file and the 1-based line number.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from sentlab.errors import DataError

TABLE_SUFFIXES = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv"}


def read_text(path: str | Path) -> str:
    """A UTF-8 file's text; a missing file or a non-UTF-8 byte is a one-line :class:`DataError`."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a folder; give the file inside it")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line_no = raw[: err.start].count(b"\n") + 1
        raise DataError(f"{path}:{line_no}: line is not valid UTF-8 (byte {err.start})") from None


def read_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 file without their line endings (``\\n`` or ``\\r\\n``); no final empty line."""
    text = read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _check_sentence(value: object, path: Path, line_no: int, what: str = "sentence") -> str:
    if not isinstance(value, str):
        raise DataError(f"{path}:{line_no}: {what} is not a string ({type(value).__name__})")
    if not value.strip():
        raise DataError(f"{path}:{line_no}: empty {what}")
    return value


def read_sentences(path: str | Path, limit: int | None = None) -> list[str]:
    """A plain-text corpus, one sentence a line (the first ``limit`` lines if given)."""
    path = Path(path)
    lines = read_lines(path)
    if limit is not None:
        lines = lines[:limit]
    if not lines:
        raise DataError(f"{path}: file has no sentences")
    return [_check_sentence(line, path, i) for i, line in enumerate(lines, start=1)]


def read_table(
    path: str | Path,
    columns: Sequence[str],
    fmt: str | None = None,
    limit: int | None = None,
) -> list[tuple[str, ...]]:
    """Rows of the given ``columns`` from a JSONL, CSV or TSV file (:func:`iter_table` as a list).

    ``fmt`` is ``"jsonl"``, ``"csv"`` or ``"tsv"``; by default it follows the file extension.
    CSV/TSV files need a header row naming the columns.
    """
    rows = list(iter_table(path, columns, fmt, limit))
    if not rows:
        raise DataError(f"{path}: file has no rows")
    return rows


def iter_table(
    path: str | Path,
    columns: Sequence[str],
    fmt: str | None = None,
    limit: int | None = None,
) -> Iterator[tuple[str, ...]]:
    """The rows of :func:`read_table`, read from the file a line at a time (nothing is held but the
    current row), with its checks; stops after ``limit`` rows (the rest of the file is not read)."""
    path = Path(path)
    fmt = fmt or TABLE_SUFFIXES.get(path.suffix.lower(), "csv")
    if fmt not in ("jsonl", "csv", "tsv"):
        raise DataError(f"{path}: unknown table format {fmt!r} (use jsonl, csv or tsv)")
    if path.is_dir():
        raise DataError(f"{path}: is a folder; give the file inside it")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    count = 0
    with path.open("rb") as handle:
        lines = _decoded_lines(handle, path)
        if fmt == "jsonl":
            for line_no, line in enumerate(lines, start=1):
                if not line.strip():
                    raise DataError(f"{path}:{line_no}: empty line")
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataError(f"{path}:{line_no}: invalid JSON ({err.msg})") from None
                if not isinstance(record, dict):
                    raise DataError(f"{path}:{line_no}: expected a JSON object")
                yield _pick(record, columns, path, line_no)
                count += 1
                if limit is not None and count >= limit:
                    return
            return
        # strict: a quote left open up to the end of the file is an error, not one giant field
        reader = csv.DictReader(lines, delimiter="\t" if fmt == "tsv" else ",", strict=True)
        first_line = 2
        try:
            header = reader.fieldnames or []
            missing = [c for c in columns if c not in header]
            if missing:
                raise DataError(f"{path}:1: missing column(s) {missing} in header {header}")
            for record in reader:
                fields = len(header) + len(record.get(None) or []) - sum(record[c] is None for c in header)
                if fields != len(header):  # DictReader pads short rows with None and keeps extra fields apart
                    raise DataError(f"{path}:{first_line}: row has {fields} fields, the header {len(header)}")
                row = _pick(record, columns, path, first_line)
                if any("\n" in value for value in row):  # a quote that swallowed the next lines
                    raise DataError(
                        f"{path}:{first_line}: a field runs over lines {first_line}-{reader.line_num} "
                        "(unterminated quote?)"
                    )
                yield row
                count += 1
                first_line = reader.line_num + 1
                if limit is not None and count >= limit:
                    return
        except csv.Error as err:
            raise DataError(f"{path}:{first_line}: malformed {fmt.upper()} row ({err}; unterminated quote?)") from None


def _decoded_lines(handle: IO[bytes], path: Path) -> Iterator[str]:
    """The lines of a binary file as text (with their line endings, as ``csv`` wants them); a byte that
    is not UTF-8 is a one-line :class:`DataError` naming its line and its byte offset."""
    offset = 0
    for line_no, raw in enumerate(handle, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(f"{path}:{line_no}: line is not valid UTF-8 (byte {offset + err.start})") from None
        offset += len(raw)


def table_line(path: str | Path, index: int, fmt: str | None = None) -> int:
    """The 1-based line of row ``index`` of a table :func:`read_table` read (one row a line, after
    the header for CSV / TSV: a field that runs over lines is an error there)."""
    fmt = fmt or TABLE_SUFFIXES.get(Path(path).suffix.lower(), "csv")
    return index + (1 if fmt == "jsonl" else 2)


def _pick(record: dict, columns: Sequence[str], path: Path, line_no: int) -> tuple[str, ...]:
    values = []
    for column in columns:
        if column not in record or record[column] is None:
            raise DataError(f"{path}:{line_no}: missing column {column!r}")
        value = record[column]
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # a score or label column
            value = str(value)
        values.append(_check_sentence(value, path, line_no, what=f"column {column!r}"))
    return tuple(values)


def read_column(path: str | Path, column: str, fmt: str | None = None, limit: int | None = None) -> list[str]:
    """One column of a JSONL / CSV / TSV file as a list of sentences."""
    return [row[0] for row in read_table(path, [column], fmt=fmt, limit=limit)]
