"""The card of a saved model: sentence-transformers' README with what sentlab knows (base model,
data, citation) and a sentlab section (method, data hash, settings, scores beside the start's, the
config and the command that reproduce it)."""

from __future__ import annotations

import json

from sentence_transformers import SentenceTransformer

from sentlab.cache import file_sha256
from sentlab.methods import validate_config
from sentlab.training import engine
from sentlab.training.model_card import BEGIN, CONFIG_FILE, hub_id, sentlab_section, write_sentlab_section
from tests.conftest import tiny_config


def test_a_trained_folder_carries_a_card_that_says_how_it_was_made(tiny_backbone, corpus_file, tmp_path):
    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=3)
    paths = engine.train(cfg, evaluate=False)
    card = (paths.model / "README.md").read_text("utf-8")
    assert card.count(BEGIN) == 1 and "## Trained with sentlab" in card
    assert "`simcse-unsup`, SimCSE (Gao et al. 2021)" in card
    assert "Gao, Yao, Chen. SimCSE" in card  # the loss cites its paper in sentence-transformers' citations
    assert f"sha256 `{file_sha256(corpus_file)}`" in card and "96 rows" in card
    assert "batch 8, 3 steps" in card and "precision fp32" in card
    assert "Unnamed Dataset" not in card and f"{corpus_file.name} (96 rows)" in card
    assert "Not scored at the end of training" in card
    assert f"sentlab train {CONFIG_FILE}" in card
    SentenceTransformer(str(paths.model))  # still an ordinary sentence-transformers folder


def test_the_cards_reproduce_command_runs_as_written_from_where_it_says(tiny_backbone, corpus_file, tmp_path):
    """No absolute local path on the card or in its config: the start model and the data by name; the
    card's command, run in a folder holding the config and the files it names, trains again."""
    import re
    import shutil
    import subprocess
    import sys

    import yaml

    from tests.conftest import subprocess_env

    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=2)
    paths = engine.train(cfg, evaluate=False)
    card = (paths.model / "README.md").read_text("utf-8")
    config = (paths.model / CONFIG_FILE).read_text("utf-8")
    for text in (card, config):
        assert str(tmp_path) not in text and str(tiny_backbone) not in text  # no local absolute path
    assert yaml.safe_load(config)["data"]["train"] == corpus_file.name
    command = re.search(r"```bash\n(.*)\n```", card[card.index(BEGIN) :]).group(1)
    assert command == f"sentlab train {CONFIG_FILE}"
    assert f"`{corpus_file.name}`" in card and f"`{tiny_backbone.name}`" in card  # what it needs beside it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(paths.model / CONFIG_FILE, elsewhere)
    shutil.copy(corpus_file, elsewhere)
    shutil.copytree(tiny_backbone, elsewhere / tiny_backbone.name)
    argv = [sys.executable, "-m", "sentlab.cli", *command.split()[1:], "--no-eval", "--quiet"]
    done = subprocess.run(argv, cwd=elsewhere, capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (elsewhere / "runs" / "reproduced" / "model" / "model.safetensors").is_file()


def test_a_card_of_the_kept_start_model_says_so_everywhere(tiny_backbone, corpus_file, tmp_path, monkeypatch):
    """Dev selection keeps the start model: the card says so in its first sentence and in sentlab's
    section, and sentence-transformers' part shows no later step's scores as the model's."""
    from tests.conftest import write_scored_pairs_card

    card_file = write_scored_pairs_card(tmp_path, corpus_file, "dev")
    tree = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=4, eval_steps=2).to_tree()
    tree["eval"] = {"dev_task": str(card_file), "final_tasks": []}

    keep_if_best = engine.StartCandidate.keep_if_best

    def start_scores_best(self):
        self.value = float("inf")  # every checkpoint scores below the start model
        return keep_if_best(self)

    monkeypatch.setattr(engine.StartCandidate, "keep_if_best", start_scores_best)
    paths = engine.train(validate_config(tree), evaluate=False)
    card = (paths.model / "README.md").read_text("utf-8")
    assert json.loads(paths.selection.read_text())["kept_step"] == 0
    assert f"model: {tiny_backbone.name} itself, unchanged" in card and "finetuned" not in card
    assert "**These are the start model's weights, unchanged**: training ran 4 steps" in card
    logged = [line for line in card.splitlines() if line.startswith("| **")]
    assert logged and all(line.startswith("| **0**") for line in logged), logged  # step 0 in bold, no other


def test_the_cards_evaluation_is_the_kept_steps(tiny_backbone):
    """describe_kept: the kept step's logged scores replace the last evaluation's; an evaluator with
    nothing logged at that step is left out."""
    from sentlab.training.model_card import describe_kept

    model = SentenceTransformer(str(tiny_backbone))
    first, second = object(), object()
    model.model_card_data.eval_results_dict = {first: {"dev_spearman": 0.5}, second: {"other_map": 0.1}}
    history = [{"step": 2, "eval_dev_spearman": 0.7, "epoch": 0.1}, {"step": 4, "eval_dev_spearman": 0.5}]
    describe_kept(model, 2, history)
    assert model.model_card_data.eval_results_dict == {first: {"dev_spearman": 0.7}}
    assert model.model_card_data.best_model_step == 2
    describe_kept(model, 3, history)
    assert model.model_card_data.eval_results_dict == {}


def test_the_section_puts_scores_beside_the_start_models_and_is_written_once(tmp_path):
    from sentlab.methods import load_config

    cfg = load_config("rankencoder-minilm-cpu", [])
    run, model = tmp_path / "run", tmp_path / "run" / "model"
    model.mkdir(parents=True)
    (model / "README.md").write_text("# the card sentence-transformers wrote\n")
    (run / "config.yaml").write_text(cfg.to_yaml())
    report = {"tasks": {"STS-B": {"spearman": 81.5}}, "summary": {"sts_avg": 78.0}}
    (run / "results.json").write_text(json.dumps(report))
    report = {"tasks": {"STS-B": {"spearman": 82.0}}, "summary": {"sts_avg": 78.9}}
    (run / "start_results.json").write_text(json.dumps(report))
    (run / "selection.json").write_text(
        json.dumps({"metric": "dev", "start": 0.87, "best_checkpoint": 0.86, "kept_step": 0})
    )
    record = {"version": "0", "rows": 1920, "sha256": "ab", "steps": 30, "precision": "fp32 on cpu", "command": "x"}
    section = sentlab_section(cfg, run, record)
    assert "| STS-B | 81.50 | 82.00 |" in section and "| STS avg | 78.00 | 78.90 |" in section
    assert "kept step 0, best checkpoint 0.8600 against the start model's 0.8700" in section
    assert "it loses Eq. 7" in section  # what plain sentence-transformers loses of a RankEncoder folder
    assert "`sentence-transformers/all-MiniLM-L6-v2`" in section
    write_sentlab_section(cfg, run, model, record)
    write_sentlab_section(cfg, run, model, record)  # again: replaced, not appended twice
    import time

    later = sentlab_section(cfg, run, record, since=time.time() + 60)  # files an earlier run left
    assert "| STS-B |" not in later and "kept step" not in later and "Not scored" in later
    (run / "selection.json").write_text(json.dumps({"metric": "dev", "start": 0.87, "best_checkpoint": None}))
    assert "best checkpoint none scored" in sentlab_section(cfg, run, record)
    text = (model / "README.md").read_text()
    assert text.count(BEGIN) == 1 and text.startswith("# the card sentence-transformers wrote")


def test_only_a_hub_name_or_an_alias_becomes_the_base_model(tmp_path, monkeypatch):
    assert hub_id("minilm") == "sentence-transformers/all-MiniLM-L6-v2"
    assert hub_id("bert-base-uncased") == "bert-base-uncased"
    assert hub_id("google-bert/bert-base-uncased") == "google-bert/bert-base-uncased"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "model").mkdir(parents=True)
    for local in (str(tmp_path / "org" / "model"), "org/model", "~/mymodel", "./model", "a/b/c", ""):
        assert hub_id(local) is None, local
