"""The second use of every run as right as the first: for every method, every kind of start model
(a transformer, a LoRA adapter on one, a static model) and every form of training data (a file, a
datasets folder, ``data.sets``), a two-step run's dumped config loads back unchanged, ``--resume`` from
its first checkpoint ends on the same weights, and its card's Reproduce command trains them again."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from sentlab.cli import main
from sentlab.encoders import load_encoder
from sentlab.methods import validate_config
from sentlab.training import engine
from sentlab.training.checkpoints import checkpoint_folders
from sentlab.training.model_card import BEGIN, CONFIG_FILE, _short_names, portable_tree
from tests.conftest import DEVICE
from tests.tiny_presets import CONFIGS, METHOD_PRESETS, FakeData, TinyModels, tiny_preset_tree

PROBE = ["a man plays the guitar", "a dog runs in the park", "the girl reads a book"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[FakeData, TinyModels]:
    root = tmp_path_factory.mktemp("second-use")
    return FakeData(root / "data"), TinyModels(root / "models")


def embeddings(folder) -> np.ndarray:
    return load_encoder(folder, device=str(DEVICE)).encode(PROBE)  # sentlab's loader: BERT-flow's module too


def same_weights(a: np.ndarray, b: np.ndarray) -> None:
    # the same float32 steps from the same seed; 1e-5 absorbs a BLAS that is not bit-reproducible run to
    # run, while a wrong resume or a setting lost on reload moves a tiny model's weights by ~lr per step
    np.testing.assert_allclose(a, b, atol=1e-5)


def check_second_use(tree: dict, tmp_path, monkeypatch, steps: int = 2) -> None:
    """Train ``tree`` ``steps`` steps (a checkpoint after each); its dumped config, a resume from the step
    before the last and the card's Reproduce command must each give back the same run."""
    tree["train"].update(max_steps=steps, save_steps=1, eval_steps=1)
    cfg = validate_config(tree)
    paths = engine.train(cfg, evaluate=False)
    first = embeddings(paths.model)

    # the run's config.yaml loads back as the same settings, and resuming under it changes nothing
    again = validate_config(yaml.safe_load(paths.config.read_text("utf-8")))
    assert again.to_tree() == cfg.to_tree()
    assert engine.changes_since_start(again, paths) == []

    # a crash after step 1: the last checkpoint and the model are gone; --resume ends where the run did
    shutil.rmtree(checkpoint_folders(paths.checkpoints)[-1])
    shutil.rmtree(paths.model)
    resumed = engine.train(again, resume=True, evaluate=False)
    same_weights(embeddings(resumed.model), first)

    # the card's command, in a folder holding its config and the files it names, trains it again
    card = (resumed.model / "README.md").read_text("utf-8")
    command = re.search(r"```bash\n(.*)\n```", card[card.index(BEGIN) :]).group(1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(resumed.model / CONFIG_FILE, elsewhere)
    _, needed = portable_tree(cfg)
    local = [p for p in re.findall(r"'(/[^']+)'", repr(cfg.to_tree())) if p.startswith(str(tmp_path.parent))]
    for source, name in _short_names(sorted(set(local))).items():
        if name in needed:
            (shutil.copytree if Path(source).is_dir() else shutil.copy)(source, elsewhere / name)
    monkeypatch.chdir(elsewhere)
    assert main([*command.split()[1:], "--no-eval", "--quiet"]) == 0
    same_weights(embeddings(elsewhere / "runs" / "reproduced" / "model"), first)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(METHOD_PRESETS))
def test_every_method_resumes_and_reproduces(variant, tiny, tmp_path, monkeypatch):
    data, models = tiny
    tree = tiny_preset_tree(CONFIGS / f"{METHOD_PRESETS[variant]}.yaml", tmp_path / "run", data, models, steps=2)
    tree["train"]["mixed_precision"] = "no"
    check_second_use(tree, tmp_path, monkeypatch)


def pairs_tree(backbone, train, out, **model) -> dict:
    return {
        "method": "supervised",
        "model": {"name": str(backbone), "max_seq_length": 16, **model},
        "data": {"train": str(train), "columns": {"anchor": "q", "positive": "p"}},
        "train": {"output_dir": str(out), "batch_size": 4, "learning_rate": 5e-4, "progress_bar": False},
        "eval": {"dev_task": "none", "final_tasks": []},
        "supervised": {"loss": "mnrl"},
    }


def write_pairs(path, first_word: str, rows: int = 12):
    words = ["man", "dog", "cat", "boy", "girl", "car", "tree", "bird"]
    rows = [
        {"q": f"{first_word} {words[i % 8]} runs", "p": f"{first_word} {words[i % 8]} is running"} for i in range(rows)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("form", ["file", "datasets", "sets", "set-losses"])
def test_supervised_data_forms_resume_and_reproduce(form, tiny, tmp_path, monkeypatch):
    _, models = tiny
    pairs = write_pairs(tmp_path / "pairs.jsonl", "a")
    tree = pairs_tree(models.backbone("bert"), pairs, tmp_path / "run")
    if form == "datasets":
        from datasets import load_dataset

        load_dataset("json", data_files=str(pairs), split="train").save_to_disk(str(tmp_path / "pairs-ds"))
        tree["data"]["train"] = str(tmp_path / "pairs-ds")
    if form == "sets":
        other = write_pairs(tmp_path / "other.jsonl", "the", 8)
        tree["data"] = {
            "sets": {
                "red": {"train": str(pairs), "columns": {"anchor": "q", "positive": "p"}},
                "blue": {"train": str(other), "columns": ["q", "p"], "limit": 8},
            }
        }
    if form == "set-losses":  # a loss and prompts per set, a batch of each in turn: blue, red, blue. Step 1
        # trains SoftmaxLoss's classifier and step 3 reads it, so a resume from step 2 ends on the uninterrupted
        # weights only if it restored the classifier
        labelled = tmp_path / "labelled.jsonl"
        rows = [{"a": f"x {i} runs", "b": f"y {i} runs", "l": i % 2} for i in range(8)]
        labelled.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        tree["data"] = {
            "sampler": "round_robin",
            "sets": {
                "blue": {
                    "train": str(labelled),
                    "columns": {"text1": "a", "text2": "b", "label": "l"},
                    "loss": "SoftmaxLoss",
                    "loss_args": {"num_labels": 2},
                },
                "red": {
                    "train": str(pairs),
                    "columns": {"anchor": "q", "positive": "p"},
                    "prompts": {"anchor": "dog "},
                },
            },
        }
    check_second_use(tree, tmp_path, monkeypatch, steps=3 if form == "set-losses" else 2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["adapter", "static"])
def test_each_kind_of_start_model_resumes_and_reproduces(kind, tiny, tiny_static, tmp_path, monkeypatch):
    _, models = tiny
    pairs = write_pairs(tmp_path / "pairs.jsonl", "a")
    backbone = models.backbone("bert")
    if kind == "adapter":
        tree = pairs_tree(backbone, pairs, tmp_path / "run", adapter={"rank": 4})
    else:
        tree = pairs_tree(tiny_static, pairs, tmp_path / "run")
        del tree["model"]["max_seq_length"]
        tree["train"]["learning_rate"] = 0.1
    check_second_use(tree, tmp_path, monkeypatch)
    if kind == "static":  # a static model has no training length; its card does not claim one
        card = (tmp_path / "run" / "model" / "README.md").read_text("utf-8")
        assert "training length" not in card and "max_seq_length" not in (tmp_path / "run" / "config.yaml").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("form", ["one loss", "a loss per set"])
def test_a_fitted_projection_resumes_as_trained_and_reproduces(form, tiny, tmp_path, monkeypatch):
    """MSE onto a teacher through a projection fitted before training (supervised.projection_init
    least_squares), one loss or one per training set (each its own projection): a resume from step 2
    ends with the projections of the uninterrupted step 3 (restored as trained, not fitted again: the fit
    alone is ~lr per step away), and the run's second use holds."""
    from safetensors.torch import load_file
    from transformers import AutoConfig

    from sentlab.training.callbacks import LOSS_STATE_FILE

    _, models = tiny
    backbone = str(models.backbone("bert"))
    tree = pairs_tree(backbone, write_pairs(tmp_path / "pairs.jsonl", "a", 48), tmp_path / "run")
    tree["data"]["columns"] = ["q"]
    tree["supervised"] = {
        "loss": "MSELoss",
        "teacher": backbone,
        "loss_args": {"projection_dim": AutoConfig.from_pretrained(backbone).hidden_size},
        "projection_init": "least_squares",
    }
    fits = {"": 48}
    if form == "a loss per set":  # blue's teacher is a copy: another loss, another projection
        shutil.copytree(backbone, tmp_path / "teacher-copy")
        blue = {"train": str(write_pairs(tmp_path / "b.jsonl", "the", 24)), "columns": ["q"]}
        tree["data"] = {"sets": {"red": {"train": tree["data"]["train"], "columns": ["q"]}, "blue": blue}}
        tree["data"]["sets"]["blue"]["teacher"] = str(tmp_path / "teacher-copy")
        fits = {"-red": 48, "-blue": 24}
    tree["train"].update(max_steps=3, save_steps=1, eval_steps=1)
    cfg = validate_config(tree)
    paths = engine.train(cfg, evaluate=False)
    last = checkpoint_folders(paths.checkpoints)[-1]
    uninterrupted = load_file(str(last / LOSS_STATE_FILE))
    for suffix, rows in fits.items():
        assert json.loads((paths.root / f"projection_init{suffix}.json").read_text())["rows"] == rows
    shutil.rmtree(last)
    shutil.rmtree(paths.model)
    import sklearn.linear_model

    fits, ridge_fit = [], sklearn.linear_model.Ridge.fit
    with monkeypatch.context() as patched:
        patched.setattr(sklearn.linear_model.Ridge, "fit", lambda *a, **k: fits.append(1) or ridge_fit(*a, **k))
        engine.train(cfg, resume=True, evaluate=False)
    assert fits == []  # the checkpoint restores the projection: no fit before it
    resumed = load_file(str(checkpoint_folders(paths.checkpoints)[-1] / LOSS_STATE_FILE))
    assert resumed.keys() == uninterrupted.keys() and any("projection" in k for k in resumed)
    for key in resumed:  # the same float32 steps from the same state: 1e-6 absorbs a BLAS's reordering
        np.testing.assert_allclose(
            resumed[key].float().cpu().numpy(), uninterrupted[key].float().cpu().numpy(), atol=1e-6
        )
    check_second_use(dict(tree, train=dict(tree["train"], output_dir=str(tmp_path / "again"))), tmp_path, monkeypatch)
