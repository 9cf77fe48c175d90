"""Training text as a memory-mapped table: the same lines as the strict reader, converted once, read
only to ``limit``, rebuilt when half-written or when the file changed, and bad input refused in one line
with no cache left behind."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from sentlab import cache_folder
from sentlab.cache_folder import RECORD
from sentlab.data import tables, text_conversion
from sentlab.data.readers import read_sentences
from sentlab.data.tables import ARROW, ROWS, sentence_table, table_folder, text_record
from sentlab.data.text_conversion import MAX_LINE_BYTES
from sentlab.errors import DataError
from sentlab.rank.index import corpus_sha256


def recorded_sha256(path, limit=None) -> str:
    return json.loads((table_folder(path, limit) / RECORD).read_text("utf-8"))["sha256"]


LINES = [f"sentence number {i} with some words é" for i in range(1000)]


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    return path


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 1 kB, so a 40 kB file crosses many block boundaries (lines cut between two reads)."""
    monkeypatch.setattr(text_conversion, "BLOCK_BYTES", 1024)


def test_the_table_holds_the_strict_readers_lines_and_their_hash(text, small_blocks):
    table = sentence_table(text)
    assert table.column_names == ["sentence"]
    assert table["sentence"] == read_sentences(text) == LINES
    assert recorded_sha256(text) == corpus_sha256(LINES)
    assert table.cache_files and table.cache_files[0]["filename"].endswith(ARROW)  # memory-mapped, not in RAM


def test_crlf_and_a_last_line_without_newline_read_as_the_strict_reader_does(tmp_path, small_blocks):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"one line\r\ntwo words\r\nthe last one")
    assert sentence_table(path)["sentence"] == read_sentences(path) == ["one line", "two words", "the last one"]


def test_limit_reads_only_what_it_keeps(text, small_blocks):
    with text.open("ab") as f:
        f.write(b"\xff not utf-8 and after the limit\n")
    assert sentence_table(text, limit=10)["sentence"] == LINES[:10]
    assert recorded_sha256(text, limit=10) == corpus_sha256(LINES[:10])
    with pytest.raises(DataError, match="text.txt:1001: line is not valid UTF-8"):
        sentence_table(text)


def test_a_second_call_reuses_the_table(text):
    sentence_table(text)
    arrow = table_folder(text, None) / ARROW
    stamp = arrow.stat().st_mtime_ns
    assert sentence_table(text)["sentence"] == LINES
    assert arrow.stat().st_mtime_ns == stamp  # not converted again


def test_a_changed_file_is_converted_again(text):
    sentence_table(text)
    with text.open("a", encoding="utf-8") as f:
        f.write("one more line\n")
    assert sentence_table(text)["sentence"] == [*LINES, "one more line"]


@pytest.mark.parametrize("how", ["in place", "copied over with its times kept"])
def test_a_same_size_edit_that_keeps_the_mtime_is_converted_again(text, tmp_path, how):
    """What ``touch -r``, ``cp -p`` or ``rsync -a`` leave: the same size and mtime, other text."""
    sentence_table(text)
    time.sleep(0.05)  # past the kernel's coarse clock (a few ms), which status-change times are taken from
    before = text.stat()
    edited = text.read_text("utf-8").replace(LINES[0], LINES[0][::-1], 1)
    assert len(edited.encode()) == before.st_size and edited != text.read_text("utf-8")
    if how == "in place":
        text.write_text(edited, encoding="utf-8")
    else:
        other = tmp_path / "other.txt"
        other.write_text(edited, encoding="utf-8")
        os.replace(other, text)
    os.utime(text, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert text.stat().st_size == before.st_size and text.stat().st_mtime_ns == before.st_mtime_ns
    assert sentence_table(text)["sentence"][0] == LINES[0][::-1]
    assert recorded_sha256(text) == corpus_sha256([LINES[0][::-1], *LINES[1:]])


def test_two_tables_whose_fields_hold_tabs_differently_have_different_hashes(tmp_path):
    """A row's fields are hashed length-prefixed: ("a\tb", "c") and ("a", "b\tc") are other rows."""
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text(json.dumps({"x": "a\tb", "y": "c"}) + "\n", encoding="utf-8")
    two.write_text(json.dumps({"x": "a", "y": "b\tc"}) + "\n", encoding="utf-8")
    assert text_record(one, columns=["x", "y"])["sha256"] != text_record(two, columns=["x", "y"])["sha256"]
    lines, joined = tmp_path / "lines.jsonl", tmp_path / "joined.jsonl"  # one column: a newline in a value
    lines.write_text(json.dumps({"x": "a"}) + "\n" + json.dumps({"x": "b"}) + "\n", encoding="utf-8")
    joined.write_text(json.dumps({"x": "a\nb"}) + "\n", encoding="utf-8")
    assert text_record(lines, columns=["x"])["sha256"] != text_record(joined, columns=["x"])["sha256"]


@pytest.mark.parametrize("damage", ["no record", "arrow cut", "partial only", "record of another file"])
def test_a_half_written_cache_is_rebuilt_never_read(text, damage):
    sentence_table(text)
    folder = table_folder(text, None)
    arrow, record = folder / ARROW, folder / RECORD
    if damage == "no record":  # killed after the rename, before the record
        record.unlink()
    elif damage == "arrow cut":
        arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    elif damage == "partial only":  # killed while writing: its folder never renamed into place
        folder.rename(folder.with_name(f".{folder.name}.partial-123"))
    else:
        tree = json.loads(record.read_text("utf-8"))
        record.write_text(json.dumps({**tree, "size": tree["size"] + 1}), encoding="utf-8")
    assert sentence_table(text)["sentence"] == LINES
    assert sorted(p.name for p in folder.iterdir()) == sorted([ARROW, RECORD, ROWS])


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty.txt: file has no sentences"),
        (b"fine\n\xff\xfe bad\n", "empty.txt:2: line is not valid UTF-8 (byte 5)"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\n\x03\x00", "empty.txt:1: a NUL byte: this looks like a binary file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "empty.txt:1: line is not valid UTF-8 (byte 0)"),
        (b"fine\n  \t \nmore\n", "empty.txt:2: empty line"),
        (b"fine\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\n", "empty.txt:2: line is longer than 1,000,000 bytes"),
        (b"x" * (3 * MAX_LINE_BYTES), "empty.txt:1: line is longer than 1,000,000 bytes"),
    ],
    ids=["empty", "not-utf8", "binary-nul", "binary-png", "blank-line", "long-line", "long-line-no-newline"],
)
def test_bad_input_is_one_line_and_leaves_no_cache(tmp_path, monkeypatch, content, message):
    monkeypatch.setattr(text_conversion, "BLOCK_BYTES", 64 * 1024)  # the 3 MB line spans many reads
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(DataError, match=re.escape(message)) as caught:
        sentence_table(path)
    assert "\n" not in str(caught.value)
    assert not table_folder(path, None).exists()


def test_a_file_that_changes_while_it_is_read_is_refused(text, monkeypatch):
    write = tables.write_text

    def grows_while_read(path, limit, out):
        result = write(path, limit, out)
        with path.open("a", encoding="utf-8") as f:
            f.write("appended by another process\n")
        return result

    monkeypatch.setattr(tables, "write_text", grows_while_read)
    with pytest.raises(DataError, match="text.txt: changed while it was being read"):
        sentence_table(text)
    assert not table_folder(text, None).exists()


def test_a_folder_or_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(DataError, match="is a folder"):
        sentence_table(tmp_path)
    with pytest.raises(DataError, match="file not found"):
        sentence_table(tmp_path / "nothing.txt")


def test_the_training_table_keeps_the_anonymous_memory_flat(tmp_path):
    """Reading a table's rows touches the memory-mapped file, not the heap: a 40 MB text adds far less
    than its size to the process's anonymous memory (the strict reader's list adds several times it)."""
    path = tmp_path / "big.txt"
    line = "a sentence of a Wikipedia-like length with a few more words in it to read\n"
    with path.open("w", encoding="utf-8") as f:
        for _ in range(40_000_000 // len(line)):
            f.write(line)
    table = sentence_table(path)
    before = _rss_anon()
    total = sum(len(batch["sentence"]) for batch in table.iter(batch_size=50_000))
    grown = _rss_anon() - before
    assert total == len(table)
    assert grown < 15_000_000, f"anonymous memory grew by {grown:,} bytes reading a 40 MB table"


def _rss_anon() -> int:
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    pytest.skip("no /proc/self/status RssAnon here")


def test_shuffled_rows_is_random_shuffle_of_the_rows():
    import random

    from sentlab.adapt import shuffled_rows

    expected = list(range(1000))
    random.Random(0).shuffle(expected)
    assert list(shuffled_rows(1000, 0)) == expected


def test_the_conversion_is_atomic_on_disk(text):
    """The folder appears under its name only complete (built aside, its record last, then renamed)."""
    seen = []
    replace = os.replace

    def watching(source, target):
        seen.append((os.path.basename(source), os.path.basename(target)))
        return replace(source, target)

    import unittest.mock

    with unittest.mock.patch.object(cache_folder.os, "replace", watching):
        sentence_table(text)
    folder = table_folder(text, None).name
    assert seen == [(f".{folder}.partial-{os.getpid()}", folder)]


def test_the_row_index_column_is_memory_mapped_beside_the_table(text, monkeypatch):
    from datasets import Dataset
    from datasets.table import MemoryMappedTable

    monkeypatch.setattr(text_conversion, "ROW_CHUNK", 300)  # 1000 rows: 3 chunks of 300 and one of 100
    table = sentence_table(text)
    indexed = tables.with_row_index(table)
    assert indexed["label"][:] == list(range(1000)) and indexed["sentence"][:] == LINES
    assert all(isinstance(block, MemoryMappedTable) for row in indexed.data.blocks for block in row)
    assert tables.with_row_index(table, "row")["row"][-1] == 999
    in_memory = tables.with_row_index(Dataset.from_dict({"sentence": ["a", "b"]}))
    assert in_memory["label"][:] == [0, 1]
    selected = tables.with_row_index(table.select(range(10)))  # not the table the folder's numbers count
    assert selected["label"][:] == list(range(10))


def test_a_table_file_becomes_a_memory_mapped_table_of_its_columns(tmp_path):
    from datasets.table import MemoryMappedTable

    from sentlab.data.readers import read_table

    path = tmp_path / "pairs.jsonl"
    rows = [{"a": f"first {i}", "b": f"second {i}", "n": i} for i in range(10)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    table = tables.column_table(path, ["a", "b"], ["anchor", "positive"], limit=7)
    assert table.column_names == ["anchor", "positive"]
    assert list(zip(table["anchor"], table["positive"])) == read_table(path, ["a", "b"], limit=7)
    assert isinstance(table.data, MemoryMappedTable)
    assert tables.column_table(path, ["b"])["b"][:] == [f"second {i}" for i in range(10)]  # its own cache
    # one column's record hashes its values a line each, as a text file of them: frozen vectors key on it
    assert tables.text_record(path, columns=["b"])["sha256"] == corpus_sha256(f"second {i}" for i in range(10))
    assert len(tables.column_table(path, ["a", "b"], limit=7)) == 7  # reused, under its own names

    path.write_text(path.read_text("utf-8") + '{"a": "first 10"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"pairs.jsonl:11: missing column 'b'"):
        tables.column_table(path, ["a", "b"])  # changed: converted again, and the new row refused
    folder = table_folder(path, None, columns=("a", "b"))
    assert not folder.exists() and not list(folder.parent.glob(f".{folder.name}.partial-*"))  # nothing left


def test_two_readers_that_need_one_table_at_once_build_it_once(text, monkeypatch):
    """torchrun's processes start together and need the same table: the first builds it under the
    folder's lock, the second waits and reads it (without the lock it would remove the first one's
    half-written file). Threads hold the lock file open separately, so they exclude each other as
    processes do."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    calls, started = [], threading.Event()
    real = tables.write_text

    def slow(path, limit, out):
        calls.append(out)
        started.set()
        time.sleep(0.5)  # the second reader arrives while the first is still writing
        return real(path, limit, out)

    monkeypatch.setattr(tables, "write_text", slow)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(text_record, text)
        assert started.wait(10)
        second = pool.submit(text_record, text)
        assert first.result() == second.result()
    assert len(calls) == 1 and len(sentence_table(text)) == len(LINES)


def test_a_chmod_or_a_copy_with_the_same_bytes_keeps_the_table(text, tmp_path):
    """Another inode or status-change time with the same size and mtime: the file is hashed, and the
    same bytes keep the table (not converted again); the record takes the file's new state."""
    sentence_table(text)
    arrow = table_folder(text, None) / ARROW
    stamp = arrow.stat().st_mtime_ns
    time.sleep(0.05)  # past the coarse clock status-change times are taken from
    os.chmod(text, 0o600)
    copy = tmp_path / "copy.txt"
    copy.write_bytes(text.read_bytes())
    os.utime(copy, ns=(text.stat().st_atime_ns, text.stat().st_mtime_ns))
    os.replace(copy, text)  # cp -p: the same bytes and times, another inode
    assert sentence_table(text)["sentence"] == LINES
    assert arrow.stat().st_mtime_ns == stamp  # reused
    record = json.loads((table_folder(text, None) / RECORD).read_text())
    assert (record["inode"], record["ctime_ns"]) == (text.stat().st_ino, text.stat().st_ctime_ns)


def test_a_valid_table_is_read_without_writing_to_the_cache(text, monkeypatch, isolated_cache):
    """A read-only cache serves what it holds: a valid table is read without the lock, without a
    build and without a write (the record's use time, which a read-only cache cannot take, is skipped)."""
    sentence_table(text)
    before = {p: p.stat().st_mtime_ns for p in isolated_cache.rglob("*")}

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tables, "folder_lock", refused)
    monkeypatch.setattr(cache_folder.os, "utime", refused)
    assert sentence_table(text)["sentence"] == LINES
    assert tables.with_row_index(sentence_table(text))["label"][-1] == len(LINES) - 1
    assert {p: p.stat().st_mtime_ns for p in isolated_cache.rglob("*")} == before


@pytest.mark.parametrize(
    "error, message",
    [
        (PermissionError(13, "Permission denied"), "cannot write here (Permission denied)"),
        (OSError(28, "No space left on device"), "the disk is full (No space left on device)"),
    ],
)
def test_a_cache_that_cannot_be_written_is_one_line(text, monkeypatch, error, message):
    from sentlab.cache_folder import CacheWriteError

    def fails(*args, **kwargs):
        raise error

    monkeypatch.setattr(text_conversion.pa, "OSFile", fails)
    with pytest.raises(CacheWriteError, match=re.escape(message)) as caught:
        sentence_table(text)
    assert "\n" not in str(caught.value)
    assert not table_folder(text, None).exists()


def test_a_table_larger_than_the_cache_cap_is_kept_and_read(text, monkeypatch):
    """The cap evicts other entries, never the table just built (which the run is about to read)."""
    monkeypatch.setenv("SENTLAB_CACHE_MAX_GB", "0")
    assert sentence_table(text)["sentence"] == LINES


def test_the_files_own_hash_covers_a_last_line_without_newline(tmp_path, small_blocks):
    """The record's source_sha256 is the file's sha256 whatever its blocks hold (here a last line with
    no newline, and blocks of 1 KB that hold no newline at all)."""
    import hashlib

    path = tmp_path / "one.txt"
    path.write_bytes(("x" * 3000 + "\n" + "last line without newline").encode())
    record = text_record(path)
    assert record["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["rows"] == 2


def test_what_a_killed_build_left_is_removed_by_the_next_build(text):
    folder = table_folder(text, None)
    folder.parent.mkdir(parents=True, exist_ok=True)
    left = folder.with_name(f".{folder.name}.partial-99999")
    (left / "half").mkdir(parents=True)
    assert sentence_table(text)["sentence"] == LINES
    assert not left.exists()


def test_a_lock_timeout_that_is_not_a_number_is_one_line(text, monkeypatch):
    monkeypatch.setenv("SENTLAB_LOCK_TIMEOUT", "soon")
    with pytest.raises(DataError, match=r"^SENTLAB_LOCK_TIMEOUT='soon': expected a number of seconds"):
        sentence_table(text)
