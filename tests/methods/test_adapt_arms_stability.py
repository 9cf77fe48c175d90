"""Every arm of ``sentlab adapt`` at its default learning rate ends with finite losses on awkward text:
one-word and 200-word lines, and the same sentence over and over (near-identical vectors, where
BERT-flow's ActNorm once scaled by 1 / (a std near 0) and diverged)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentlab.adapt import ARMS
from sentlab.methods import validate_config
from sentlab.training import engine
from tests.conftest import WORDS


def awkward_text(path):
    lines = ["a", "dog", "the man plays"] * 4
    lines += [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(200)) for i in range(6)]
    lines += ["a man plays the guitar in the park"] * 30 + ["a man plays the guitar in the park ."] * 10
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("arm", sorted(ARMS))
def test_each_adapt_arm_trains_on_awkward_text_without_a_non_finite_loss(arm, tiny_backbone, tmp_path):
    spec = ARMS[arm]
    cfg = validate_config(
        {
            "method": spec.method,
            "model": {"name": str(tiny_backbone), "max_seq_length": 64, "pooler": "cls" if arm == "tsdae" else "mean"},
            "data": {"train": str(awkward_text(tmp_path / "awkward.txt"))},
            "train": {
                "output_dir": str(tmp_path / "run"),
                "batch_size": 8,
                "learning_rate": spec.learning_rate,
                "max_steps": 30,
                "logging_steps": 1,
                "progress_bar": False,
                "seed": 1,
            },
            "eval": {"dev_task": "none"},
        }
    )
    paths = engine.train(cfg, evaluate=False)  # a NaN stops training with TrainingDivergedError
    losses = [r["loss"] for r in map(json.loads, paths.metrics.read_text().splitlines()) if "loss" in r]
    assert len(losses) == 30 and np.isfinite(losses).all()


def test_bert_flow_initialises_actnorm_from_many_vectors_not_the_first_batch(tiny_backbone, tmp_path):
    from sentlab.encoders.flow import GlowFlow

    cfg = validate_config(
        {
            "method": "bert-flow",
            "model": {"name": str(tiny_backbone), "pooler": "mean", "max_seq_length": 16},
            "data": {"train": str(awkward_text(tmp_path / "awkward.txt"))},
            "train": {"output_dir": str(tmp_path / "run"), "progress_bar": False},
            "eval": {"dev_task": "none"},
        }
    )
    method = engine.get_method("bert-flow")(cfg, engine.RunPaths(tmp_path / "run"))
    flow = method.build_model()[-1]
    assert isinstance(flow, GlowFlow)
    actnorms = [m for m in flow.flow.modules() if hasattr(m, "data_dep_init_done")]
    assert actnorms and all(float(m.data_dep_init_done) == 1.0 for m in actnorms)  # done before the first step
    # initialised from all 64 lines, the repeated sentence's vectors do not make any scale explode
    assert max(float(m.s.abs().max()) for m in actnorms) < 10
