"""Scoring at a dimension and a precision (``sentlab eval --dims --embedding-precision``): the vectors
the scorer compares are those a search over the stored codes compares, checked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentlab.cli import main
from sentlab.encoders import build_encoder
from sentlab.evaluation.quantized import QuantizedEmbeddings
from tests.conftest import the_error


@pytest.fixture
def tiny_st_model(tiny_backbone, tmp_path):
    path = tmp_path / "tiny-st"
    build_encoder(str(tiny_backbone), "mean").save(str(path))
    return path


class Fixed:
    """A stand-in cache: fixed embeddings by sentence."""

    def __init__(self, rows: dict[str, np.ndarray]):
        self.rows = rows

    def encode(self, sentences, **kwargs):
        return np.stack([self.rows[s] for s in sentences]).astype(np.float32)


ROWS = np.random.default_rng(0).normal(size=(40, 12)).astype(np.float32)
CACHE = Fixed({f"s{i}": row for i, row in enumerate(ROWS)})
NAMES = [f"s{i}" for i in range(40)]


def cosine(a, b):
    return (a @ b) / np.linalg.norm(a) / np.linalg.norm(b)


@pytest.mark.parametrize("precision", ["binary", "ubinary"])
def test_binary_scores_are_one_minus_twice_the_hamming_distance(precision):
    view = QuantizedEmbeddings(CACHE, dims=10, precision=precision)
    vectors = view.encode(NAMES)
    signs = ROWS[:, :10] > 0  # the sign survives truncation and re-normalisation
    for i, j in [(0, 1), (2, 7), (5, 5)]:
        hamming = int((signs[i] != signs[j]).sum())
        assert cosine(vectors[i], vectors[j]) == pytest.approx(1 - 2 * hamming / 10, abs=1e-6)


def test_int8_compares_the_codes_of_the_calibrated_ranges():
    view = QuantizedEmbeddings(CACHE, dims=None, precision="int8", calibration=NAMES[:20])
    unit = ROWS / np.linalg.norm(ROWS, axis=1, keepdims=True)  # unit length first, as encode stores them
    low, high = unit[:20].min(0), unit[:20].max(0)
    codes = np.clip(np.floor((unit - low) / ((high - low) / 255)), 0, 255) - 128
    got = view.encode(NAMES)
    # a value on a step's edge may floor either way between two float32 paths: at most one step
    assert np.abs(got - codes).max() <= 1 and (got == codes).mean() > 0.99
    assert view.stored_form()["calibration"]["sentences"] == 20
    np.testing.assert_array_equal(QuantizedEmbeddings(CACHE, None, "uint8", NAMES[:20]).encode(NAMES), got)


@pytest.mark.parametrize("normalize", [True, False])
def test_eval_scores_the_codes_encode_writes(normalize, tiny_backbone_no_dropout, tmp_path):
    """`sentlab eval --embedding-precision int8 --calibration F` and `sentlab encode` of F store the
    same codes (both quantize unit-length vectors, with or without encode's --normalize)."""
    from sentlab.encoders.prompts import prompted
    from sentlab.encoding import encode_file
    from sentlab.evaluation.quantized import calibration_sample
    from sentlab.evaluation.scoring import EmbeddingCache

    lines = [f"the dog {' '.join(['runs'] * (i % 7))} in park {i}" for i in range(120)]
    text = tmp_path / "t.txt"
    text.write_text("\n".join(lines) + "\n")
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    encode_file(model, text, tmp_path / "q.npy", normalize=normalize, precision="int8")
    written = np.load(tmp_path / "q.npy").astype(np.float32)
    scored = QuantizedEmbeddings(EmbeddingCache(model), None, "int8", calibration_sample(text)).encode(lines)
    # the same float32 vectors from batches of other sizes: a value on a step's edge may floor either way
    assert np.abs(scored - written).max() <= 1 and (scored == written).mean() > 0.99
    # encode --prompt calibrates on the prompted sample: eval, told the card's prompt, scores those codes
    encode_file(model, text, tmp_path / "p.npy", normalize=normalize, precision="int8", prompt="passage: ")
    written = np.load(tmp_path / "p.npy").astype(np.float32)
    view = QuantizedEmbeddings(EmbeddingCache(model), None, "int8", calibration_sample(text))
    view.use_prompts(["passage: "])
    scored = view.encode(prompted(lines, "passage: "))
    assert np.abs(scored - written).max() <= 1 and (scored == written).mean() > 0.99
    assert view.stored_form()["calibration"]["prompts"] == ["passage: "]


def test_dims_alone_keep_the_first_dimensions_renormalised():
    got = QuantizedEmbeddings(CACHE, dims=4, precision="float32").encode(NAMES[:3])
    np.testing.assert_allclose(got, ROWS[:3, :4] / np.linalg.norm(ROWS[:3, :4], axis=1, keepdims=True), rtol=1e-6)


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_eval_scores_the_stored_form_and_records_it(tiny_st_model, data_dir, tmp_path):
    base = ["eval", "--model", str(tiny_st_model), "--tasks", "sts", "--data-dir", str(data_dir)]
    outputs = {}
    for name, extra in {"full": [], "binary": ["--dims", "16", "--embedding-precision", "binary"]}.items():
        outputs[name] = tmp_path / f"{name}.json"
        assert main([*base, *extra, "--output", str(outputs[name])]) == 0
    full, binary = (json.loads(outputs[n].read_text()) for n in ("full", "binary"))
    assert binary["settings"]["dims"] == 16 and binary["settings"]["embedding_precision"] == "binary"
    assert binary["summary"]["sts_avg"] != full["summary"]["sts_avg"]


def test_int8_without_calibration_text_is_one_line(tiny_st_model, tmp_path, capsys):
    argv = ["eval", "--model", str(tiny_st_model), "--tasks", "sts", "--data-dir", str(tmp_path)]
    assert main([*argv, "--embedding-precision", "int8"]) != 0
    assert "no calibration text at" in the_error(capsys.readouterr().err)
