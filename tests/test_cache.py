"""The on-disk embedding cache: reused across processes, keyed by everything a vector depends on,
never returning a partial or damaged entry, and kept under its size cap."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from sentlab.cache import EmbeddingStore, cache_clear, cache_info, texts_sha256
from sentlab.cli import main
from sentlab.encoders import build_encoder
from sentlab.evaluation.scoring import EmbeddingCache, embedding_setting


@pytest.fixture
def store(tmp_path):
    return EmbeddingStore(tmp_path / "embeddings", max_bytes=10**9)


def rows(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def test_put_then_get_returns_the_same_rows_memory_mapped(store):
    key = store.key({"model": "m"}, ["a", "b", "c"])
    store.put(key, rows(3), {"model": "m"})
    got = store.get(key, 3)
    assert isinstance(got, np.memmap)
    np.testing.assert_array_equal(got, rows(3))


def test_keys_depend_on_the_setting_and_on_every_text():
    assert EmbeddingStore.key({"precision": "fp32"}, ["a"]) != EmbeddingStore.key({"precision": "int8"}, ["a"])
    assert EmbeddingStore.key({}, ["a", "b"]) != EmbeddingStore.key({}, ["b", "a"])
    assert texts_sha256(["ab", "c"]) != texts_sha256(["a", "bc"])  # no collision by joining


@pytest.mark.parametrize("damage", ["no_description", "truncated", "flipped_byte", "wrong_count"])
def test_partial_or_damaged_entries_are_deleted_and_not_read(store, damage):
    key = store.key({}, ["x"] * 1)
    store.put(key, rows(50), {})
    array, meta = store.root / f"{key}.npy", store.root / f"{key}.json"
    n = 50
    if damage == "no_description":  # killed between writing the rows and their description
        meta.unlink()
        assert store.get(key, n) is None and array.exists()  # recent: maybe another writer's, in flight
        os.utime(array, (1, 1))  # long ago: what a killed writer left
    elif damage == "truncated":
        array.write_bytes(array.read_bytes()[:-100])
    elif damage == "flipped_byte":
        data = bytearray(array.read_bytes())
        data[-1] ^= 0xFF
        array.write_bytes(bytes(data))
    else:
        n = 49
    assert store.get(key, n) is None
    assert not array.exists() and not meta.exists()


def test_a_write_killed_midway_leaves_nothing_readable(store, monkeypatch):
    key = store.key({}, ["a"])
    real_replace = os.replace

    def die_before_the_description(src, dst):
        if str(dst).endswith(".json"):
            raise KeyboardInterrupt  # the process is killed after the rows landed
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", die_before_the_description)
    with pytest.raises(KeyboardInterrupt):
        store.put(key, rows(4), {})
    monkeypatch.setattr(os, "replace", real_replace)
    assert store.get(key, 4) is None
    assert [p.suffix for p in store.root.iterdir()] == [".npy"]  # temporary files removed; the rows kept
    os.utime(next(store.root.iterdir()), (1, 1))  # while recent (another writer's, maybe); once old:
    assert store.get(key, 4) is None
    assert list(store.root.iterdir()) == []  # the orphan .npy deleted


def test_size_cap_evicts_the_least_recently_used(tmp_path):
    one_entry = 100 * 8 * 4 + 128 + 1000  # rows + .npy header + description (upper bound)
    store = EmbeddingStore(tmp_path / "embeddings", max_bytes=2 * one_entry)
    keys = [store.key({}, [str(i)]) for i in range(3)]
    store.put(keys[0], rows(100), {})
    store.put(keys[1], rows(100), {})
    os.utime(store.root / f"{keys[0]}.json", (1, 1))  # entry 0 used long ago ...
    os.utime(store.root / f"{keys[1]}.json", (2, 2))
    assert store.get(keys[0], 100) is not None  # ... and now again: entry 1 is the least recent
    store.put(keys[2], rows(100), {})
    assert store.get(keys[1], 100) is None
    assert store.get(keys[0], 100) is not None and store.get(keys[2], 100) is not None
    assert not store.put(store.key({}, ["big"]), rows(1000), {})  # larger than the cap: not stored


def test_a_second_cache_over_the_same_model_encodes_nothing(tiny_backbone_no_dropout, corpus_file, store):
    texts = corpus_file.read_text().splitlines()
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    first = EmbeddingCache(model, store=store, min_store_rows=10)
    vectors = first.encode(texts + texts[:5])  # duplicates are encoded once and returned in place
    assert first.encoded == len(set(texts))
    second = EmbeddingCache(build_encoder(str(tiny_backbone_no_dropout), "mean"), store=store, min_store_rows=10)
    again = second.encode(texts + texts[:5])
    assert second.encoded == 0
    np.testing.assert_array_equal(again, vectors)
    other = EmbeddingCache(build_encoder(str(tiny_backbone_no_dropout), "cls"), store=store, min_store_rows=10)
    other.encode(texts)
    assert other.encoded == len(set(texts))  # another pooling is another entry
    assert embedding_setting(other.model) != first.setting


def test_everything_that_changes_the_vectors_is_in_the_key(tiny_backbone_no_dropout, corpus_file, store):
    """The length, the model's default prompt, a card's prompts and its data each change the vectors: each
    changed alone is a fresh encode of every text, never the entry of the texts as they were."""
    from sentlab.encoders.prompts import prompted

    texts = corpus_file.read_text().splitlines()[:40]

    def fresh(model, sentences=texts) -> bool:
        cache = EmbeddingCache(model, store=store, min_store_rows=10)
        cache.encode(sentences)
        return cache.encoded == len(set(sentences))

    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    assert fresh(model) and not fresh(model)  # stored, then read back
    model.max_seq_length = 4
    assert fresh(model)
    model.max_seq_length = 64
    model.prompts = {"query": "query: "}
    model.default_prompt_name = "query"  # sentence-transformers puts it before every text, unasked
    assert fresh(model) and not fresh(model)
    model.default_prompt_name = None
    assert fresh(model, prompted(texts, "passage: "))  # a card's prompt is in the texts of the key
    assert fresh(model, [*texts[:-1], texts[-1] + " again"])  # a card's data changed in one row


def test_cache_commands_report_and_clear(tiny_backbone_no_dropout, tmp_path, isolated_cache, capsys):
    # more than the 256 distinct texts a list needs to be stored
    texts = [f"the dog {' '.join(['runs'] * (i % 7))} in park {i}" for i in range(300)]
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    first = EmbeddingCache(model, store=EmbeddingStore.default()).encode(texts)
    info = cache_info()
    assert info["root"] == str(isolated_cache) and info["embeddings"]["entries"] == 1
    again = EmbeddingCache(model, store=EmbeddingStore.default())
    np.testing.assert_array_equal(again.encode(texts), first)
    assert again.encoded == 0  # read back, not encoded
    capsys.readouterr()
    assert main(["cache", "info"]) == 0
    assert "embeddings: 1 entries" in capsys.readouterr().out
    assert main(["cache", "clear", "--embeddings"]) == 0
    assert cache_info()["embeddings"]["entries"] == 0
    assert cache_clear() == (0, [])


def test_eval_records_backend_and_precision_and_names_the_setting(tiny_backbone_no_dropout, data_dir, tmp_path):
    pytest.importorskip("onnxruntime")
    model_dir = tmp_path / "model"
    build_encoder(str(tiny_backbone_no_dropout), "mean").save(str(model_dir))
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "--model",
                str(model_dir),
                "--tasks",
                "sts",
                "--backend",
                "onnx",
                "--precision",
                "int8",
                "--output",
                str(out),
                "--data-dir",
                str(data_dir),
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["model"].endswith("[onnx int8]")
    assert report["settings"]["backend"] == "onnx" and report["settings"]["precision"] == "int8"


def test_every_part_of_the_cache_is_counted_and_evicted_least_recently_used_first(
    corpus_file, tmp_path, isolated_cache, capsys, monkeypatch
):
    """Tables are entries of the cache like embeddings: counted by ``cache info``, evicted under the
    one cap (least recently used first, a folder being built never), cleared by ``cache clear``."""
    from filelock import FileLock

    from sentlab import progress
    from sentlab.cache import cache_entries, evict_cache
    from sentlab.cache_folder import release_all_in_use
    from sentlab.data.tables import sentence_table, table_folder

    monkeypatch.setitem(progress._state, "quiet", False)  # an earlier --quiet command of this process

    other = tmp_path / "other.txt"
    other.write_text(corpus_file.read_text())
    sentence_table(corpus_file)
    sentence_table(other)
    store = EmbeddingStore(isolated_cache / "embeddings")
    store.put(store.key({}, ["x"]), rows(10), {})
    old, recent = table_folder(corpus_file, None), table_folder(other, None)
    release_all_in_use()  # as if another process had used them and exited
    os.utime(old / "complete.json", (1, 1))  # used long ago
    info = cache_info()
    assert info["text"]["entries"] == 2 and info["embeddings"]["entries"] == 1
    entries = cache_entries()
    assert entries[0].paths == [old]
    total = sum(entry.bytes for entry in entries)
    with FileLock(str(old.with_name(old.name + ".lock"))):  # being rebuilt by another process: kept
        assert evict_cache(max_bytes=total - 1) == [f"text/{recent.name}"]
    assert old.is_dir() and not recent.exists()
    capsys.readouterr()
    embedding = next(store.root.glob("*.npy")).name
    assert evict_cache(max_bytes=0) == [f"text/{old.name}", f"embeddings/{embedding}"]
    assert "removed 2 entries" in capsys.readouterr().err
    sentence_table(corpus_file)
    release_all_in_use()
    assert main(["cache", "info"]) == 0
    assert "text: 1 entries" in capsys.readouterr().out
    assert main(["cache", "clear", "--text"]) == 0
    assert cache_info()["text"]["entries"] == 0


def test_an_embedding_cache_that_cannot_be_written_is_skipped_in_one_line(tmp_path, monkeypatch, capsys):
    from sentlab import progress

    monkeypatch.setitem(progress._state, "quiet", False)
    store = EmbeddingStore(tmp_path / "embeddings", max_bytes=10**9)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", full)
    assert store.put(store.key({}, ["x"]), rows(10), {}) is False
    err = capsys.readouterr().err
    assert "not stored (No space left on device); the vectors are used without it" in err and "Traceback" not in err
    assert list(store.root.iterdir()) == []  # nothing half-written left


def dead_pid() -> int:
    """The PID of a process that has exited (its number is free until the system reuses it)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


HOLD = """
import sys, time
from pathlib import Path
from sentlab.cache_folder import hold_in_use
assert hold_in_use(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(120)
"""


def test_builds_in_progress_and_leftovers_are_entries_by_one_rule(corpus_file, isolated_cache, capsys):
    """Every part lists by one rule: a build in progress (a live PID in its name) counts toward the cap
    and is never evicted or cleared; what a killed build left (a dead PID) counts, shows in cache info
    and is cleaned first; lock files are not entries."""
    from sentlab.cache import cache_entries, evict_cache

    live, dead = os.getpid(), dead_pid()
    for part, name in (
        ("text", ".abc.partial-{pid}"),
        ("rse", ".abc.partial-{pid}"),
        ("exports", "f/.onnx-fp32.partial-{pid}"),
    ):
        for pid in (live, dead):
            folder = isolated_cache / part / name.format(pid=pid)
            folder.mkdir(parents=True)
            (folder / "blob").write_bytes(b"x" * 1000)
    embeddings = isolated_cache / "embeddings"
    embeddings.mkdir()
    (embeddings / f".key.npy.{dead}-0123abcd.tmp").write_bytes(b"y" * 500)  # atomic_path's, of a killed writer
    (embeddings / f"key.npy.tmp-{dead}").write_bytes(b"y" * 500)  # an earlier version's
    (isolated_cache / "text" / "abc.lock").touch()
    (isolated_cache / "text" / "abc.inuse").touch()
    import time

    long_ago = time.time() - 3600  # a killed build's files stopped changing an hour ago
    for path in isolated_cache.rglob("*"):
        if str(dead) in str(path):
            os.utime(path, (long_ago, long_ago))
    recent = isolated_cache / "rse" / f".fresh.partial-{dead}"  # a dead PID, still written: another machine's
    recent.mkdir()
    (recent / "blob").write_bytes(b"z" * 10)
    assert [e.state for e in cache_entries() if e.paths[0] == recent] == ["building"]
    recent.rename(isolated_cache / "rse" / "fresh")  # renamed into place, as a finished build is
    states = {(e.part, e.state) for e in cache_entries() if e.paths[0].name != "fresh"}
    assert states == {(p, s) for p in ("text", "rse", "exports") for s in ("building", "leftover")} | {
        ("embeddings", "leftover")
    }
    info = cache_info()
    assert info["exports"]["building"] == {"entries": 1, "bytes": 1000}
    assert info["exports"]["leftovers"] == {"entries": 1, "bytes": 1000} and info["exports"]["bytes"] == 2000
    assert info["embeddings"]["leftovers"]["entries"] == 2 and info["text"]["entries"] == 0
    capsys.readouterr()
    assert main(["cache", "info"]) == 0
    assert (
        "exports: 0 entries, 1 being built (0.0 MB), 1 left by killed builds (0.0 MB), 0.0 MB"
        in capsys.readouterr().out
    )
    removed = evict_cache(max_bytes=10**9)  # under the cap: the leftovers go all the same
    assert len(removed) == 5 and {e.state for e in cache_entries() if e.paths[0].name != "fresh"} == {"building"}
    evict_cache(max_bytes=0)
    freed, skipped = cache_clear()
    assert freed == 0 and len(skipped) == 3  # the builds in progress stay (the finished "fresh" went)
    assert all(p.is_dir() for p in (isolated_cache / "text").glob(f".abc.partial-{live}"))
    assert (isolated_cache / "text" / "abc.lock").exists()  # a lock file is never removed


def test_an_entry_another_process_reads_is_neither_evicted_nor_cleared(corpus_file, isolated_cache, capsys):
    """A process that uses a cached table marks it (a shared lock on its .lock file); eviction and
    cache clear pass over it while that process runs, and remove it once it has exited."""
    import subprocess
    import sys

    from sentlab.cache import evict_cache
    from sentlab.cache_folder import release_all_in_use
    from sentlab.data.tables import sentence_table, table_folder
    from tests.conftest import subprocess_env

    sentence_table(corpus_file)
    release_all_in_use()  # this process is done with it; another one reads it now
    folder = table_folder(corpus_file, None)
    reader = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True, env=subprocess_env()
    )
    try:
        assert reader.stdout.readline().strip() == "held"
        assert evict_cache(max_bytes=0) == [] and folder.is_dir()
        assert cache_clear() == (0, [f"text/{folder.name}"]) and folder.is_dir()
        assert main(["cache", "clear"]) == 0
        assert "left 1 entries being built or read by another process" in capsys.readouterr().out
    finally:
        reader.kill()
        reader.wait()
    assert evict_cache(max_bytes=0) == [f"text/{folder.name}"] and not folder.exists()


def test_an_unreadable_source_is_said_as_such(corpus_file, monkeypatch):
    """A source the process may not read is named as the file that cannot be read, not as a cache
    that cannot be written (with advice to move $SENTLAB_CACHE)."""
    import errno

    from sentlab.data import tables
    from sentlab.errors import DataError

    def denied(path, limit, out):
        raise PermissionError(errno.EACCES, "Permission denied", str(corpus_file))

    monkeypatch.setattr(tables, "write_text", denied)
    with pytest.raises(DataError, match=rf"^{corpus_file}: cannot read it \(Permission denied\)$"):
        tables.sentence_table(corpus_file)


def test_atomic_writes_share_no_temporary_name_and_leave_nothing_on_error(tmp_path):
    from sentlab.paths import TEMPORARY, atomic_path, write_text_atomic

    target = tmp_path / "out.json"
    with atomic_path(target) as first, atomic_path(target) as second:
        assert first != second and TEMPORARY.match(first.name).group(1) == str(os.getpid())
        first.write_text("1")
        second.write_text("2")
    assert target.read_text() == "1"  # each renames when its own block ends: the outer one last
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "1" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    write_text_atomic(target, "whole")
    assert target.read_text() == "whole"
