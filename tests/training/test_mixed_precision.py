"""``train.mixed_precision``: applied to every network of every method or refused with one line, read
back from the run, and every paper preset trains in its own precision (sentlab.precision)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab import precision as precision_module
from sentlab.cli import main
from sentlab.errors import ConfigError
from sentlab.methods import METHODS, load_config, validate_config
from sentlab.precision import Precision, cpu_supports_bf16, networks_in_half_precision, resolve_precision
from sentlab.training import engine
from tests.conftest import DEVICE, the_error, tiny_config
from tests.tiny_presets import (
    CONFIGS,
    METHOD_PRESETS,
    TOP_LEVEL_PRESETS,
    FakeData,
    TinyModels,
    is_gpu_preset,
    tiny_preset_tree,
)

GPU_PRESETS = [p for p in TOP_LEVEL_PRESETS if is_gpu_preset(p)]


@pytest.fixture
def bf16_cpu(monkeypatch):
    """bf16 allowed where the tests train. On a CPU without AVX-512 BF16 / AMX, sentlab refuses bf16 (it
    would be emulated); these tests then allow it, since emulated bf16 rounds exactly as native bf16 does
    and the point here is that the setting is applied, not how fast it runs. A GPU needs nothing."""
    if DEVICE.type == "cpu" and not cpu_supports_bf16():
        monkeypatch.setattr(precision_module, "cpu_supports_bf16", lambda *a: True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[FakeData, TinyModels]:
    root = tmp_path_factory.mktemp("tiny-presets")
    return FakeData(root / "data"), TinyModels(root / "models")


def run_preset(
    preset: Path, out: Path, tiny, mixed_precision: str | None = None, compile: bool | None = None
) -> engine.RunPaths:
    """The preset on tiny models and data; ``compile`` replaces its train.compile when given (the compiled
    path of a packed raw LM has its own test: tests/losses/test_static_step.py, a cold compile takes ~40 s)."""
    data, models = tiny
    tree = tiny_preset_tree(preset, out, data, models, mixed_precision=mixed_precision)
    if compile is not None:
        tree["train"]["compile"] = compile
    cfg = validate_config(tree)
    return engine.train(cfg, evaluate=False)


def logged_losses(paths: engine.RunPaths) -> list[float]:
    records = [json.loads(line) for line in paths.metrics.read_text("utf-8").splitlines()]
    return [r["loss"] for r in records if "loss" in r]


def test_every_method_has_a_preset_in_the_precision_tests():
    covered = {yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())["method"] for name in METHOD_PRESETS.values()}
    assert covered == set(METHODS)  # a new method fails here until it is added above


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(METHOD_PRESETS))
def test_bf16_changes_every_methods_loss_and_reaches_every_network(variant, tiny, bf16_cpu, tmp_path):
    preset = CONFIGS / f"{METHOD_PRESETS[variant]}.yaml"
    fp32 = run_preset(preset, tmp_path / "fp32", tiny, mixed_precision="no")
    bf16 = run_preset(preset, tmp_path / "bf16", tiny, mixed_precision="bf16")
    a, b = logged_losses(fp32), logged_losses(bf16)
    assert len(a) == len(b) == 3 and np.isfinite(b).all()
    assert a != b, "bf16 gave the fp32 losses: the setting was not applied"
    # the same model and data: three steps apart by rounding, not by a different computation
    np.testing.assert_allclose(b, a, rtol=0.05, atol=0.05)

    record = json.loads(bf16.precision.read_text())
    assert (
        record["requested"] == "bf16"
        and record["ran"] == f"bf16 autocast on {DEVICE.type}"
        and record["loss_dtype"] == "float32"
    )
    assert record["components"] and record["float32_unexpectedly"] == []
    for component, dtypes in record["components"].items():
        expected = ["float32"] if component in record["float32_on_purpose"] else ["bfloat16"]
        assert dtypes == expected, component
    assert f"precision read back at the first step: bf16 autocast on {DEVICE.type}" in bf16.log.read_text()
    plain = json.loads(fp32.precision.read_text())
    assert plain["ran"] == f"fp32 on {DEVICE.type}" and all(d == ["float32"] for d in plain["components"].values())
    if variant in ("tsdae", "mlm", "ct"):  # the networks that live in the loss, outside the trainer's model
        assert {"tsdae": "decoder (BertLMHeadModel)", "mlm": "head (BertForMaskedLM)", "ct": "model1.0 (Transformer)"}[
            variant
        ] in record["components"]


@pytest.mark.slow
@pytest.mark.parametrize("preset", GPU_PRESETS, ids=[p.stem for p in GPU_PRESETS])
def test_every_gpu_preset_trains_in_its_own_precision_and_saves_a_plain_model(preset, tiny, bf16_cpu, tmp_path):
    own = load_config(preset).train.mixed_precision
    # a CPU has no fp16 training path (refused, tested below): there fp16 presets run in bf16
    here = "bf16" if own == "fp16" and DEVICE.type == "cpu" else own
    paths = run_preset(preset, tmp_path / "run", tiny, mixed_precision=here, compile=False)
    losses = logged_losses(paths)
    assert len(losses) == 3 and np.isfinite(losses).all()
    record = json.loads(paths.precision.read_text())
    assert record["requested"] == here and record["float32_unexpectedly"] == []
    modules = [m["type"] for m in json.loads((paths.model / "modules.json").read_text())]
    # sentlab's own modules (BERT-flow's flow, PromptBERT's template) need the flag that lets
    # sentence-transformers import an installed class; nothing is downloaded
    own = any(m.startswith("sentlab.") for m in modules)
    vectors = SentenceTransformer(str(paths.model), trust_remote_code=own).encode(["a man plays the guitar", "a dog"])
    assert vectors.dtype == np.float32 and np.isfinite(vectors).all()


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_a_run_records_its_precision_in_the_results(tiny_backbone, corpus_file, data_dir, bf16_cpu, tmp_path):
    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=2, mixed_precision="bf16")
    paths = engine.train(cfg)
    settings = json.loads(paths.results.read_text())["settings"]
    assert settings["training_precision"]["ran"] == f"bf16 autocast on {DEVICE.type}"
    assert settings["evaluation_precision"] == "fp32"


def test_fp16_on_a_cpu_is_a_one_line_error_naming_the_setting():
    with pytest.raises(ConfigError, match=r"^train.mixed_precision: fp16 needs a GPU") as err:
        resolve_precision("fp16", "cpu")
    assert "\n" not in str(err.value)


def test_bf16_on_a_cpu_without_bf16_instructions_is_refused(monkeypatch, tiny_backbone, corpus_file, tmp_path):
    """A claim about CPUs: the engine is told it trains on one, on any machine (the refusal comes first)."""
    monkeypatch.setattr(engine, "training_device_type", lambda: "cpu")
    monkeypatch.setattr(precision_module, "cpu_supports_bf16", lambda *a: False)
    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=2, mixed_precision="bf16")
    with pytest.raises(ConfigError, match="bf16 needs a CPU with AVX-512 BF16 or AMX"):
        engine.train(cfg, evaluate=False)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_cli_refuses_fp16_on_a_cpu_with_one_line(tiny_backbone, corpus_file, tmp_path, capsys, monkeypatch):
    """A claim about CPUs: the engine is told it trains on one, on any machine (the refusal comes first)."""
    monkeypatch.setattr(engine, "training_device_type", lambda: "cpu")
    path = tmp_path / "c.yaml"
    path.write_text(tiny_config(tiny_backbone, corpus_file, tmp_path / "run").to_yaml(), encoding="utf-8")
    assert main(["train", str(path), "--set", "train.mixed_precision=fp16"]) != 0
    assert "train.mixed_precision: fp16 needs a GPU" in the_error(capsys.readouterr().err)


@pytest.mark.parametrize("value, expected", [("no", "no"), ("'no'", "no"), ("bf16", "bf16"), ("fp16", "fp16")])
def test_every_value_the_error_lists_can_be_set(tiny_backbone, corpus_file, tmp_path, value, expected):
    path = tmp_path / "c.yaml"
    path.write_text(tiny_config(tiny_backbone, corpus_file, tmp_path / "run").to_yaml(), encoding="utf-8")
    assert load_config(path, [f"train.mixed_precision={value}"]).train.mixed_precision == expected
    with pytest.raises(ConfigError, match="train.mixed_precision"):
        load_config(path, ["train.mixed_precision=yes"])  # true is not a precision


@pytest.mark.parametrize(
    "flags, expected",
    [
        ("fpu sse avx2 avx512f avx512_bf16 avx512_fp16", True),
        ("fpu sse avx2 amx_bf16 amx_tile", True),
        ("fpu sse avx2 avx512f avx512bw", False),
        ("fpu sse avx2", False),
    ],
)
def test_cpu_bf16_support_is_read_from_the_feature_flags(tmp_path, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    assert cpu_supports_bf16(cpuinfo) is expected


def test_networks_run_in_half_precision_inside_the_block_and_in_fp32_after():
    from transformers import BertConfig, BertModel

    class TwoNetworks(nn.Module):
        half_precision_modules = ("head",)

        def __init__(self):
            super().__init__()
            self.body = BertModel(
                BertConfig(
                    vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8
                )
            )
            self.head = nn.Sequential(nn.Linear(8, 3), nn.Tanh())

        def forward(self, ids):
            return self.head(self.body(input_ids=ids).last_hidden_state)

    loss, ids = TwoNetworks().to(DEVICE), torch.tensor([[1, 2, 3]], device=DEVICE)
    dtypes = []
    loss.head[0].register_forward_hook(lambda m, i, o: dtypes.append(o.dtype))  # a layer inside the network
    with networks_in_half_precision(loss, Precision("bf16", DEVICE.type)):
        out = loss(ids)
        assert out.dtype == torch.float32  # outputs come back as float32, for the loss's own arithmetic
    assert dtypes == [torch.bfloat16]
    assert "forward" not in loss.body.__dict__ and "forward" not in loss.head.__dict__  # restored
    loss(ids)
    assert dtypes[-1] == torch.float32
