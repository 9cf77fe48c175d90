"""The start model's loading options: the ``lasttoken`` pooler (decoder encoders) and
``model.model_kwargs`` passed to ``from_pretrained``, each checked against what the model then does."""

from __future__ import annotations

import typing

import pytest
import torch

from sentlab.encoders import POOLERS, build_encoder
from sentlab.methods import get_method, validate_config
from sentlab.training import engine
from sentlab.training.config import ModelSection


def test_the_lasttoken_pooler_takes_the_last_token_that_is_not_padding(tiny_backbone):
    model = build_encoder(str(tiny_backbone), "lasttoken").eval()
    texts = ["a cat sat on the mat today", "dogs"]  # different lengths: the short one is padded
    features = model.tokenize(texts)
    with torch.no_grad():
        tokens = model[0](dict(features))["token_embeddings"]
        pooled = model.encode(texts, convert_to_tensor=True)
    last = features["attention_mask"].sum(dim=1) - 1
    expected = tokens[torch.arange(len(texts)), last]
    torch.testing.assert_close(pooled, expected, rtol=0, atol=1e-6)  # one path, the same float32 ops
    assert not torch.allclose(pooled[1], tokens[1, -1])  # not the padding at the end


def test_every_pooler_is_one_the_config_and_the_command_line_take():
    assert set(typing.get_args(typing.get_args(ModelSection.model_fields["pooler"].annotation)[0])) == set(POOLERS)


def test_model_kwargs_reach_from_pretrained_and_an_unknown_one_is_refused(tiny_backbone, corpus_file, tmp_path):
    def cfg(**model):
        return validate_config(
            {
                "method": "simcse-unsup",
                "model": {"name": str(tiny_backbone), "pooler": "mean", **model},
                "data": {"train": str(corpus_file)},
                "train": {"output_dir": str(tmp_path / "run")},
                "eval": {"dev_task": "none", "final_tasks": []},
            }
        )

    for implementation in ("eager", "sdpa"):  # sdpa is transformers' default: eager shows the key is passed
        config = cfg(model_kwargs={"attn_implementation": implementation})
        method = get_method("simcse-unsup")(config, engine.RunPaths(tmp_path / "run"))
        assert method.start_encoder()[0].auto_model.config._attn_implementation == implementation
    # half-precision weights with no float32 copy, recorded as fp32: refused for train.mixed_precision
    with pytest.raises(ValueError, match="dtype: bfloat16 would train bfloat16 weights .*train.mixed_precision: bf16"):
        cfg(model_kwargs={"dtype": "bfloat16"})
    # auto on a checkpoint saved in bfloat16: loaded as saved, then trained in float32 (and said)
    from transformers import AutoModel

    half = tmp_path / "half"
    AutoModel.from_pretrained(str(tiny_backbone)).to(torch.bfloat16).save_pretrained(half)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        if (tiny_backbone / name).is_file():
            (half / name).write_bytes((tiny_backbone / name).read_bytes())
    config = cfg(model_kwargs={"dtype": "auto"})
    config.model.name = str(half)
    method = get_method("simcse-unsup")(config, engine.RunPaths(tmp_path / "run"))
    assert {p.dtype for p in method.start_encoder().parameters()} == {torch.float32}
    with pytest.raises(ValueError, match="model_kwargs: the prompt pooler builds its backbone without them"):
        cfg(model_kwargs={"dtype": "float32"}, pooler="prompt")
    with pytest.raises(ValueError, match="output_attentions: not one of dtype, attn_implementation"):
        cfg(model_kwargs={"output_attentions": "true"})
    with pytest.raises(ValueError, match="dtype: 'fp8' is not one of"):
        cfg(model_kwargs={"dtype": "fp8"})


def test_a_flash_attention_without_its_package_is_one_line(tiny_backbone, corpus_file, tmp_path):
    """The documented attn_implementation: flash_attention_2, where flash-attn is not installed: one line
    before anything is read (the run), and a ModelLoadError where a model is built (not an ImportError)."""
    import transformers.utils

    from sentlab.errors import ConfigError, ModelLoadError

    if transformers.utils.is_flash_attn_2_available():
        pytest.skip("flash-attn is installed here")
    config = validate_config(
        {
            "method": "simcse-unsup",
            "model": {"name": str(tiny_backbone), "model_kwargs": {"attn_implementation": "flash_attention_2"}},
            "data": {"train": str(corpus_file)},
            "train": {"output_dir": str(tmp_path / "run")},
            "eval": {"dev_task": "none", "final_tasks": []},
        }
    )
    with pytest.raises(ConfigError, match="flash_attention_2 needs its flash-attn package"):
        engine.train(config)
    assert not (tmp_path / "run").exists()
    with pytest.raises(ModelLoadError, match="cannot load backbone"):
        build_encoder(str(tiny_backbone), "mean", model_kwargs={"attn_implementation": "flash_attention_2"})


MARKED_CODE = """from transformers import BertConfig, BertModel


class MarkedConfig(BertConfig):
    model_type = "marked-bert"


class MarkedModel(BertModel):
    config_class = MarkedConfig
"""


def remote_code_backbone(tiny_backbone, folder):
    """The tiny BERT whose config names its own modelling code (``auto_map``), as a hub model with
    custom code does: a class that only runs when that code is allowed to."""
    import json
    import shutil

    shutil.copytree(tiny_backbone, folder)
    (folder / "modeling_marked.py").write_text(MARKED_CODE, encoding="utf-8")
    config = json.loads((folder / "config.json").read_text("utf-8"))
    config["model_type"] = "marked-bert"
    config["auto_map"] = {"AutoConfig": "modeling_marked.MarkedConfig", "AutoModel": "modeling_marked.MarkedModel"}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_remote_code_runs_only_when_trusted_and_the_card_says_it_ran(tiny_backbone, corpus_file, tmp_path):
    from sentlab.encoders import load_encoder
    from sentlab.errors import ModelLoadError

    backbone = remote_code_backbone(tiny_backbone, tmp_path / "marked")
    for load in (lambda: build_encoder(str(backbone), "mean"), lambda: load_encoder(backbone)):
        with pytest.raises(ModelLoadError, match="set model.trust_remote_code: true"):
            load()

    def cfg(**model):
        return validate_config(
            {
                "method": "simcse-unsup",
                "model": {"name": str(backbone), "pooler": "mean", "max_seq_length": 16, **model},
                "data": {"train": str(corpus_file)},
                "train": {"output_dir": str(tmp_path / "run"), "batch_size": 4, "max_steps": 2, "progress_bar": False},
                "eval": {"dev_task": "none", "final_tasks": []},
            }
        )

    with pytest.raises(ModelLoadError, match="trust_remote_code"):
        engine.train(cfg(), evaluate=False)
    paths = engine.train(cfg(trust_remote_code=True), evaluate=False)
    assert "**Remote code**" in (paths.model / "README.md").read_text("utf-8")
    with pytest.raises(ModelLoadError, match="--trust-remote-code"):  # the saved model names its code too
        load_encoder(paths.model)
    trained = load_encoder(paths.model, trust_remote_code=True)
    assert type(trained[0].auto_model).__name__ == "MarkedModel"  # the model's own class, not BertModel
    with pytest.raises(ValueError, match="trust_remote_code: the prompt pooler"):
        cfg(trust_remote_code=True, pooler="prompt")
    from sentlab.cli import main

    text = tmp_path / "s.txt"
    text.write_text("a man plays\n", encoding="utf-8")
    argv = ["encode", "--model", str(paths.model), "--input", str(text), "--output", str(tmp_path / "e.npy")]
    assert main(argv) != 0  # the command line refuses it too, and takes the flag
    assert main([*argv, "--trust-remote-code", "--quiet"]) == 0
    from sentlab import api

    with pytest.raises(ModelLoadError, match="trust_remote_code"):  # the Python API too
        api.evaluate(paths.model, tasks="sts")
    loaded = api.load(paths.model, trust_remote_code=True)
    assert type(loaded.encoder[0].auto_model).__name__ == "MarkedModel"
