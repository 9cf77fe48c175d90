"""Inference backends: same vectors as torch in fp32, labelled and fingerprinted apart in int8,
exported once, rebuilt when an export is damaged, and one-line errors for what cannot run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentlab.encoders import build_encoder
from sentlab.encoders.backends import (EXPORT_META, _complete, accelerate, check_backend, inference_setting,
                                       require_extra)
from sentlab.errors import ModelLoadError
from sentlab.rank.index import encoder_fingerprint

SENTENCES = ["a man plays the guitar", "the dog runs in the park", "a girl reads a book on the street",
             "children swim", "the big red car drives on the road with a small blue car"]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def pair(backbone, pooler: str, backend: str, precision: str, root):
    reference = build_encoder(str(backbone), pooler)
    reference.eval()
    model = build_encoder(str(backbone), pooler)
    accelerate(model, backend, precision, root=root)
    return reference, model


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
@pytest.mark.parametrize("pooler", ["mean", "cls", "first_last_avg", "prompt"])
def test_fp32_backends_give_the_torch_vectors(tiny_backbone_no_dropout, tmp_path, backend, pooler):
    pytest.importorskip("onnxruntime" if backend == "onnx" else "openvino")
    reference, model = pair(tiny_backbone_no_dropout, pooler, backend, "fp32", tmp_path)
    expected = reference.encode(SENTENCES, batch_size=2)
    got = model.encode(SENTENCES, batch_size=2)
    # the same fp32 graph run by another runtime: only summation order and fused kernels differ
    # (values O(1), 2 layers of sums over 32-64 terms; float32 differences stay below 1e-5, allow 1e-4)
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert inference_setting(model) == {"backend": backend, "precision": "fp32"}
    assert encoder_fingerprint(model) == encoder_fingerprint(reference)  # an fp32 index stays valid


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_int8_is_close_but_never_passes_for_fp32(tiny_backbone_no_dropout, tmp_path, backend):
    pytest.importorskip("onnxruntime" if backend == "onnx" else "openvino")
    pytest.importorskip("onnx")
    reference, model = pair(tiny_backbone_no_dropout, "mean", backend, "int8", tmp_path)
    got, expected = model.encode(SENTENCES), reference.encode(SENTENCES)
    assert not np.array_equal(got, expected)  # it did quantise
    assert cosines(got, expected).min() > 0.9  # ... and still computes the same model
    assert encoder_fingerprint(model) != encoder_fingerprint(reference)
    assert model.sentlab_inference["fp32_fingerprint"] == encoder_fingerprint(reference)


def test_export_happens_once_and_a_damaged_one_is_rebuilt(tiny_backbone_no_dropout, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    reference, model = pair(tiny_backbone_no_dropout, "mean", "onnx", "fp32", tmp_path)
    expected = model.encode(SENTENCES)
    folder = next(tmp_path.glob("exports/*/onnx-fp32"))
    assert _complete(folder) is not None

    calls = []
    original = torch.onnx.export
    monkeypatch.setattr(torch.onnx, "export", lambda *a, **k: calls.append(1) or original(*a, **k))
    again = build_encoder(str(tiny_backbone_no_dropout), "mean")
    accelerate(again, "onnx", "fp32", root=tmp_path)
    assert calls == []  # reused

    graph = folder / "model.onnx"
    graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])  # killed mid-copy / truncated
    assert _complete(folder) is None
    rebuilt = build_encoder(str(tiny_backbone_no_dropout), "mean")
    accelerate(rebuilt, "onnx", "fp32", root=tmp_path)
    assert calls == [1]
    np.testing.assert_allclose(rebuilt.encode(SENTENCES), expected, atol=1e-6)  # the same graph, same runtime

    (folder / EXPORT_META).unlink()  # a folder without its description is never used
    assert _complete(folder) is None


def test_missing_extra_names_it(monkeypatch):
    import importlib

    real = importlib.import_module

    def fake(name, *args, **kwargs):
        if name == "onnxruntime":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(ModelLoadError, match=r"pip install 'sentlab\[onnx\]'"):
        require_extra("onnx")


@pytest.mark.parametrize("backend, precision, device, message", [
    ("onnx", "fp16", None, "backend 'onnx' has no precision 'fp16'"),
    ("tensorrt", "fp32", None, "unknown backend 'tensorrt'"),
    ("openvino", "fp32", "cuda", "runs on the CPU here"),
])
def test_unsupported_settings_are_refused(backend, precision, device, message):
    with pytest.raises(ModelLoadError, match=message):
        check_backend(backend, precision, device)


def test_fp16_on_a_cpu_only_machine_is_refused():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ModelLoadError, match="fp16 needs a GPU"):
        check_backend("torch", "fp16", "cpu")


def test_torch_bf16_runs_and_is_fingerprinted_apart(tiny_backbone_no_dropout, tmp_path):
    reference, model = pair(tiny_backbone_no_dropout, "mean", "torch", "bf16", tmp_path)
    got = np.asarray(model.encode(SENTENCES), dtype=np.float32)
    assert cosines(got, reference.encode(SENTENCES)).min() > 0.99  # bf16 keeps 8 bits of mantissa
    assert encoder_fingerprint(model) != encoder_fingerprint(reference)
