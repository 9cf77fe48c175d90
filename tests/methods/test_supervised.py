"""Labelled data for the supervised method: scored pairs on a stated or read scale, pairs and triplets
with columns named in order or by role, sentence-transformers' losses by name, and batches without
duplicates where the other rows are negatives."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from sentence_transformers.base.sampler import NoDuplicatesBatchSampler
from sentence_transformers.sentence_transformer import losses

from sentlab.errors import ConfigError, DataError
from sentlab.methods.supervised import Supervised
from sentlab.training import engine
from tests.methods.test_baselines import method_config


def scored_jsonl(path, scores):
    words = ["a cat sat", "the dog ran", "birds fly", "fish swim", "a man walks", "rain falls"]
    with path.open("w", encoding="utf-8") as f:
        for i, score in enumerate(scores):
            f.write(json.dumps({"question": words[i % 6], "answer": words[(i + 1) % 6], "grade": score}) + "\n")
    return path


def supervised(tmp_path, backbone, train, columns, *, max_steps=2, batch_size=8, **section):
    return method_config(
        "supervised",
        backbone,
        train,
        tmp_path / "run",
        section={"supervised": section},
        data={"columns": columns} if columns else None,
        max_steps=max_steps,
        batch_size=batch_size,
    )


def test_scored_pairs_by_role_are_scaled_from_the_stated_range(tiny_backbone, tmp_path):
    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 5, 3, 2])
    cfg = supervised(
        tmp_path,
        tiny_backbone,
        train,
        {"text2": "answer", "score": "grade", "text1": "question"},  # a mapping: its order does not matter
        loss="angle",
        score_range=[1, 5],
    )
    rows = Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    assert rows.column_names == ["sentence1", "sentence2", "score"]
    assert rows["sentence1"][0] == "a cat sat" and rows["sentence2"][0] == "the dog ran"
    np.testing.assert_allclose(rows["score"], [0.0, 1.0, 0.5, 0.25])  # (score - 1) / (5 - 1)


def test_a_score_outside_the_stated_range_is_refused_with_its_row(tiny_backbone, tmp_path):
    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 5, 6, 2])
    cfg = supervised(tmp_path, tiny_backbone, train, ["question", "answer", "grade"], loss="cosent", score_range=[0, 5])
    with pytest.raises(DataError, match=r"row 3: grade 6 is outside supervised.score_range \[0, 5\]"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()


def test_a_regression_needs_a_stated_scale_a_ranking_loss_reads_the_order(tiny_backbone, tmp_path, capsys):
    train = scored_jsonl(tmp_path / "pairs.jsonl", [2, 4, 3])  # a 0-5 file whose scores span 2-4
    with pytest.raises(ValueError, match="cosine-mse regresses the cosine .* state the scores' scale"):
        supervised(tmp_path, tiny_backbone, train, ["question", "answer", "grade"], loss="cosine-mse")
    stated = supervised(
        tmp_path, tiny_backbone, train, ["question", "answer", "grade"], loss="cosine-mse", score_range=[0, 5]
    )
    np.testing.assert_allclose(
        Supervised(stated, engine.RunPaths(tmp_path / "run")).train_dataset()["score"], [0.4, 0.8, 0.6]
    )
    cfg = supervised(tmp_path, tiny_backbone, train, ["question", "answer", "grade"], loss="cosent")
    rows = Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    np.testing.assert_allclose(rows["score"], [0.0, 1.0, 0.5])  # the order kept, all CoSENT reads
    assert "cosent reads only the scores' order; mapped from the data's [2, 4]" in capsys.readouterr().err
    flat = scored_jsonl(tmp_path / "flat.jsonl", [3, 3])
    cfg = supervised(tmp_path, tiny_backbone, flat, ["question", "answer", "grade"], loss="cosent")
    with pytest.raises(DataError, match="every score is 3"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()


@pytest.mark.parametrize("bad", ["inf", "nan", "-Infinity", "1e400", "two"])
def test_a_score_that_is_not_a_finite_number_is_refused_with_its_line(tiny_backbone, tmp_path, bad):
    train = tmp_path / "pairs.tsv"
    train.write_text(f"s1\ts2\tscore\na cat\ta dog\t1\nbirds fly\tfish swim\t{bad}\n", encoding="utf-8")
    cfg = supervised(tmp_path, tiny_backbone, train, ["s1", "s2", "score"], loss="cosent", score_range=[0, 5])
    with pytest.raises(DataError, match=rf"pairs.tsv:3: score column 'score': '{bad}' is not (a number|finite)"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()


def test_a_column_of_numbers_is_never_read_as_a_text(tiny_backbone, tmp_path):
    train = tmp_path / "pairs.tsv"
    train.write_text("s1\ts2\tscore\na cat\ta dog\t0\nbirds fly\tfish swim\t2\n", encoding="utf-8")
    # scored pairs named in order under the default loss (mnrl): the score is not a negative text
    cfg = supervised(tmp_path, tiny_backbone, train, ["s1", "s2", "score"])
    with pytest.raises(DataError, match=r"column 'score' \(negative\) holds numbers, not texts: .*cosine-mse, cosent"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    cfg = supervised(tmp_path, tiny_backbone, train, {"text1": "s1", "text2": "s2", "score": "score"})
    with pytest.raises(ConfigError, match="are scored pairs; supervised.loss mnrl reads"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    texts = tmp_path / "triplets.tsv"  # the same shape with a text third column trains as triplets
    texts.write_text("a\tp\tn\na cat\ta dog\tthe car\nbirds fly\tfish swim\t42 days\n", encoding="utf-8")
    rows = Supervised(supervised(tmp_path, tiny_backbone, texts, ["a", "p", "n"]), engine.RunPaths(tmp_path / "run"))
    assert rows.train_dataset()["negative"] == ["the car", "42 days"]


@pytest.mark.parametrize(
    "columns, loss, message",
    [
        (["question", "answer"], "cosent", r"needs \[text1, text2, score\]"),
        ({"text1": "question", "label": "grade"}, "cosent", "not label"),
        ({"anchor": "question", "negative": "answer"}, "mnrl", "needs the role.s. positive"),
        (["question", "answer", "grade", "answer"], "mnrl", "'answer' is named twice"),
        (["question", "answer", "grade", "grade"], "TripletLoss", r"needs \[anchor, positive, negative\], got"),
        (["question", "answer"], "TripletLoss", r"needs \[anchor, positive, negative\], got"),
        ({"anchor": "question", "positive": "answer", "negative_2": "grade"}, "mnrl", "not negative_2"),
    ],
)
def test_columns_that_do_not_fit_the_loss_are_refused(tiny_backbone, tmp_path, columns, loss, message):
    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 2])
    cfg = supervised(tmp_path, tiny_backbone, train, columns, loss=loss)
    with pytest.raises(ConfigError, match=message):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()


def test_each_loss_name_is_sentence_transformers_loss(tiny_backbone, tmp_path):
    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 2])
    expected = {
        "mnrl": losses.MultipleNegativesRankingLoss,
        "cosine-mse": losses.CosineSimilarityLoss,
        "cosent": losses.CoSENTLoss,
        "angle": losses.AnglELoss,
    }
    for name, cls in expected.items():
        stated = {"score_range": [0, 5]} if name == "cosine-mse" else {}
        cfg = supervised(tmp_path, tiny_backbone, train, ["question", "answer", "grade"], loss=name, **stated)
        method = Supervised(cfg, engine.RunPaths(tmp_path / "run"))
        loss = method.loss(method.build_model())
        assert type(loss) is cls, name
        if name != "cosine-mse":
            assert loss.scale == 20.0  # loss.temperature at its default, 0.05: every scale's default
            cfg.loss.temperature = 0.125  # the one key: a scale is 1 / temperature (both exact in binary)
            assert method.loss(method.build_model()).scale == 8.0


def test_triplets_train_end_to_end_with_no_text_twice_in_a_batch(tiny_backbone, tmp_path):
    """Triplets whose anchors repeat: with train.no_duplicates the trainer batches through
    NoDuplicatesBatchSampler (read back in runtime.json), and none of its batches holds a text twice."""
    anchors, positives = ["a cat sat", "the dog ran", "birds fly"], ["fish swim", "a man walks", "rain falls", "sun"]
    negatives = ["snow", "wind blows", "a car", "trees", "the sea"]
    rows = [(anchors[i % 3], positives[i % 4], negatives[i % 5]) for i in range(48)]  # anchors repeat every 3 rows
    train = tmp_path / "triplets.csv"
    train.write_text("q,pos,neg\n" + "".join(f"{a},{p},{n}\n" for a, p, n in rows), encoding="utf-8")
    cfg = supervised(tmp_path, tiny_backbone, train, ["q", "pos", "neg"], loss="mnrl")
    cfg.train.no_duplicates = True
    cfg.train.batch_size = 3
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))
    loader = trainer.get_train_dataloader()
    sampler = getattr(loader, "batch_sampler", None)
    sampler = getattr(sampler, "batch_sampler", sampler)  # Accelerate wraps it
    assert isinstance(sampler, NoDuplicatesBatchSampler)
    dataset = trainer.train_dataset
    for batch in sampler:
        seen = [text for i in batch for text in dataset[int(i)].values() if isinstance(text, str)]
        assert len(seen) == len(set(seen)), seen
    paths = engine.train(cfg, evaluate=False)
    runtime = json.loads(paths.runtime.read_text())
    assert runtime["dataloader"]["batch_sampler"] == "NoDuplicatesBatchSampler"
    losses_seen = [json.loads(line).get("loss") for line in paths.metrics.read_text().splitlines()]
    assert all(np.isfinite(v) for v in losses_seen if v is not None) and any(v is not None for v in losses_seen)


def test_no_duplicates_is_refused_where_there_are_no_in_batch_negatives(tiny_backbone, corpus_file, tmp_path):
    cfg = method_config("tsdae", tiny_backbone, corpus_file, tmp_path / "run", "cls", max_steps=1, no_duplicates=True)
    with pytest.raises(ConfigError, match="tsdae has no in-batch negatives"):
        engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))


@pytest.mark.parametrize("content", ["", "q,pos,neg\n"])
def test_an_empty_triplet_file_is_one_line_and_a_non_zero_exit(tiny_backbone, tmp_path, content):
    train = tmp_path / "triplets.csv"
    train.write_text(content, encoding="utf-8")
    cfg = supervised(tmp_path, tiny_backbone, train, ["q", "pos", "neg"], loss="mnrl")
    config = tmp_path / "config.yaml"
    config.write_text(cfg.to_yaml())
    done = subprocess.run(
        [sys.executable, "-m", "sentlab.cli", "train", str(config), "--quiet"], capture_output=True, text=True
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "triplets.csv" in lines[0], done.stderr


def test_settings_that_would_do_nothing_are_refused(tiny_backbone, tmp_path):
    from types import SimpleNamespace

    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 2])
    scored = ["question", "answer", "grade"]
    for columns, section, message in [
        (["question", "answer"], {"loss": "mnrl", "score_range": [0, 5]}, "supervised.score_range: .* reads no scores"),
        (scored, {"loss": "cosent", "format": "stsb"}, "data.columns: .* supervised.format stsb has its own columns"),
        ([], {"loss": "cosent", "format": "stsb", "split": "dev"}, "supervised.split: .* sts-<split>.csv"),
    ]:
        with pytest.raises(ValueError, match=message):
            supervised(tmp_path, tiny_backbone, train, columns, **section)
    stated = {"loss": "cosine-mse", "score_range": [0, 5]}
    cfg = supervised(tmp_path, tiny_backbone, train, scored, **stated)  # dumped and read back (as sentlab.train does)
    cfg = type(cfg).model_validate(cfg.to_tree())
    assert len(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()) == 2
    cfg = supervised(tmp_path, tiny_backbone, train, [], loss="cosent", format="stsb")
    cfg.train.no_duplicates = True  # a method whose rows are drawn as they are read (RSE's negatives)
    drawn = SimpleNamespace(in_batch_negatives=True, rows_drawn_on_read=True, training_arguments=dict)
    with pytest.raises(ConfigError, match="draws a row's negative as the row is read"):
        engine.no_duplicates(cfg, drawn)


def test_a_supervised_run_defaults_to_the_start_models_length_and_the_users_dev_task(tiny_backbone, tmp_path):
    """Unset, model.max_seq_length is the start model's own (not the shared 32) and eval.dev_task is
    none (the data is the user's, not STS-B's); each set is kept."""
    from sentlab.encoders.loading import inference_max_seq_length
    from sentlab.methods import validate_config

    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 2])
    tree = {
        "method": "supervised",
        "model": {"name": str(tiny_backbone), "pooler": "mean"},
        "data": {"train": str(train), "columns": ["question", "answer"]},
        "train": {"output_dir": str(tmp_path / "run")},
        "supervised": {"loss": "mnrl"},
    }
    cfg = validate_config(tree)
    assert cfg.model.max_seq_length == inference_max_seq_length(tiny_backbone) != 32
    assert cfg.eval.dev_task == "none"
    tree["model"]["max_seq_length"], tree["eval"] = 32, {"dev_task": "STS-B"}
    cfg = validate_config(tree)
    assert cfg.model.max_seq_length == 32 and cfg.eval.dev_task == "STS-B"


def test_the_fingerprint_leaves_out_the_keys_added_since_the_release_at_their_defaults(tiny_backbone, tmp_path):
    from sentlab.training.run_folder import run_fingerprint

    train = scored_jsonl(tmp_path / "pairs.jsonl", [1, 2])
    cfg = supervised(tmp_path, tiny_backbone, train, ["question", "answer"], loss="mnrl")
    tree = cfg.model_dump()
    plain = run_fingerprint(cfg)
    cfg.train.trainer_args = {"max_grad_norm": 0.5}
    assert run_fingerprint(cfg) != plain  # set, it is a setting
    cfg.train.trainer_args = {}
    assert run_fingerprint(cfg) == plain
    from sentlab.training.config import ADDED_SINCE_RELEASE, as_fingerprinted

    written = as_fingerprinted(tree)
    assert all(key.split(".")[1] not in written.get(key.split(".")[0], {}) for key in ADDED_SINCE_RELEASE)
