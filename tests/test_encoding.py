"""sentlab encode: a text file into one .npy in chunks, resumable after a kill without encoding the
finished chunks again, on one process or several."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from sentlab.cli import main
from sentlab.encoders import build_encoder
from sentlab.encoding import encode_file
from tests.conftest import the_error


@pytest.fixture()
def texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("".join(f"the dog {' '.join(['runs'] * (i % 7))} in park {i}\n" for i in range(250)))
    return path


def test_a_killed_run_resumes_and_encodes_only_what_was_left(tiny_backbone_no_dropout, texts, tmp_path, monkeypatch):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    whole = model.encode(texts.read_text().splitlines(), batch_size=64)
    out = tmp_path / "e.npy"
    original, calls = model.encode, []

    def killed_at_the_third_chunk(sentences, **kwargs):
        calls.append(len(sentences))
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        return original(sentences, **kwargs)

    monkeypatch.setattr(model, "encode", killed_at_the_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=64, batch_size=64)
    assert not out.exists() and json.loads((tmp_path / "e.npy.progress.json").read_text())["done"] == [0, 1]
    calls.clear()
    monkeypatch.setattr(
        model, "encode", lambda sentences, **kwargs: calls.append(len(sentences)) or original(sentences, **kwargs)
    )
    record = encode_file(model, texts, out, chunk_rows=64, batch_size=64)
    assert calls == [64, 58]  # chunks 2 and 3 only
    assert record["resumed_chunks"] == 2 and record["encoded_now"] == 122
    result = np.load(out)
    assert result.shape == (250, whole.shape[1]) and result.dtype == np.float32
    # encode() sorts its input by length before batching, so a chunk's batches are not those of the
    # whole list: other padding, float32 rounding of the mean (1e-5 absolute on rows of norm about 1)
    np.testing.assert_allclose(result, whole, atol=1e-5)
    assert not (tmp_path / "e.npy.progress.json").exists() and not (tmp_path / "e.npy.partial").exists()
    calls.clear()
    assert encode_file(model, texts, out, chunk_rows=64, batch_size=64)["plan"] == record["plan"]
    assert calls == []  # the same again: nothing to do


def test_one_process_encodes_in_batches_of_similar_token_length(tiny_backbone_no_dropout, tmp_path, monkeypatch):
    """Within a chunk, batches are cut from the sentences sorted by token count (longest first), as
    sentlab's evaluation encodes: each batch's shortest sentence is at least the next batch's longest."""
    from sentlab.encoders.batching import token_lengths

    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    original, batches = model.encode, []

    def recorded(sentences, **kwargs):
        batches.append(token_lengths(model, sentences))
        return original(sentences, **kwargs)

    # characters and tokens order these lines differently: one long word (few tokens, many characters)
    # against many short words (many tokens, few characters)
    lines = [("x" * (20 + i) if i % 2 else " ".join(["a"] * (2 + i % 11))) + "\n" for i in range(100)]
    source = tmp_path / "mixed.txt"
    source.write_text("".join(lines))
    by_characters = sorted(range(100), key=lambda i: -len(lines[i]))
    tokens = token_lengths(model, [line.strip() for line in lines])
    assert any(tokens[a] < tokens[b] for a, b in zip(by_characters, by_characters[1:]))  # the orders disagree
    monkeypatch.setattr(model, "encode", recorded)
    encode_file(model, source, tmp_path / "e.npy", chunk_rows=100, batch_size=16)
    assert [len(b) for b in batches] == [16] * 6 + [4]
    assert all(batches[i].min() >= batches[i + 1].max() for i in range(len(batches) - 1))
    monkeypatch.setattr(model, "encode", original)
    whole = original([line.strip() for line in lines], batch_size=16)
    np.testing.assert_allclose(np.load(tmp_path / "e.npy"), whole, atol=1e-5)  # other padding: float32 rounding


def test_other_settings_start_over_instead_of_mixing_two_runs(tiny_backbone_no_dropout, texts, tmp_path, monkeypatch):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    out = tmp_path / "e.npy"
    original, calls = model.encode, []

    def killed(sentences, **kwargs):
        calls.append(len(sentences))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(sentences, **kwargs)

    monkeypatch.setattr(model, "encode", killed)
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=64)
    monkeypatch.setattr(model, "encode", original)
    normalized = encode_file(model, texts, out, chunk_rows=64, normalize=True)
    assert normalized["resumed_chunks"] == 0  # normalised rows are other rows: nothing of the first run kept
    np.testing.assert_allclose(np.linalg.norm(np.load(out), axis=1), 1.0, rtol=1e-5)


@pytest.mark.slow
def test_two_processes_give_the_rows_one_process_gives(tiny_backbone_no_dropout, texts, tmp_path):
    """sentence-transformers' multi-process pool (two CPU processes) against one process; the pool
    batches its own share of each chunk, so rows may differ by padding's rounding (float32: 1e-5)."""
    model_dir = tmp_path / "model"
    build_encoder(str(tiny_backbone_no_dropout), "mean").save(str(model_dir))
    argv = ["encode", "--model", str(model_dir), "--input", str(texts), "--chunk-rows", "100", "--quiet"]
    assert main([*argv, "--output", str(tmp_path / "one.npy")]) == 0
    assert main([*argv, "--output", str(tmp_path / "two.npy"), "--devices", "cpu,cpu"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "two.npy"), np.load(tmp_path / "one.npy"), atol=1e-5)
    assert json.loads((tmp_path / "two.npy.json").read_text())["processes"] == ["cpu", "cpu"]


def test_bad_input_is_one_line(tiny_backbone_no_dropout, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    argv = ["encode", "--model", str(tiny_backbone_no_dropout), "--input", str(empty)]
    assert main([*argv, "--output", str(tmp_path / "e.npy")]) != 0
    assert "no sentences" in the_error(capsys.readouterr().err)
    assert main([*argv, "--output", str(tmp_path / "e.txt")]) != 0
    assert "must end in .npy" in the_error(capsys.readouterr().err)


def test_a_progress_file_never_vouches_for_another_runs_matrix(tiny_backbone_no_dropout, texts, tmp_path, monkeypatch):
    """Run A killed after two chunks; run B (other settings) starts over and is killed before its
    first chunk; A again must not take B's empty matrix for its two chunks."""
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    out, original = tmp_path / "e.npy", model.encode

    def kill_after(n):
        calls = []

        def encode(sentences, **kwargs):
            calls.append(1)
            if len(calls) > n:
                raise KeyboardInterrupt
            return original(sentences, **kwargs)

        return encode

    monkeypatch.setattr(model, "encode", kill_after(2))
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=64)
    monkeypatch.setattr(model, "encode", kill_after(0))
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=64, normalize=True)
    monkeypatch.setattr(model, "encode", original)
    record = encode_file(model, texts, out, chunk_rows=64)
    assert record["resumed_chunks"] == 0
    assert np.all(np.linalg.norm(np.load(out), axis=1) > 0)  # no row of zeros


def test_a_finished_record_never_vouches_for_another_matrix(tiny_backbone_no_dropout, texts, tmp_path, monkeypatch):
    """A finished P, then a run of P' killed between its rename and its record: asking for P again
    encodes it (the old record was removed before the rename), it does not return P''s rows."""
    from pathlib import Path

    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    out = tmp_path / "e.npy"
    encode_file(model, texts, out, chunk_rows=64)
    plain = np.load(out)
    real_replace = Path.replace

    def killed_after_rename(self, target):
        real_replace(self, target)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", killed_after_rename)
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=64, normalize=True)
    monkeypatch.setattr(Path, "replace", real_replace)
    record = encode_file(model, texts, out, chunk_rows=64)
    assert record["encoded_now"] == 250
    np.testing.assert_allclose(np.load(out), plain, atol=1e-6)


def test_several_processes_are_refused_for_an_exported_backend(tiny_backbone_no_dropout, texts, tmp_path, capsys):
    argv = [
        "encode",
        "--model",
        str(tiny_backbone_no_dropout),
        "--input",
        str(texts),
        "--output",
        str(tmp_path / "e.npy"),
    ]
    assert main([*argv, "--backend", "onnx", "--devices", "cpu,cpu"]) != 0
    assert "--devices runs torch" in the_error(capsys.readouterr().err)


def test_a_disk_without_room_is_one_line_before_anything_is_encoded(
    tiny_backbone_no_dropout, texts, tmp_path, monkeypatch, capsys
):
    """The matrix is allocated before the first chunk: a disk without room for it is refused in one
    line that says what it needs and what is free (it died of SIGBUS after the first chunk before)."""
    import errno
    import os
    import shutil
    from collections import namedtuple

    from sentence_transformers import SentenceTransformer

    def encode(*args, **kwargs):
        raise AssertionError("a chunk was encoded")

    real = {
        "encode": SentenceTransformer.encode,
        "posix_fallocate": os.posix_fallocate,
        "disk_usage": shutil.disk_usage,
    }
    monkeypatch.setattr(SentenceTransformer, "encode", encode)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
    argv = ["encode", "--model", str(tiny_backbone_no_dropout), "--input", str(texts), "--output"]
    assert main([*argv, str(tmp_path / "full.npy")]) != 0
    error = the_error(capsys.readouterr().err)
    assert re.search(rf"full.npy.partial: needs 0.03 MB at {re.escape(str(tmp_path))}, 0.00 MB free$", error), error
    assert not list(tmp_path.glob("full.npy*"))  # no half-made matrix left behind

    def no_room(fd, offset, length):  # the free-space figure was stale: the allocation itself fails
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 10**12))
    monkeypatch.setattr(os, "posix_fallocate", no_room)
    assert main([*argv, str(tmp_path / "full.npy")]) != 0
    assert "needs" in the_error(capsys.readouterr().err)
    for module, name in ((SentenceTransformer, "encode"), (os, "posix_fallocate"), (shutil, "disk_usage")):
        monkeypatch.setattr(module, name, real[name])
    assert main([*argv, str(tmp_path / "full.npy")]) == 0  # with room, it runs
    assert np.load(tmp_path / "full.npy").shape[0] == 250


def test_dims_keep_the_first_dimensions_renormalised(tiny_backbone_no_dropout, texts, tmp_path):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    full = encode_file(model, texts, tmp_path / "full.npy", chunk_rows=100)
    record = encode_file(model, texts, tmp_path / "short.npy", chunk_rows=100, dims=8)
    whole, short = np.load(tmp_path / "full.npy"), np.load(tmp_path / "short.npy")
    expected = whole[:, :8] / np.linalg.norm(whole[:, :8], axis=1, keepdims=True)
    np.testing.assert_allclose(short, expected, rtol=1e-6, atol=1e-7)  # the same float32 rows, scaled
    assert record["plan"]["dim"] == 8 and record["plan"]["normalize"] and record["bytes_a_sentence"] == 32
    assert full["bytes_a_sentence"] == 4 * whole.shape[1]


@pytest.mark.parametrize("precision", ["float16", "int8", "uint8", "binary", "ubinary"])
def test_each_precision_stores_what_a_hand_computed_quantization_gives(
    precision, tiny_backbone_no_dropout, texts, tmp_path
):
    """Against the float32 output quantized by hand: int8 / uint8 take each dimension's [min, max]
    over the calibration sample (here every row: there are fewer than 10,000) onto 256 steps; binary
    keeps each dimension's sign, eight to a byte."""
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    encode_file(model, texts, tmp_path / "f.npy", chunk_rows=100, dims=12)
    floats = np.load(tmp_path / "f.npy")
    record = encode_file(model, texts, tmp_path / "q.npy", chunk_rows=100, dims=12, precision=precision)
    stored = np.load(tmp_path / "q.npy")
    if precision == "float16":
        np.testing.assert_array_equal(stored, floats.astype(np.float16))
    elif precision.endswith("int8"):
        low, high = floats.min(0), floats.max(0)
        steps = np.floor((floats - low) / ((high - low) / 255))
        expected = np.clip(steps, 0, 255) - (128 if precision == "int8" else 0)
        # a value on a step's edge may floor either way between the two float32 paths: at most one step
        assert stored.dtype == (np.int8 if precision == "int8" else np.uint8)
        assert (
            np.abs(stored.astype(np.int32) - expected).max() <= 1
            and (stored.astype(np.int32) == expected).mean() > 0.99
        )
        ranges = np.load(tmp_path / "q.ranges.npy")
        np.testing.assert_allclose(ranges, np.vstack([low, high]), rtol=1e-6)
        assert record["ranges"] == "q.ranges.npy" and record["plan"]["calibration"] == {"rows": 250, "seed": 0}
    else:
        bits = [[int(v > 0) for v in row] + [0] * 4 for row in floats]  # 12 dimensions padded to 16 bits
        packed = np.array([[int("".join(map(str, r[i : i + 8])), 2) for i in (0, 8)] for r in bits])
        assert stored.shape == (250, 2) and record["bytes_a_sentence"] == 2
        np.testing.assert_array_equal(stored.astype(np.int32), packed - (128 if precision == "binary" else 0))


def test_int8_resumes_with_the_ranges_it_started_with(tiny_backbone_no_dropout, texts, tmp_path, monkeypatch):
    """Killed after chunk 0 is written: the rerun calibrates nothing and quantizes the chunks left with
    the ranges the run started with (here replaced by sentinel ranges before the rerun, so a rerun
    that calibrated again would show it); the finished ranges lie beside the output."""
    from sentlab import encoding
    from sentlab.quantize import calibration_rows

    # a sample of 50 of the 250 rows (of every row, the calibration's embeddings would be the matrix's)
    monkeypatch.setattr(encoding, "calibration_rows", lambda rows: calibration_rows(rows, size=50))
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    out, kept = tmp_path / "q.npy", tmp_path / "q.ranges.npy.partial"
    original, calls = model.encode, []

    def killed_after_chunk_0(sentences, **kwargs):
        calls.append(len(sentences))
        if len(calls) > 1 and sum(calls[:-1]) >= 50 + 100:  # calibration (50 rows) and chunk 0 done
            raise KeyboardInterrupt("killed")
        return original(sentences, **kwargs)

    monkeypatch.setattr(model, "encode", killed_after_chunk_0)
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=100, batch_size=128, precision="int8")
    assert json.loads((tmp_path / "q.npy.progress.json").read_text())["done"] == [0]
    assert kept.is_file() and not (tmp_path / "q.ranges.npy").exists()  # the finished name only at the end
    sentinel = np.vstack([np.full(32, -0.5), np.full(32, 0.5)]).astype(np.float32)
    with open(kept, "wb") as f:
        np.save(f, sentinel)
    calls.clear()
    monkeypatch.setattr(model, "encode", lambda s, **kw: calls.append(len(s)) or original(s, **kw))
    record = encode_file(model, texts, out, chunk_rows=100, batch_size=128, precision="int8")
    assert sum(calls) == 150 and record["resumed_chunks"] == 1  # chunks 1 and 2 only: no calibration
    np.testing.assert_array_equal(np.load(tmp_path / "q.ranges.npy"), sentinel)
    floats = encode_file(model, texts, tmp_path / "f.npy", chunk_rows=100, normalize=True)  # int8 codes unit vectors
    assert floats["plan"]["precision"] == "float32"
    expected = np.clip(np.floor((np.load(tmp_path / "f.npy")[100:] + 0.5) / (1 / 255)), 0, 255) - 128
    got = np.load(out)[100:].astype(np.int32)
    assert np.abs(got - expected).max() <= 1 and (got == expected).mean() > 0.99  # a step's edge may floor either way
    (tmp_path / "q.ranges.npy").unlink()  # a finished matrix without its ranges: the run is redone
    assert encode_file(model, texts, out, chunk_rows=100, precision="int8")["encoded_now"] == 250


def test_dims_larger_than_the_models_are_one_line(tiny_backbone_no_dropout, texts, tmp_path, capsys):
    code = main(
        [
            "encode",
            "--model",
            str(tiny_backbone_no_dropout),
            "--input",
            str(texts),
            "--output",
            str(tmp_path / "o.npy"),
            "--dims",
            "999",
        ]
    )
    assert code != 0
    assert the_error(capsys.readouterr().err).endswith("error: --dims 999: the model's embeddings have 32 dimensions")


def test_one_sentence_cannot_calibrate_int8(tiny_backbone_no_dropout, tmp_path, capsys):
    """One row gives every dimension an empty range: refused in one line, not a matrix of one code."""
    one = tmp_path / "one.txt"
    one.write_text("a single sentence\n")
    argv = [
        "encode",
        "--model",
        str(tiny_backbone_no_dropout),
        "--input",
        str(one),
        "--output",
        str(tmp_path / "o.npy"),
    ]
    assert main([*argv, "--embedding-precision", "int8"]) != 0
    assert "need at least 2 sentences to calibrate" in the_error(capsys.readouterr().err)
    assert not list(tmp_path.glob("o.npy*")) and not list(tmp_path.glob("o.ranges*"))  # no matrix, .partial, ranges


def test_a_calibration_that_fails_under_several_processes_stops_the_pool_and_leaves_nothing(
    tiny_backbone_no_dropout, tmp_path, monkeypatch
):
    """Five copies of one sentence: every dimension takes one value, no range to spread over 256 codes.
    Refused in one line; the processes' pool stopped, no .partial left (a stand-in pool: the real one
    spawns processes, tests/test_encoding.py's slow test runs it)."""
    from sentlab.errors import DataError

    same = tmp_path / "same.txt"
    same.write_text("the very same sentence\n" * 5)
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    pool, original = {"started": 0, "stopped": 0}, model.encode
    monkeypatch.setattr(model, "start_multi_process_pool", lambda devices: pool.update(started=1) or pool)
    monkeypatch.setattr(model, "stop_multi_process_pool", lambda p: pool.update(stopped=1))
    monkeypatch.setattr(model, "encode", lambda s, pool=None, **kw: original(s, **kw))
    with pytest.raises(DataError, match="dimensions take one value over the 5 calibration sentences"):
        encode_file(model, same, tmp_path / "o.npy", devices=["cpu", "cpu"], precision="int8")
    assert pool == {"started": 1, "stopped": 1}
    assert not list(tmp_path.glob("o*"))


def test_int8_of_few_lines_encodes_each_line_once_and_times_it_all(
    tiny_backbone_no_dropout, texts, tmp_path, monkeypatch
):
    """At most 10,000 lines: the calibration sample is every line, so its embeddings are the matrix's;
    the record's time covers the calibration's encoding too."""
    import time

    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    original, rows = model.encode, []

    def slow(sentences, **kwargs):
        rows.append(len(sentences))
        time.sleep(0.2)
        return original(sentences, **kwargs)

    monkeypatch.setattr(model, "encode", slow)
    begin = time.perf_counter()
    record = encode_file(model, texts, tmp_path / "q.npy", chunk_rows=100, precision="int8")
    took = time.perf_counter() - begin
    assert sum(rows) == 250 and record["encoded_now"] == 250
    assert record["seconds"] >= 0.2 * len(rows) and record["seconds"] <= took + 0.01


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_a_kill_between_the_final_renames_is_finished_without_encoding_again(
    precision, tiny_backbone_no_dropout, texts, tmp_path, monkeypatch
):
    from pathlib import Path

    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    out = tmp_path / "q.npy"
    real_replace, renames = Path.replace, []

    def killed_after_the_first_rename(self, target):
        real_replace(self, target)
        renames.append(Path(target).name)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", killed_after_the_first_rename)
    with pytest.raises(KeyboardInterrupt):
        encode_file(model, texts, out, chunk_rows=100, precision=precision)
    monkeypatch.setattr(Path, "replace", real_replace)
    assert renames == ["q.npy"]  # the matrix first, the ranges (int8) not yet beside it
    killed = np.load(out)
    record = encode_file(model, texts, out, chunk_rows=100, precision=precision)
    assert record["encoded_now"] == 0 and record["resumed_chunks"] == 3
    np.testing.assert_array_equal(np.load(out), killed)
    assert (tmp_path / "q.ranges.npy").is_file() == (precision == "int8")
    assert not list(tmp_path.glob("*.partial")) and not (tmp_path / "q.npy.progress.json").exists()
    monkeypatch.setattr(model, "encode", lambda *a, **k: pytest.fail("a finished run encoded again"))
    assert encode_file(model, texts, out, chunk_rows=100, precision=precision) == record  # done: nothing encoded


def test_a_folder_encode_cannot_write_is_one_line_before_the_model_loads(texts, tmp_path, monkeypatch, capsys):
    import sentlab.cli.encode as encode_cli

    def no_model(args):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(encode_cli, "load", no_model)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    argv = ["encode", "--model", "m", "--input", str(texts), "--output", str(blocked / "sub" / "o.npy")]
    assert main(argv) != 0
    assert "cannot write the output there" in the_error(capsys.readouterr().err)
