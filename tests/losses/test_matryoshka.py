"""Matryoshka embeddings (``train.matryoshka_dims``): the loss is the weighted sum of the method's loss
on each truncated, re-normalised embedding (checked against that sum computed by hand), it composes
with Gradient Cache, a trained model records its dimensions, and the methods whose loss is not a
function of the embeddings' directions refuse it in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

from sentlab import losses
from sentlab.encoders import build_encoder
from sentlab.encoders.matryoshka import MATRYOSHKA_FILE, trained_dims, truncate
from sentlab.errors import ConfigError, DataError
from sentlab.methods import load_config
from sentlab.training import engine
from tests.conftest import features_of, tiny_config
from tests.losses.test_gradient_cache import OTHER, TEXTS, assert_same, gradients

DIMS, WEIGHTS = [32, 16, 8], [1.0, 0.5, 2.0]


def test_the_loss_is_the_weighted_sum_over_truncated_renormalised_embeddings(tiny_backbone_no_dropout):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean").double()
    assert model.get_embedding_dimension() == 32
    base = losses.SimCSELoss(model, gather_across_devices=False)
    columns = [features_of(model, texts) for texts in (TEXTS, OTHER)]
    value = MatryoshkaLoss(model, base, DIMS, WEIGHTS)(columns, None)
    with torch.no_grad():
        full = [model(c)["sentence_embedding"] for c in columns]
        expected = sum(
            w * base.compute_loss_from_embeddings([F.normalize(e[:, :d], dim=-1) for e in full])
            for d, w in zip(DIMS, WEIGHTS)
        )
    assert math.isclose(float(value), float(expected), rel_tol=1e-10)
    # and not merely the full dimension's loss: the truncations add terms of their own
    assert not math.isclose(float(value), 3.5 * float(base.compute_loss_from_embeddings(full)), rel_tol=1e-3)


def test_matryoshka_and_gradient_cache_give_the_plain_matryoshka_gradients(tiny_backbone_no_dropout):
    """float64, no dropout: the tolerance of test_gradient_cache."""
    torch.manual_seed(0)
    model = build_encoder(str(tiny_backbone_no_dropout), "mean").double()
    base = losses.SimCSELoss(model, gather_across_devices=False)
    value, plain = gradients(model, MatryoshkaLoss(model, base, DIMS, WEIGHTS), [TEXTS, OTHER], None)
    cached = MatryoshkaLoss(model, losses.GradientCache(base, mini_batch_size=2), DIMS, WEIGHTS)
    value_c, chunked = gradients(model, cached, [TEXTS, OTHER], None)
    assert math.isclose(value, value_c, rel_tol=1e-10)
    assert_same(plain, chunked)


def test_a_matryoshka_run_records_its_dimensions(tiny_backbone_no_dropout, corpus_file, tmp_path):
    cfg = tiny_config(
        tiny_backbone_no_dropout,
        corpus_file,
        tmp_path / "run",
        pooler="mean",
        max_steps=2,
        matryoshka_dims=[8, 32, 16],
        matryoshka_weights=[2.0, 1.0, 0.5],
    )
    paths = engine.train(cfg, evaluate=False)
    assert trained_dims(paths.model) == [32, 16, 8]  # recorded from the MatryoshkaLoss that ran
    assert "train.matryoshka_dims: the loss is also taken at the first [32, 16, 8] dimensions" in paths.log.read_text()
    assert json.loads((paths.model / MATRYOSHKA_FILE).read_text())["weights"] == [1.0, 0.5, 2.0]
    plain = engine.train(
        tiny_config(tiny_backbone_no_dropout, corpus_file, tmp_path / "plain", max_steps=1), evaluate=False
    )
    assert trained_dims(plain.model) is None


def test_a_dimension_larger_than_the_models_is_one_line(tiny_backbone_no_dropout, corpus_file, tmp_path):
    cfg = tiny_config(
        tiny_backbone_no_dropout, corpus_file, tmp_path / "run", pooler="mean", max_steps=1, matryoshka_dims=[64, 8]
    )
    with pytest.raises(ConfigError, match=r"^train\.matryoshka_dims: 64 is larger than the model's 32 dimensions$"):
        engine.train(cfg, evaluate=False)


def write_yaml(path, tree):
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return path


@pytest.mark.parametrize("method", ["rse", "tsdae", "mlm", "ct", "bert-flow"])
def test_methods_whose_loss_is_not_of_directions_refuse_it(method, corpus_file, tmp_path):
    tree = {"method": method, "model": {"name": "m"}, "train": {"output_dir": str(tmp_path), "matryoshka_dims": [8]}}
    if method == "rse":
        tree["rse"] = {"sources": [{"relation": "same_sent", "path": str(corpus_file), "format": "text"}]}
    else:
        tree["data"] = {"train": str(corpus_file)}
    with pytest.raises(ConfigError) as refused:
        load_config(write_yaml(tmp_path / "config.yaml", tree))
    assert "train.matryoshka_dims: method" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "train, message",
    [
        ({"matryoshka_dims": [8, 8]}, "distinct dimensions"),
        ({"matryoshka_dims": [0]}, "distinct dimensions"),
        ({"matryoshka_dims": [16, 8], "matryoshka_weights": [1.0]}, "one positive weight a dimension"),
        ({"matryoshka_weights": [1.0]}, "needs train.matryoshka_dims"),
    ],
)
def test_bad_dimensions_and_weights_are_one_line(train, message, corpus_file, tmp_path):
    tree = {
        "method": "simcse-unsup",
        "model": {"name": "m"},
        "data": {"train": str(corpus_file)},
        "train": {"output_dir": str(tmp_path), **train},
    }
    with pytest.raises(ConfigError, match=message):
        load_config(write_yaml(tmp_path / "config.yaml", tree))


def test_truncate_keeps_the_first_dimensions_at_unit_length():
    rows = np.array([[3.0, 4.0, 12.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(truncate(rows, 2), [[0.6, 0.8], [0.0, 0.0]])  # a zero row stays zero
    with pytest.raises(DataError, match="--dims 4: the model's embeddings have 3 dimensions"):
        truncate(rows, 4)


def test_a_training_only_head_is_refused(tiny_backbone_no_dropout, corpus_file, tmp_path):
    """SimCSE's MLP on [CLS] in training only is removed before saving: Matryoshka would truncate its
    output, not the saved model's embedding."""
    cfg = tiny_config(
        tiny_backbone_no_dropout, corpus_file, tmp_path / "run", pooler="cls", max_steps=1, matryoshka_dims=[8]
    )
    with pytest.raises(ConfigError, match=r"^train\.matryoshka_dims: the model ends in a training-only module"):
        engine.train(cfg, evaluate=False)
