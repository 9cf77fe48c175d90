"""Prompts in the commands: ``sentlab encode --prompt-name / --prompt`` and ``sentlab mine`` take the
model's own query and document prompts (an e5 model's ``passage`` prompt included)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from datasets import Dataset

from sentlab.cli import main
from sentlab.encoders import build_encoder, load_encoder
from sentlab.mining import mine
from tests.conftest import the_error


@pytest.fixture
def e5_like(tiny_backbone, tmp_path):
    """The tiny BERT saved with e5's prompt names: ``query`` and ``passage``."""
    model = build_encoder(str(tiny_backbone), "mean")
    model.prompts = {"query": "the dog :", "passage": "a cat :"}
    model.save(str(tmp_path / "e5"))
    return tmp_path / "e5"


def test_encode_puts_the_named_prompt_before_each_sentence(e5_like, tmp_path, capsys):
    text = tmp_path / "s.txt"
    text.write_text("a man plays\nthe boy reads a book\n", encoding="utf-8")
    out = tmp_path / "e.npy"
    base = ["encode", "--model", str(e5_like), "--input", str(text), "--output", str(out), "--quiet"]
    assert main([*base, "--prompt-name", "document"]) == 0
    model = load_encoder(e5_like)
    expected = model.encode(["a cat :a man plays", "a cat :the boy reads a book"], prompt="")
    # 1e-5: float32 embeddings of the same texts in batches of another order
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-5)
    assert json.loads(out.with_name("e.npy.json").read_text())["plan"]["prompt"] == "a cat :"
    assert main([*base, "--prompt", ""]) == 0  # another plan: encoded again, without the prompt
    np.testing.assert_allclose(
        np.load(out), model.encode(["a man plays", "the boy reads a book"], prompt=""), atol=1e-5
    )
    assert main([*base, "--prompt-name", "title"]) != 0
    assert "--prompt-name title: the model has no such prompt (its prompts: query, passage, document;" in the_error(
        capsys.readouterr().err
    )


def test_a_role_the_model_has_no_prompt_for_encodes_without_one(tiny_backbone, tmp_path, capsys):
    text = tmp_path / "s.txt"
    text.write_text("a man plays\n", encoding="utf-8")
    out = tmp_path / "e.npy"
    argv = ["encode", "--model", str(tiny_backbone), "--pooler", "mean", "--input", str(text), "--output", str(out)]
    assert main([*argv, "--prompt-name", "document"]) == 0
    assert "--prompt-name document: the model has none" in capsys.readouterr().err
    assert "prompt" not in json.loads(out.with_name("e.npy.json").read_text())["plan"]


def test_mine_takes_the_models_passage_prompt_and_says_so(e5_like, tmp_path, capsys):
    model = load_encoder(e5_like)
    asked = []  # the prompts the model is asked to encode with, as sentence-transformers passes them
    encode = model.encode
    model.encode = lambda *a, **kw: asked.append(kw.get("prompt")) or encode(*a, **kw)
    pairs = Dataset.from_dict({"anchor": ["a man plays", "the dog runs"], "positive": ["a man is playing", "dogs run"]})
    corpus = ["a man is playing", "dogs run", "the cat sits", "a girl reads"]
    _, report = mine(pairs, model, corpus=corpus, relative_margin=None)
    assert report.settings["query_prompt"] == "the dog :" and report.settings["corpus_prompt"] == "a cat :"
    assert set(asked) == {"the dog :", "a cat :"}  # the anchors after one, the candidates after the other
    _, report = mine(pairs, model, corpus=corpus, relative_margin=None, corpus_prompt="")
    assert report.settings["corpus_prompt"] == ""
    source = tmp_path / "pairs.tsv"
    source.write_text("anchor\tpositive\nthe dog\ta dog\nthe cat\ta cat\n", encoding="utf-8")
    argv = ["mine", "--model", str(e5_like), "--input", str(source), "--output", str(tmp_path / "t.jsonl")]
    assert main([*argv, "--query-prompt", "q :", "--query-prompt-name", "query"]) != 0
    assert "--query-prompt-name and --query-prompt: give one of the two" in the_error(capsys.readouterr().err)
