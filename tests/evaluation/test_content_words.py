import numpy as np

from sentlab.evaluation.content_words import content_words_report, most_relevant_words, pos_class

# a bag-of-words "encoder": one axis per word, so the drop of each removal is known by hand
AXES = {"cat": [4, 0, 0], "sits": [0, 1, 0], "the": [0, 0, 0.5]}


def bag_encode(texts):
    return np.asarray([np.sum([AXES[w] for w in t.split()] or [[0, 0, 0]], axis=0) + 1e-3 for t in texts], float)


def cosine(x, y):
    x, y = bag_encode([x])[0], bag_encode([y])[0]
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_argmax_word_is_the_largest_cosine_drop_by_hand():
    a, b = "the cat sits", "cat sits"
    found = most_relevant_words(bag_encode, [(a, b)])[0]
    drops = {
        w: cosine(a, b)
        - min(cosine(" ".join(x for x in a.split() if x != w), b), cosine(a, " ".join(x for x in b.split() if x != w)))
        for w in ("the", "cat", "sits")
    }
    assert found["word"] == max(drops, key=drops.get) == "cat"
    assert np.isclose(found["drop"], drops["cat"]) and np.isclose(found["cosine"], cosine(a, b))


def test_pos_classes_and_the_no_tagger_note():
    assert [
        pos_class(t, c)
        for t, c in [
            ("NNS", "NOUN"),
            ("VBZ", "AUX"),
            ("VBD", "VERB"),
            ("JJR", "ADJ"),
            ("PRP$", "PRON"),
            ("IN", "ADP"),
            ("UH", "INTJ"),
        ]
    ] == ["NN", "VB-AUX", "VB-NAUX", "JJ", "PRP", "IN", "OTHER"]
    report = content_words_report(bag_encode, [("the cat sits", "cat sits")], "bag")
    assert report["top_words"][0][0] == "cat"
    assert ("pos_distribution" in report) or report["pos_note"].startswith("no POS tagger installed")


def test_content_words_command_writes_json_and_png(tiny_backbone, fake_sts_dir, tmp_path):
    import json

    from sentlab.cli import main

    out = tmp_path / "words"
    assert (
        main(
            [
                "content-words",
                "--model",
                str(tiny_backbone),
                "--pooler",
                "mean",
                "--pairs",
                "sts-b",
                "--data-dir",
                str(fake_sts_dir),
                "--output",
                str(out),
                "--limit",
                "5",
            ]
        )
        == 0
    )
    report = json.loads((out / "content_words.json").read_text())
    assert 0 < report["n_pairs"] <= 5 and len(report["pairs"]) == report["n_pairs"]
    assert (out / "content_words.png").is_file() and report["pos_note"]


def test_unknown_dev_task_is_a_one_line_error(tiny_backbone):
    import pytest

    from sentlab.encoders import build_encoder
    from sentlab.errors import ConfigError
    from sentlab.evaluation.dev_tasks import relevant_pairs, score_dev_task

    with pytest.raises(ConfigError, match="unknown dev task"):
        score_dev_task(build_encoder(str(tiny_backbone), "mean"), "quora")
    with pytest.raises(ConfigError, match="unknown task"):
        relevant_pairs("quora")
