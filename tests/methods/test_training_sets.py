"""Several named training sets (``data.sets``): a ``DatasetDict`` that sentence-transformers batches a
set at a time with its multi-dataset samplers (``data.sampler``), each set read and checked as
``data.train`` is, its data in the run's fingerprint."""

from __future__ import annotations

import json

import pytest

from sentlab.errors import ConfigError, DataError
from sentlab.training import engine
from sentlab.training.run_folder import run_fingerprint
from tests.methods.test_baselines import method_config


def pairs(path, first_word: str, rows: int):
    words = ["man", "dog", "cat", "boy", "girl", "car", "tree", "bird"]
    path.write_text(
        "".join(
            json.dumps({"q": f"{first_word} {words[i % 8]} runs", "p": f"{first_word} {words[i % 8]} is running"})
            + "\n"
            for i in range(rows)
        ),
        encoding="utf-8",
    )
    return path


def config(tmp_path, sets, **data):
    return method_config(
        "supervised",
        tmp_path / "backbone",
        "",
        tmp_path / "run",
        section={"supervised": {"loss": "mnrl"}},
        data={"sets": sets, **data},
        max_steps=4,
        batch_size=4,
    )


@pytest.fixture
def two_sets(tiny_backbone, tmp_path):
    import shutil

    shutil.copytree(tiny_backbone, tmp_path / "backbone")
    return {
        "red": {"train": str(pairs(tmp_path / "a.jsonl", "a", 12)), "columns": {"anchor": "q", "positive": "p"}},
        "blue": {"train": str(pairs(tmp_path / "b.jsonl", "the", 8)), "columns": ["q", "p"]},
    }


def first_words(trainer) -> list[set[str]]:
    """The first word of every anchor, batch by batch, as the trainer's data loader gives them."""
    tokens = trainer.model.tokenizer.convert_ids_to_tokens
    return [{tokens(ids.tolist())[1] for ids in batch["anchor_input_ids"]} for batch in trainer.get_train_dataloader()]


def test_a_batch_comes_from_one_set_and_round_robin_takes_them_in_turn(two_sets, tmp_path):
    trainer = engine.build_trainer(config(tmp_path, two_sets, sampler="round_robin"), engine.RunPaths(tmp_path / "r"))
    batches = first_words(trainer)
    assert all(len(words) == 1 for words in batches)  # no batch mixes the sets
    assert [next(iter(w)) for w in batches] == ["a", "the", "a", "the"]  # a batch of each in turn, 8 rows the least
    trainer = engine.build_trainer(config(tmp_path, two_sets), engine.RunPaths(tmp_path / "p"))
    batches = first_words(trainer)
    assert sorted(next(iter(w)) for w in batches) == ["a", "a", "a", "the", "the"]  # proportional: every row once
    paths = engine.train(config(tmp_path, two_sets), evaluate=False)
    assert "`red, blue`" in (paths.model / "README.md").read_text()


def test_each_sets_data_is_in_the_fingerprint_and_bad_sets_are_one_line(two_sets, tmp_path):
    before = run_fingerprint(config(tmp_path, two_sets))["train_sha256"]
    pairs(tmp_path / "b.jsonl", "the", 9)
    assert run_fingerprint(config(tmp_path, two_sets))["train_sha256"] != before
    small = {**two_sets, "blue": {**two_sets["blue"], "limit": 3}}
    with pytest.raises(
        DataError, match=r"data.sets.blue \(.*b.jsonl\): 3 usable training row\(s\), fewer than one batch"
    ):
        engine.build_trainer(config(tmp_path, small), engine.RunPaths(tmp_path / "r"))
    other = {**two_sets, "blue": {**two_sets["blue"], "columns": ["q"]}}
    with pytest.raises(ConfigError, match="data.sets.blue.columns: supervised.loss mnrl needs"):
        engine.build_trainer(config(tmp_path, other), engine.RunPaths(tmp_path / "r"))
    with pytest.raises(ValueError, match="data.sets: 'anchor' is a column's name; call the set otherwise"):
        config(tmp_path, {"anchor": two_sets["red"]})
    with pytest.raises(ValueError, match="data.sets.red: data.split: read for a datasets folder"):
        config(tmp_path, {"red": {**two_sets["red"], "split": "test"}})
    with pytest.raises(ValueError, match="data.train and data.sets: give one"):
        config(tmp_path, two_sets, train=two_sets["red"]["train"])
    with pytest.raises(ValueError, match="data.columns: with data.sets, each set has its own columns"):
        config(tmp_path, two_sets, columns=["q", "p"])
    with pytest.raises(ValueError, match="data.sampler: method supervised does not read it"):
        method_config(
            "supervised",
            tmp_path / "backbone",
            two_sets["red"]["train"],
            tmp_path / "run",
            section={"supervised": {"loss": "mnrl"}},
            data={"columns": ["q", "p"], "sampler": "round_robin"},
        )


def test_a_dumped_sets_config_loads_back_unchanged(two_sets, tmp_path):
    """The run's config.yaml of a data.sets run (its data keys that each set holds, at their defaults)
    reads back as the same settings: a resume or the card's Reproduce sees no setting changed."""
    import yaml

    from sentlab.methods import validate_config
    from sentlab.training.run_folder import changed_settings

    cfg = config(tmp_path, two_sets)
    again = validate_config(yaml.safe_load(cfg.to_yaml()))
    assert again.to_tree() == cfg.to_tree() and changed_settings(cfg.model_dump(), again.model_dump()) == []
    whole = cfg.model_dump(mode="json")  # every key written, a set's keys at their defaults at the top too
    whole["data"].update(columns=[], limit=None, split=None, subset=None)
    assert validate_config(whole).to_tree() == cfg.to_tree()


def test_auto_chunks_count_the_columns_of_the_sets(two_sets, tmp_path):
    """train.mini_batch_size: auto sizes its chunks by the sequences a row embeds: two for pairs, three
    once a set has a negative (not data.columns' default of three, which is empty under data.sets)."""
    from sentlab.methods import get_method

    cfg = config(tmp_path, two_sets)
    assert get_method("supervised")(cfg, engine.RunPaths(tmp_path / "r")).batch_columns == 2
    triples = tmp_path / "t.jsonl"
    triples.write_text("".join(json.dumps({"q": "a", "p": "b", "n": "c"}) + "\n" for _ in range(8)), encoding="utf-8")
    negative = {**two_sets, "blue": {"train": str(triples), "columns": ["q", "p", "n"]}}
    cfg = config(tmp_path, negative)
    assert get_method("supervised")(cfg, engine.RunPaths(tmp_path / "r")).batch_columns == 3
