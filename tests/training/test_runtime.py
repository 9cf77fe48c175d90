"""How a step runs (sentlab.training.runtime): torch.compile of the networks, the fused optimizer, the
data loader, the batch chunking of RSE's Gradient Cache (``auto`` from the device's memory); each
applied or refused in one line, and read back into RUN/runtime.json."""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers import SentenceTransformer

from sentlab import devices
from sentlab.errors import ConfigError
from sentlab.training import engine, runtime
from tests.conftest import DEVICE, features_of, tiny_config
from tests.methods.test_baselines import method_config
from tests.methods.test_rse_method import rse_config


def losses(paths: engine.RunPaths) -> list[dict]:
    return [json.loads(line) for line in paths.metrics.read_text("utf-8").splitlines() if '"loss"' in line]


def test_a_plain_run_records_what_ran(tiny_backbone, corpus_file, tmp_path):
    paths = engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=1), evaluate=False)
    record = json.loads(paths.runtime.read_text())
    assert record["device"].split(":")[0] == DEVICE.type
    assert record["compile"] == {"requested": False, "networks": [], "graphs": 0}
    # train.fused_optimizer: auto is fused AdamW on CUDA and on a CPU (the optimizer itself says so)
    assert record["optimizer"] == {"class": "AdamW", "fused": True, "foreach": None}
    assert record["dataloader"] == {
        "workers": 0,
        "pin_memory": DEVICE.type == "cuda",
        "batch_sampler": "ShuffledBatchSampler",
    }
    assert record["chunking"] is None
    assert "runtime read back: " in paths.log.read_text()


def test_fused_optimizer_false_runs_the_loop_and_true_is_refused_for_rmsprop(tiny_backbone, corpus_file, tmp_path):
    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=1, fused_optimizer=False)
    record = json.loads(engine.train(cfg, evaluate=False).runtime.read_text())
    assert record["optimizer"]["class"] == "AdamW" and record["optimizer"]["fused"] is False
    ct = method_config("ct", tiny_backbone, corpus_file, tmp_path / "ct", max_steps=1, fused_optimizer=True)
    with pytest.raises(ConfigError, match=r"^train.fused_optimizer: the method trains with rmsprop") as err:
        engine.train(ct, evaluate=False)
    assert "\n" not in str(err.value) and not (tmp_path / "ct" / "checkpoints").exists()


def test_compile_is_refused_in_one_line_where_it_cannot_run(monkeypatch, tiny_backbone, corpus_file, tmp_path):
    """A claim about CPUs without a C++ compiler: the engine is told it trains on a CPU, on any machine."""
    monkeypatch.setattr(engine, "training_device_type", lambda: "cpu")
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=1, compile=True)
    with pytest.raises(ConfigError, match=r"^train.compile: torch.compile on a CPU needs a C\+\+ compiler"):
        engine.train(cfg, evaluate=False)
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.slow
def test_compile_runs_the_compiled_networks_with_the_plain_result(tiny_backbone_no_dropout, corpus_file, tmp_path):
    """No dropout: a compiled network draws its dropout masks from another random stream, so with
    dropout the two runs would differ by design, not by a fault."""
    plain = engine.train(
        tiny_config(tiny_backbone_no_dropout, corpus_file, tmp_path / "plain", max_steps=2), evaluate=False
    )
    compiled = engine.train(
        tiny_config(tiny_backbone_no_dropout, corpus_file, tmp_path / "compiled", max_steps=2, compile=True),
        evaluate=False,
    )
    record = json.loads(compiled.runtime.read_text())
    assert record["compile"]["requested"] and record["compile"]["networks"] == ["model.0.model"]
    assert record["compile"]["graphs"] >= 1  # read back: the step ran a compiled graph
    # step 1 runs eagerly in both (the compiled run's precision is read back then); step 2 is the first
    # compiled one: the same float32 arithmetic from the same weights, with fused kernels that sum in
    # another order: ~1e-7 relative per operation. The loss is small without dropout (the two views are
    # one: about 6.5e-3 here) and is a log-sum-exp over logits up to 1/tau = 20, each rounded by
    # ~20 x 1e-7, so its relative error reaches ~1e-4 (1.0e-4 measured); a wrong compiled step (other
    # weights, another batch) moves it by far more than 1e-3
    second_plain, second_compiled = losses(plain)[1], losses(compiled)[1]
    assert second_plain["loss"] > 1e-3 and second_plain["grad_norm"] > 1e-3
    assert second_compiled["loss"] == pytest.approx(second_plain["loss"], rel=1e-3)
    assert second_compiled["grad_norm"] == pytest.approx(second_plain["grad_norm"], rel=1e-3)  # as rounded
    # the saved model is a plain one, and the forwards are restored after training
    model = SentenceTransformer(str(compiled.model), device=str(DEVICE))
    assert "forward" not in model[0].auto_model.__dict__
    with torch.no_grad():
        vectors = model(features_of(model, ["a man plays the guitar"]))["sentence_embedding"]
    assert torch.isfinite(vectors).all()


def test_compiled_networks_are_the_bodies_a_loss_runs(tiny_backbone):
    from sentlab.encoders import build_encoder
    from sentlab.losses import MLMLoss, TSDAELoss

    model = build_encoder(str(tiny_backbone), "mean", device=str(DEVICE))
    assert list(runtime.compiled_networks(TSDAELoss(model))) == ["encoder.0.model", "decoder.bert"]
    assert list(runtime.compiled_networks(MLMLoss(model))) == ["encoder.0.model", "head.bert", "head.cls"]
    with runtime.networks_compiled(MLMLoss(model)) as names:
        assert "forward" in model[0].auto_model.__dict__ and names[0] == "encoder.0.model"
    assert "forward" not in model[0].auto_model.__dict__


def test_activation_estimate_is_the_published_formula_by_hand():
    from transformers import BertConfig

    base = BertConfig()  # BERT-base: 12 layers, hidden 768, 12 heads
    # Korthikanti et al. 2022: s b h (34 + 5 a s / h) bytes a layer in 16 bits; s = 32, b = 512 x 3 sequences
    by_hand = 32 * 1536 * 768 * (34 + 5 * 12 * 32 / 768) * 12
    assert devices.activation_bytes(base, 1536, 32, half=True) == int(by_hand)
    assert devices.activation_bytes(base, 1536, 32, half=False) == int(2 * by_hand)
    gib = 2**30
    whole, why = devices.chunk_that_fits(base, 512, 3, 32, True, free_bytes=78 * gib, parameters=110_000_000)
    assert whole is None and why.startswith("the whole batch (15.4 GiB")
    # 16 GiB free: 0.8 x 16 - 12 x 110M bytes = 11.57 GiB; the whole batch (1536 sequences) needs 15.4 GiB,
    # but a chunk of all 512 rows embeds one column at a time: 512 sequences, 5.13 GiB, which fits
    chunk, why = devices.chunk_that_fits(base, 512, 3, 32, True, free_bytes=16 * gib, parameters=110_000_000)
    assert chunk == 512 and why.startswith("chunks of 512 rows")
    # whatever the memory, the chunk fits, and it is every row or twice it would not fit
    for free in (2, 3, 4, 6, 8, 12):
        for rows in (48, 100, 512):
            chunk, _ = devices.chunk_that_fits(base, rows, 3, 32, True, free * gib, parameters=110_000_000)
            budget = 0.8 * free * gib - 12 * 110_000_000
            fits = lambda n: devices.activation_bytes(base, n, 32, True) <= budget  # noqa: E731
            if chunk is None:  # the whole batch, every column at once
                assert fits(rows * 3)
                continue
            assert 1 <= chunk <= rows
            assert chunk == 1 or fits(chunk)
            assert chunk == rows or not fits(min(2 * chunk, rows))
    tiny, _ = devices.chunk_that_fits(base, 512, 3, 32, True, free_bytes=1 * gib, parameters=110_000_000)
    assert tiny == 1  # nothing fits: one row at a time, never zero


@pytest.mark.parametrize("free_gib, expected", [(1000.0, None), (0.0, 1)])
def test_rse_mini_batch_auto_chooses_from_the_devices_memory(
    monkeypatch,
    tiny_backbone,
    corpus_file,
    qqp_file,
    tmp_path,
    free_gib,
    expected,
):
    monkeypatch.setattr(devices, "device_memory_bytes", lambda device: (int(free_gib * 2**30), 2**40))
    tree = rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path / "run", max_steps=1).to_tree()
    tree["train"]["mini_batch_size"] = "auto"
    paths = engine.train(type(rse_config(tiny_backbone, qqp_file, corpus_file, tmp_path)).model_validate(tree))
    chunking = json.loads(paths.runtime.read_text())["chunking"]
    assert chunking["mini_batch_size"] == expected and chunking["source"] == "auto"
    log = paths.log.read_text()
    assert "train.mini_batch_size: auto -> " + ("the whole batch" if expected is None else "chunks of 1 rows") in log


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_a_compiled_run_of_one_step_says_no_compiled_step_ran(tiny_backbone, corpus_file, tmp_path):
    """Its one step ran eagerly (its precision read back), so no graph is expected: no warning."""
    paths = engine.train(
        tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=1, compile=True), evaluate=False
    )
    record = json.loads(paths.runtime.read_text())
    assert record["compile"] == {"requested": True, "networks": ["model.0.model"], "graphs": None}
    log = paths.log.read_text()
    assert "no compiled step ran: the run ended at its eager first step" in log and "WARNING" not in log
