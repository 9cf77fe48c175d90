"""LoRA adapters (``model.adapter``): training moves the adapter only, the saved folder loads in plain
sentence-transformers with peft, ``sentlab merge-adapter`` folds it into full weights that give the
same embeddings, and bad settings are one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformer

from sentlab.cli import main
from sentlab.errors import ConfigError
from sentlab.methods import load_config
from sentlab.training import engine
from tests.conftest import tiny_config

SENTENCES = ["a man plays the guitar", "the dog runs in the park", "two cats sleep"]


def lora_run(backbone, corpus, out, **adapter):
    cfg = tiny_config(backbone, corpus, out, pooler="mean", max_steps=3, learning_rate=5e-3)
    tree = cfg.to_tree()
    tree["model"]["adapter"] = {"rank": 4, "alpha": 8, "target_modules": ["query", "value"], **adapter}
    return engine.train(type(cfg).model_validate(tree), evaluate=False)


def test_training_moves_the_adapter_only_and_the_folder_loads_in_plain_sentence_transformers(
    tiny_backbone_no_dropout, corpus_file, tmp_path
):
    paths = lora_run(tiny_backbone_no_dropout, corpus_file, tmp_path / "run")
    assert "model.adapter: LoRA rank 4" in paths.log.read_text()
    assert (paths.model / "adapter_config.json").is_file()
    assert json.loads((paths.model / "adapter_config.json").read_text())["r"] == 4
    adapter = load_file(str(paths.model / "adapter_model.safetensors"))
    assert adapter and all("lora_" in name for name in adapter)
    assert any(float(t.abs().max()) > 0 for n, t in adapter.items() if "lora_B" in n)  # B starts at 0: it moved
    assert not (paths.model / "model.safetensors").exists()  # the encoder's own weights: the start's, not saved
    loaded = SentenceTransformer(str(paths.model), device="cpu")  # plain sentence-transformers, with peft
    start = SentenceTransformer(str(tiny_backbone_no_dropout), device="cpu")
    assert not np.allclose(loaded.encode(SENTENCES), start.encode(SENTENCES), atol=1e-4)
    config = json.loads((paths.model / "adapter_config.json").read_text())
    assert Path(config["base_model_name_or_path"]).is_absolute()  # loads from any working directory
    card = (paths.model / "README.md").read_text()
    assert "A LoRA adapter, not full weights" in card and "- lora" in card  # the card says what the folder is
    # a later stage that starts from this folder trains the merged weights, not a frozen adapter
    next_stage = engine.train(
        tiny_config(paths.model, corpus_file, tmp_path / "next", pooler="mean", max_steps=1), evaluate=False
    )
    assert "holds a LoRA adapter; training starts from its merged weights" in next_stage.log.read_text()
    assert (next_stage.model / "model.safetensors").is_file()


def test_merge_adapter_gives_full_weights_with_the_same_embeddings(tiny_backbone_no_dropout, corpus_file, tmp_path):
    paths = lora_run(tiny_backbone_no_dropout, corpus_file, tmp_path / "run")
    merged = tmp_path / "merged"
    assert main(["merge-adapter", "--model", str(paths.model), "--output", str(merged)]) == 0
    assert not (merged / "adapter_config.json").exists()
    with_adapter = SentenceTransformer(str(paths.model), device="cpu").encode(SENTENCES)
    full = SentenceTransformer(str(merged), device="cpu").encode(SENTENCES)
    # W x + s B A x against (W + s B A) x: float32 rounding of two summation orders on O(1) values
    np.testing.assert_allclose(full, with_adapter, atol=1e-5)
    assert main(["merge-adapter", "--model", str(merged), "--output", str(tmp_path / "again")]) != 0


def test_a_target_module_the_encoder_lacks_is_one_line(tiny_backbone_no_dropout, corpus_file, tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"^model\.adapter\.target_modules: the encoder has no linear layer named 'q_proj' \(its linear layers: .*query.*\)$",
    ):
        lora_run(tiny_backbone_no_dropout, corpus_file, tmp_path / "run", target_modules=["q_proj"])


def test_without_peft_an_adapter_is_one_line(tiny_backbone_no_dropout, corpus_file, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # import peft raises ImportError
    with pytest.raises(
        ConfigError,
        match=r"^model\.adapter needs peft \(the peft extra: pip install -e '\.\[peft\]' in sentlab's checkout\)$",
    ):
        lora_run(tiny_backbone_no_dropout, corpus_file, tmp_path / "run")


@pytest.mark.parametrize("method", ["bert-flow", "tsdae", "mlm", "ct"])
def test_methods_that_tie_copy_or_freeze_the_encoder_refuse_an_adapter(method, corpus_file, tmp_path):
    config = tmp_path / "c.yaml"
    tree = {"method": method, "model": {"name": "m", "adapter": {"rank": 4}}, "data": {"train": str(corpus_file)}}
    config.write_text(yaml.safe_dump({**tree, "train": {"output_dir": str(tmp_path / "r")}}))
    with pytest.raises(ConfigError, match=f": model.adapter: method {method} does not read it; "):
        load_config(config)


@pytest.mark.parametrize("change", [{"num_layers": 1}, {"dropout": 0.2}, {"pooler": "first_last_avg"}])
def test_an_adapter_with_a_changed_start_model_is_one_line(change, corpus_file, tmp_path):
    config = tmp_path / "c.yaml"
    model = {"name": "m", "adapter": {"rank": 4}, **change}
    tree = {"method": "simcse-unsup", "model": model, "data": {"train": str(corpus_file)}}
    config.write_text(yaml.safe_dump({**tree, "train": {"output_dir": str(tmp_path / "r")}}))
    with pytest.raises(ConfigError, match="model.adapter: not with model."):
        load_config(config)


def test_the_adapter_names_its_base_absolutely_when_the_start_was_given_relatively(
    tiny_backbone_no_dropout, corpus_file, tmp_path, monkeypatch
):
    """peft writes the base from the model's ``name_or_path``: a relative ``model.name`` must not reach it."""
    import os

    monkeypatch.chdir(tmp_path)
    paths = lora_run(Path(os.path.relpath(tiny_backbone_no_dropout)), corpus_file, tmp_path / "run")
    base = json.loads((paths.model / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert Path(base).is_absolute() and Path(base) == Path(tiny_backbone_no_dropout).resolve()
    monkeypatch.chdir("/")
    SentenceTransformer(str(paths.model), device="cpu")  # loads from another working directory


def test_a_new_adapter_over_an_adapter_folder_is_refused_before_training(
    tiny_backbone_no_dropout, corpus_file, tmp_path
):
    """A second LoRA stage would name the first stage's base alone, silently dropping stage 1 on reload."""
    first = lora_run(tiny_backbone_no_dropout, corpus_file, tmp_path / "first")
    # the config refuses it (pydantic's ValidationError, a ValueError; the CLI prints its one line)
    with pytest.raises(ValueError, match="holds a LoRA adapter itself.*merge-adapter"):
        lora_run(first.model, corpus_file, tmp_path / "second")
    assert not (tmp_path / "second").exists()
