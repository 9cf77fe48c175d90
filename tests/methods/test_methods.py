"""The method registry, the config union it selects from, extra parameter groups, SimCSE's MLP option."""

from __future__ import annotations

import json
from typing import Literal

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.errors import ConfigError
from sentlab.methods import METHODS, Method, get_method, load_config, register, validate_config
from sentlab.presets import PRESETS_DIR
from sentlab.training import engine
from sentlab.training.config import _ADAPTER, CONFIG_CLASSES, TrainConfig
from tests.conftest import tiny_config

PROBE = ["a man plays the guitar", "a dog runs in the park"]
PRESETS = sorted(PRESETS_DIR.glob("*.yaml"))


def test_registry_names_every_method_and_every_preset_loads():
    assert {"simcse-unsup", "simcse-sup", "rankencoder", "rankcse"} <= set(METHODS)
    for preset in PRESETS:
        cfg = load_config(preset)
        assert isinstance(cfg, get_method(cfg.method).config_class), preset
    with pytest.raises(ConfigError, match="unknown method 'nope'"):
        get_method("nope")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.update(method="nope"), "unknown method 'nope' \\(choose from .*simcse-unsup"),
        (lambda t: t.pop("method"), "missing required key 'method'"),
        (
            lambda t: t.update(rank={"base_encoder": "minilm", "corpus": "c.txt"}),
            "the 'rank' section is only for method rankencoder, not simcse-unsup",
        ),
        (lambda t: t.update(method="rankcse"), "method rankcse needs a 'rankcse' section \\(rankcse.teachers\\)"),
        (lambda t: t["model"].update(pooler="maxx"), "model.pooler"),
    ],
)
def test_config_union_errors_are_one_line(tmp_path, edit, message):
    import yaml

    tree = {
        "method": "simcse-unsup",
        "model": {"name": "minilm"},
        "data": {"train": "c.txt"},
        "train": {"output_dir": "runs/x"},
    }
    edit(tree)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as err:
        load_config(path)
    assert "\n" not in str(err.value)


class RelationLoss(nn.Module):
    """SimCSE's loss plus a learnable vector, as RSE's relation vectors will be."""

    def __init__(self, base: nn.Module, dim: int):
        super().__init__()
        self.base = base
        self.model = base.model
        self.relation_vectors = nn.Parameter(torch.zeros(2, dim))

    def forward(self, features, labels):
        return self.base(features, labels) + (self.relation_vectors - 1).pow(2).sum()


class TwoGroupsConfig(TrainConfig):
    method: Literal["two-groups"]


class TwoGroups(Method):
    name = "two-groups"
    config_class = TwoGroupsConfig

    def loss(self, model):
        return RelationLoss(self.simcse_loss(model), model.get_embedding_dimension())

    def learning_rate_mapping(self):
        return {r"relation_vectors": 1e-2}


@pytest.fixture
def two_groups_method():
    register(TwoGroups)
    yield TwoGroups
    METHODS.pop(TwoGroups.name)
    CONFIG_CLASSES.pop(TwoGroups.name)
    _ADAPTER.clear()


def test_extra_parameter_group_has_its_own_learning_rate(two_groups_method, tiny_backbone, corpus_file, tmp_path):
    tree = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=2, learning_rate=1e-4).to_tree()
    tree["method"] = "two-groups"
    cfg = validate_config(tree)
    assert isinstance(cfg, TwoGroupsConfig)
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))
    optimizer = trainer.create_optimizer()
    relation = trainer.loss.relation_vectors
    groups = [g for g in optimizer.param_groups if any(p is relation for p in g["params"])]
    assert len(groups) == 1 and groups[0]["lr"] == 1e-2 and len(groups[0]["params"]) == 1
    others = [g for g in optimizer.param_groups if g is not groups[0] and g["params"]]
    assert others and all(g["lr"] == 1e-4 for g in others)
    assert sum(len(g["params"]) for g in others) == len([p for p in trainer.model.parameters() if p.requires_grad])
    trainer.train()
    # Adam moves each element by about lr per step: two steps at 1e-2, not at 1e-4
    assert relation.detach().abs().min().item() > 1e-2


def sup_config(backbone, table, out, **model):
    tree = tiny_config(backbone, table, out, max_steps=3).to_tree()
    tree["method"] = "simcse-sup"
    tree["model"].update(model)
    tree["data"]["columns"] = ["sent0", "sent1", "hard_neg"]
    return validate_config(tree)


@pytest.fixture
def nli_table(tmp_path):
    path = tmp_path / "nli.csv"
    rows = ["sent0,sent1,hard_neg"] + [
        f"{a},{b},{c}"
        for a, b, c in [
            ("a man plays the guitar", "a man plays music", "a woman eats food"),
            ("the dog runs in the park", "a dog is running", "the cat sits"),
            ("the girl reads a book", "a child reads", "the boy drives a car"),
            ("a bird flies in the sky", "a bird is flying", "a fish swims"),
        ]
        * 4
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "mlp_only_train, modules", [(None, ["Transformer", "Pooling", "Dense"]), (True, ["Transformer", "Pooling"])]
)
def test_supervised_simcse_keeps_its_mlp_as_a_dense_module(tiny_backbone, nli_table, tmp_path, mlp_only_train, modules):
    cfg = sup_config(tiny_backbone, nli_table, tmp_path / "run", pooler="cls", mlp_only_train=mlp_only_train)
    paths = engine.train(cfg, evaluate=False)
    saved = [m["type"].rsplit(".", 1)[-1] for m in json.loads((paths.model / "modules.json").read_text())]
    assert saved == modules
    plain = SentenceTransformer(str(paths.model))
    embeddings = plain.encode(PROBE)
    if mlp_only_train is None:  # the official supervised recipe: tanh(W [CLS] + b) at inference
        dense = plain[2]
        cls = SentenceTransformer(modules=[plain[0], plain[1]]).encode(PROBE, convert_to_tensor=True)
        with torch.no_grad():
            expected = torch.tanh(dense.linear(cls)).cpu().numpy()
        # the same two float32 operations on the same [CLS] vectors; only the order of the bias
        # addition inside nn.Linear can differ, a few ulps at values below 1
        np.testing.assert_allclose(embeddings, expected, atol=1e-6)
        assert np.abs(embeddings).max() < 1  # tanh's range


def test_model_dropout_sets_the_backbone_dropout_of_the_trained_model(tiny_backbone_no_dropout, corpus_file, tmp_path):
    """``model.dropout`` gives a start saved without dropout (a raw LM so pre-trained) SimCSE's views back."""
    tree = tiny_config(tiny_backbone_no_dropout, corpus_file, tmp_path / "run").to_tree()
    default = get_method("simcse-unsup")(validate_config(tree), engine.RunPaths(tmp_path / "run"))
    assert default.build_model()[0].auto_model.config.hidden_dropout_prob == 0.0  # the start's own
    tree["model"]["dropout"] = 0.1
    method = get_method("simcse-unsup")(validate_config(tree), engine.RunPaths(tmp_path / "run"))
    config = method.build_model()[0].auto_model.config
    assert (config.hidden_dropout_prob, config.attention_probs_dropout_prob) == (0.1, 0.1)


def test_start_encoder_is_the_model_training_starts_from_without_its_head(tiny_backbone, corpus_file, tmp_path):
    """build_model = start_encoder + SimCSE's training-only MLP; model.num_layers cuts both, so the
    start model a run is compared with is the one it trained from (a 1-layer student, not its
    2-layer source)."""
    from sentlab.encoders.heads import SimCSEMLPHead
    from sentlab.training.engine import RunPaths
    from tests.conftest import tiny_config

    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", pooler="cls")
    cfg.model.num_layers = 1
    method = get_method(cfg.method)(cfg, RunPaths(tmp_path / "run"))
    start, built = method.start_encoder(), method.build_model()
    assert len(start[0].auto_model.encoder.layer) == len(built[0].auto_model.encoder.layer) == 1
    assert not any(isinstance(m, SimCSEMLPHead) for m in start) and isinstance(built[-1], SimCSEMLPHead)
    assert len(built) == len(start) + 1
