"""Inference backends: same vectors as torch in fp32, labelled and fingerprinted apart in int8,
exported once, rebuilt when an export is damaged, and one-line errors for what cannot run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentlab.encoders import build_encoder
from sentlab.encoders.backends import (
    EXPORT_META,
    _complete,
    accelerate,
    check_backend,
    inference_setting,
    require_extra,
)
from sentlab.errors import ModelLoadError
from sentlab.rank.index import encoder_fingerprint

SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "a girl reads a book on the street",
    "children swim",
    "the big red car drives on the road with a small blue car",
]


# What float32 can do here: values up to ~3, two layers whose dot products sum at most 64 terms, then
# layer norm; each sum's rounding error is bounded by n * u * sum|terms| with u = 2**-24 (6e-8), so
# about 64 * 6e-8 * 3 = 1.1e-5 per layer in the worst case, and far less in practice (5e-7 measured on
# AVX2 for onnxruntime and OpenVINO). One bf16 rounding (u = 2**-9) of the same values errs by up to
# ~6e-3, and OpenVINO's bf16 matmuls moved these vectors by 1.2e-4 to 1.9e-4 on an AVX-512 BF16 CPU:
# 1e-5 keeps every fp32 ordering of the sums and refuses any bf16 step.
FP32_ATOL = 1e-5
# onnxruntime and OpenVINO run on the CPU here: the models they are built from and compared with are put there


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def pair(backbone, pooler: str, backend: str, precision: str, root):
    reference = build_encoder(str(backbone), pooler, device="cpu")
    reference.eval()
    model = build_encoder(str(backbone), pooler, device="cpu")
    accelerate(model, backend, precision, root=root)
    return reference, model


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
@pytest.mark.parametrize("pooler", ["mean", "cls", "first_last_avg", "prompt"])
def test_fp32_backends_give_the_torch_vectors(tiny_backbone_no_dropout, tmp_path, backend, pooler):
    pytest.importorskip("onnxruntime" if backend == "onnx" else "openvino")
    reference, model = pair(tiny_backbone_no_dropout, pooler, backend, "fp32", tmp_path)
    expected = reference.encode(SENTENCES, batch_size=2)
    got = model.encode(SENTENCES, batch_size=2)
    np.testing.assert_allclose(got, expected, rtol=0, atol=FP32_ATOL)
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


def test_openvino_int8_static_is_calibrated_close_and_named_by_its_calibration(
    tiny_backbone_no_dropout, tmp_path, monkeypatch
):
    """Weights and activations quantized ahead (NNCF): close to fp32, never passed off as it, and the
    calibration sentences are part of the setting (another calibration: another export, another
    fingerprint); without them and without the data folder's Wikipedia sentences, one line."""
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    calibration = [f"{a} and {b}" for a in SENTENCES for b in SENTENCES]
    reference = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu").eval()
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
    accelerate(model, "openvino", "int8-static", root=tmp_path, calibration=calibration)
    got, expected = model.encode(SENTENCES), reference.encode(SENTENCES)
    assert not np.array_equal(got, expected)  # it did quantise
    assert cosines(got, expected).min() > 0.9  # ... the same model
    assert inference_setting(model) == {"backend": "openvino", "precision": "int8-static"}
    other = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
    accelerate(other, "openvino", "int8-static", root=tmp_path, calibration=calibration[: len(calibration) // 2])
    assert encoder_fingerprint(other) != encoder_fingerprint(model) != encoder_fingerprint(reference)
    exports = sorted(p.name for p in tmp_path.rglob("openvino-int8-static-*") if p.is_dir())
    assert len(exports) == 2
    import json

    for folder in [p for p in tmp_path.rglob("openvino-int8-static-*") if p.is_dir()]:
        meta = json.loads((folder / "export.json").read_text())  # each export named by its own calibration
        assert meta["quantization"].startswith("nncf quantize")
        assert folder.name.endswith(meta["calibration"]["sha256"][:16])
    assert model.sentlab_inference["calibration_sha256"] != other.sentlab_inference["calibration_sha256"]
    again = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
    accelerate(again, "openvino", "int8-static", root=tmp_path, calibration=calibration)  # reused, not rebuilt
    assert len([p for p in tmp_path.rglob("openvino-int8-static-*") if p.is_dir()]) == 2
    np.testing.assert_array_equal(again.encode(SENTENCES), got)
    with pytest.raises(ValueError, match="int8-static only"):
        accelerate(
            build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu"), "onnx", "int8", calibration=calibration
        )
    monkeypatch.setenv("SENTLAB_DATA", str(tmp_path / "no-data"))
    with pytest.raises(ModelLoadError, match="int8-static calibrates on .*wiki_sentences.txt"):
        accelerate(build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu"), "openvino", "int8-static")
    with pytest.raises(ModelLoadError, match="has no precision 'int8-static'"):
        check_backend("onnx", "int8-static")


def test_export_happens_once_and_a_damaged_one_is_rebuilt(tiny_backbone_no_dropout, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    reference, model = pair(tiny_backbone_no_dropout, "mean", "onnx", "fp32", tmp_path)
    expected = model.encode(SENTENCES)
    folder = next(tmp_path.glob("exports/*/onnx-fp32"))
    assert _complete(folder) is not None

    calls = []
    original = torch.onnx.export
    monkeypatch.setattr(torch.onnx, "export", lambda *a, **k: calls.append(1) or original(*a, **k))
    again = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
    accelerate(again, "onnx", "fp32", root=tmp_path)
    assert calls == []  # reused

    graph = folder / "model.onnx"
    graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])  # killed mid-copy / truncated
    assert _complete(folder) is None
    rebuilt = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
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
    with pytest.raises(ModelLoadError, match=r"the onnx extra: pip install -e '\.\[onnx\]'"):
        require_extra("onnx")


@pytest.mark.parametrize(
    "backend, precision, device, message",
    [
        ("onnx", "fp16", None, "backend 'onnx' has no precision 'fp16'"),
        ("tensorrt", "fp32", None, "unknown backend 'tensorrt'"),
        ("openvino", "fp32", "cuda", "runs on the CPU here"),
    ],
)
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


class FakeCompiled:
    """An OpenVINO compiled model that reports a chosen inference precision (a CPU's silent fallback)."""

    outputs: list = []

    def __init__(self, precision: str):
        self.precision = precision

    def create_infer_request(self):
        return None

    def get_property(self, name):
        assert name == "INFERENCE_PRECISION_HINT"
        return self.precision


@pytest.mark.parametrize("precision, hint", [("fp32", "f32"), ("int8", "f32"), ("bf16", "bf16")])
def test_openvino_compiles_with_the_settings_precision(
    tiny_backbone_no_dropout, tmp_path, monkeypatch, precision, hint
):
    """The precision is always passed, never left to the CPU plugin's default (bf16 on BF16 CPUs): this
    fails on an AVX2 machine too if the hint is dropped."""
    ov = pytest.importorskip("openvino")
    from sentlab.encoders import backends

    seen = []
    monkeypatch.setattr(
        ov.Core, "compile_model", lambda self, model, device, config: seen.append(config) or FakeCompiled(hint)
    )
    monkeypatch.setattr(backends, "export", lambda *a, **k: _fake_export(tmp_path))
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
    accelerate(model, "openvino", precision, root=tmp_path)
    assert seen and seen[0]["INFERENCE_PRECISION_HINT"] == hint
    assert inference_setting(model) == {"backend": "openvino", "precision": precision}


def _fake_export(tmp_path):
    folder = tmp_path / "fake-export"
    folder.mkdir(exist_ok=True)
    (folder / EXPORT_META).write_text('{"inputs": ["input_ids", "attention_mask", "token_type_ids"]}')
    return folder


@pytest.mark.parametrize("precision, reported", [("fp32", "bf16"), ("int8", "bf16"), ("bf16", "f32")])
def test_an_openvino_fallback_is_refused_not_relabelled(precision, reported):
    """A model compiled in another precision than the setting's (bf16 where fp32 was asked, as on AMX
    CPUs without the hint; f32 where bf16 was asked, on CPUs without BF16) is an error."""
    pytest.importorskip("openvino")
    from sentlab.encoders.backends import check_openvino_precision

    with pytest.raises(ModelLoadError, match=f"OpenVINO compiled the model in {reported}"):
        check_openvino_precision(FakeCompiled(reported), precision)
    check_openvino_precision(FakeCompiled({"bf16": "bf16"}.get(precision, "f32")), precision)  # the right one passes


def test_openvino_bf16_is_its_own_setting_or_refused(tiny_backbone_no_dropout, tmp_path):
    """Where the CPU has BF16, OpenVINO's bf16 runs, is labelled bf16, and does *not* pass the fp32
    tolerance; where it has none (AVX2), asking for bf16 is a one-line error naming the capabilities."""
    ov = pytest.importorskip("openvino")
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
    if "BF16" not in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        with pytest.raises(ModelLoadError, match="not the bf16 that bf16 needs"):
            accelerate(model, "openvino", "bf16", root=tmp_path)
        return
    reference = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu").eval()
    accelerate(model, "openvino", "bf16", root=tmp_path)
    got, expected = model.encode(SENTENCES), reference.encode(SENTENCES)
    assert np.abs(got - expected).max() > FP32_ATOL  # bf16 can never pass for fp32
    assert cosines(got, expected).min() > 0.99
    assert encoder_fingerprint(model) != encoder_fingerprint(reference)


def test_fp32_pins_torch_to_ieee_float32_whatever_was_set_before(tiny_backbone_no_dropout, tmp_path):
    """torch's process-wide switches forced into their reduced modes (TF32 on CUDA, bf16 in oneDNN on
    CPUs with AMX / AVX-512 BF16) are put back to IEEE fp32 by the fp32 setting."""
    from sentlab.encoders.backends import pin_float32_math

    backends = torch.backends
    saved = (
        backends.cuda.matmul.fp32_precision,
        backends.mkldnn.matmul.fp32_precision,
        backends.cudnn.conv.fp32_precision,
        backends.mkldnn.conv.fp32_precision,
    )
    try:
        backends.cuda.matmul.fp32_precision = "tf32"
        backends.mkldnn.matmul.fp32_precision = "bf16"
        backends.cudnn.conv.fp32_precision = "tf32"
        backends.mkldnn.conv.fp32_precision = "bf16"
        model = build_encoder(str(tiny_backbone_no_dropout), "mean", device="cpu")
        accelerate(model, "torch", "fp32", root=tmp_path)
        assert backends.cuda.matmul.fp32_precision == backends.mkldnn.matmul.fp32_precision == "ieee"
        assert backends.cudnn.conv.fp32_precision == backends.mkldnn.conv.fp32_precision == "ieee"
        pin_float32_math(allow_tf32=True)  # tf32 (GPUs only): CUDA matmuls only, the CPU stays IEEE
        assert backends.cuda.matmul.fp32_precision == "tf32"
        assert backends.mkldnn.matmul.fp32_precision == "ieee"
    finally:
        (
            backends.cuda.matmul.fp32_precision,
            backends.mkldnn.matmul.fp32_precision,
            backends.cudnn.conv.fp32_precision,
            backends.mkldnn.conv.fp32_precision,
        ) = saved


def test_tf32_is_refused_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ModelLoadError, match="tf32 needs an NVIDIA GPU"):
        check_backend("torch", "tf32", None)


def test_an_openvino_int8_static_teacher_calibrates_on_the_runs_data_folder(
    tiny_backbone_no_dropout, tmp_path, monkeypatch
):
    """A training run's ``data.data_dir`` holds the Wikipedia sentences its int8-static teacher calibrates
    on, not ``$SENTLAB_DATA`` (which here has none: reading it would be the one-line error)."""
    pytest.importorskip("openvino")
    from sentlab.encoders import backends
    from sentlab.methods import base

    data = tmp_path / "data"
    (data / "wikipedia").mkdir(parents=True)
    lines = [f"sentence number {i} of the run's own data" for i in range(40)]
    (data / "wikipedia" / "wiki_sentences.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("SENTLAB_DATA", str(tmp_path / "no-data"))
    monkeypatch.setenv("SENTLAB_CACHE", str(tmp_path / "cache"))
    seen = {}

    def recorded(model, backend, precision, calibration=None, **_):
        seen.update(backend=backend, precision=precision, calibration=calibration)
        return model

    monkeypatch.setattr(backends, "accelerate", recorded)  # the export itself is tested above
    base.load_teacher(str(tiny_backbone_no_dropout), "openvino int8-static", False, data)
    assert seen["precision"] == "int8-static"
    assert sorted(seen["calibration"]) == sorted(lines)  # 40 lines: the whole file is the sample
    base.load_teacher(str(tiny_backbone_no_dropout), "openvino int8", False, data)
    assert seen["calibration"] is None  # dynamic int8 reads no calibration
    with pytest.raises(ModelLoadError, match="int8-static calibrates on .*no-data"):
        base.load_teacher(str(tiny_backbone_no_dropout), "openvino int8-static", False)
