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


def config(tmp_path, sets, train_args=None, **data):
    return method_config(
        "supervised",
        tmp_path / "backbone",
        "",
        tmp_path / "run",
        section={"supervised": {"loss": "mnrl"}},
        data={"sets": sets, **data},
        **{"max_steps": 4, "batch_size": 4, **(train_args or {})},
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


def scored(path, rows: int):
    """Scored pairs on a 0-5 scale (``a``, ``b``, ``s``)."""
    words = ["man", "dog", "cat", "boy", "girl", "car", "tree", "bird"]
    path.write_text(
        "".join(
            json.dumps({"a": f"a {words[i % 8]} sits", "b": f"the {words[(i + 1) % 8]} sits", "s": i % 6}) + "\n"
            for i in range(rows)
        ),
        encoding="utf-8",
    )
    return path


def labelled(path, rows: int):
    """Pairs with a class of three (``a``, ``b``, ``l``), for SoftmaxLoss."""
    path.write_text(
        "".join(json.dumps({"a": f"x {i} runs", "b": f"y {i} runs", "l": i % 3}) + "\n" for i in range(rows)),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def mixed(two_sets, tmp_path):
    """Pairs under supervised.loss (mnrl) and scored pairs under a loss of their own (cosent)."""
    return {
        "red": two_sets["red"],
        "blue": {
            "train": str(scored(tmp_path / "s.jsonl", 8)),
            "columns": {"text1": "a", "text2": "b", "score": "s"},
            "loss": "cosent",
            "score_range": [0, 5],
        },
    }


def test_each_set_trains_with_its_own_loss_and_a_batch_goes_to_its_sets_loss(mixed, tmp_path):
    cfg = config(tmp_path, mixed, sampler="round_robin")
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "r"))
    assert {n: type(loss).__name__ for n, loss in trainer.loss.items()} == {
        "red": "MultipleNegativesRankingLoss",
        "blue": "CoSENTLoss",
    }
    assert trainer.own_loss["blue"] is trainer.loss["blue"]  # sentlab's callbacks read the trainer's own modules
    calls = []
    for name, loss in trainer.loss.items():  # each batch's loss, in the order the trainer calls them
        forward = loss.forward
        loss.forward = lambda *a, _n=name, _f=forward, **k: (calls.append(_n), _f(*a, **k))[1]
    trainer.train()
    assert calls == ["red", "blue", "red", "blue"]  # round robin: one batch of each set, each to its own loss
    paths = engine.train(config(tmp_path, mixed, train_args={"output_dir": str(tmp_path / "run2")}), evaluate=False)
    runtime = json.loads(paths.runtime.read_text())
    assert runtime["chunking"] == {"sets": {"red": None, "blue": None}}


def test_each_sets_loss_passes_every_check_supervised_loss_passes(mixed, two_sets, tmp_path):
    blue = mixed["blue"]
    cases = [
        ({**blue, "loss": "MSELoss", "score_range": None}, r"data.sets.blue.teacher: MSELoss learns a teacher"),
        ({**blue, "loss": "cosine-mse", "score_range": None}, r"data.sets.blue.score_range: cosine-mse regresses"),
        (
            {**two_sets["blue"], "score_range": [0, 1]},
            r"data.sets.blue.score_range: supervised.loss mnrl reads no scores",
        ),
        ({**blue, "score_range": [5, 0]}, r"data.sets.blue.score_range: needs low < high"),
        ({**blue, "loss": "NoSuchLoss"}, r"data.sets.blue.loss NoSuchLoss: not a sentence-transformers loss"),
        ({**blue, "loss_args": {"margin": 1}}, r"data.sets.blue.loss_args.margin: CoSENTLoss takes no"),
        ({**blue, "loss_args": {"scale": 30}}, r"data.sets.blue.loss_args.scale: a loss's scale is loss.temperature"),
        (
            {**blue, "format": "stsb", "loss": "cosent", "score_range": None, "columns": ["a", "b", "s"]},
            r"data.sets.blue.columns: supervised.format stsb has its own columns; unset it",
        ),
        ({**blue, "loss": "BatchAllTripletLoss", "score_range": None}, r"GroupByLabelBatchSampler.*two runs"),
    ]
    for part, message in cases:
        with pytest.raises(ValueError, match=message):
            config(tmp_path, {"red": mixed["red"], "blue": part})
    soft = {"train": str(labelled(tmp_path / "l.jsonl", 9)), "columns": {"text1": "a", "text2": "b", "label": "l"}}
    soft["loss"], soft["loss_args"] = "SoftmaxLoss", {"num_labels": 3}
    with pytest.raises(ValueError, match=r"train.matryoshka_dims: .*data.sets.blue's loss cannot"):
        config(tmp_path, {"red": mixed["red"], "blue": soft}, train_args={"matryoshka_dims": [16, 8]})
    # a key of supervised that every set replaces is idle, and refused as any idle key is
    own = {k: v for k, v in blue.items() if k != "loss"}
    for loss, sets, message in [
        ("cosent", {"blue": blue, "green": blue}, "supervised.loss: .*every set of data.sets names its own loss"),
        ("cosent", {"blue": own, "green": own}, "supervised.score_range: .*every set of data.sets gives its own"),
    ]:
        with pytest.raises(ValueError, match=message):
            method_config(
                "supervised",
                tmp_path / "backbone",
                "",
                tmp_path / "run",
                section={"supervised": {"loss": loss, "score_range": [0, 5]}},
                data={"sets": sets},
            )
    # an inherited key names the set it failed for
    with pytest.raises(ValueError, match=r"data.sets.red: supervised.teacher: MSELoss learns"):
        method_config(
            "supervised",
            tmp_path / "backbone",
            "",
            tmp_path / "run",
            section={"supervised": {"loss": "MSELoss"}},
            data={"sets": {"red": two_sets["red"], "blue": blue}},
        )
    # what is found while the data is read names the set too: a teacher of another width, a prompt's column
    narrow = tmp_path / "narrow"
    from tests.conftest import make_tiny_backbone

    make_tiny_backbone(narrow, hidden=16)
    teacher = {**two_sets["red"], "loss": "MSELoss", "columns": ["q"], "teacher": str(narrow)}
    with pytest.raises(ConfigError, match=r"data.sets.blue.teacher: its embeddings have 16 dimensions"):
        engine.build_trainer(config(tmp_path, {"red": mixed["red"], "blue": teacher}), engine.RunPaths(tmp_path / "t"))
    with pytest.raises(ConfigError, match=r"data.sets.blue: data.prompts: 'anchor' is not a text column"):
        engine.build_trainer(config(tmp_path, mixed, prompts={"anchor": "dog "}), engine.RunPaths(tmp_path / "t"))
    # no set has in-batch negatives: no_duplicates would do nothing
    both = {"blue": blue, "green": {**blue}}
    with pytest.raises(ConfigError, match="train.no_duplicates: supervised has no in-batch negatives"):
        engine.build_trainer(
            config(tmp_path, both, train_args={"no_duplicates": True}), engine.RunPaths(tmp_path / "r")
        )
    # a chunk size no set's loss reads is refused; one set's loss reads it: that set is chunked, and said
    cosine = {**blue, "loss": "cosine-mse"}
    with pytest.raises(ValueError, match="train.mini_batch_size: method supervised does not read it"):
        config(tmp_path, {"blue": cosine, "green": {**cosine}}, train_args={"mini_batch_size": 2})
    trainer = engine.build_trainer(
        config(tmp_path, {**mixed, "blue": cosine}, train_args={"mini_batch_size": 2}), engine.RunPaths(tmp_path / "c")
    )
    assert trainer.own_loss.chunking == {
        "sets": {
            "red": {"mini_batch_size": 2, "source": "set", "by": "CachedMultipleNegativesRankingLoss"},
            "blue": None,
        }
    }


def test_prompts_per_set_reach_each_sets_batches(mixed, tmp_path):
    sets = {**mixed, "red": {**mixed["red"], "prompts": {"anchor": "dog "}}}
    trainer = engine.build_trainer(config(tmp_path, sets, sampler="round_robin"), engine.RunPaths(tmp_path / "r"))
    assert trainer.data_collator.prompts == {"red": {"anchor": "dog "}, "blue": {}}
    tokens = trainer.model.tokenizer.convert_ids_to_tokens
    firsts = {}
    for batch in trainer.get_train_dataloader():
        column = "anchor_input_ids" if "anchor_input_ids" in batch else "sentence1_input_ids"
        firsts.setdefault(column, tokens(batch[column][0].tolist())[1])
    assert firsts == {"anchor_input_ids": "dog", "sentence1_input_ids": "a"}
    paths = engine.train(config(tmp_path, sets, train_args={"output_dir": str(tmp_path / "run2")}), evaluate=False)
    saved = json.loads((paths.model / "config_sentence_transformers.json").read_text())["prompts"]
    assert saved["query"] == "dog " and saved["document"] == ""  # the one set of anchors: its prompts


def test_a_set_that_gives_its_loss_keys_at_supervised_values_shares_the_one_loss(two_sets, tmp_path):
    """A set's key equal to what it would take from supervised changes nothing: one loss (one SoftmaxLoss
    classifier) for both sets, its state named as a single loss's."""
    from sentlab.training.callbacks import loss_only_state

    soft = {"train": str(labelled(tmp_path / "l.jsonl", 9)), "columns": {"text1": "a", "text2": "b", "label": "l"}}
    sets = {"one": soft, "two": {**soft, "format": "table", "loss_args": {"num_labels": 3}}}
    cfg = method_config(
        "supervised",
        tmp_path / "backbone",
        "",
        tmp_path / "run",
        section={"supervised": {"loss": "SoftmaxLoss", "loss_args": {"num_labels": 3}}},
        data={"sets": sets},
        max_steps=2,
        batch_size=4,
    )
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "r"))
    assert sorted(loss_only_state(trainer.own_loss, trainer.model)) == ["classifier.bias", "classifier.weight"]
    assert not isinstance(trainer.loss, dict)


def test_a_sets_loss_state_resumes_and_a_guide_is_never_saved(two_sets, tmp_path):
    """SoftmaxLoss's classifier is the one trainable state beside the model: a checkpoint holds it under
    the set's name, a resume restores it; GISTEmbed's guide, read only, is in no checkpoint."""
    from sentlab.training.callbacks import loss_only_state, restore_loss_state

    soft = {"train": str(labelled(tmp_path / "l.jsonl", 9)), "columns": {"text1": "a", "text2": "b", "label": "l"}}
    soft["loss"], soft["loss_args"] = "SoftmaxLoss", {"num_labels": 3}
    gist = {**two_sets["red"], "loss": "GISTEmbedLoss", "loss_args": {"guide": str(tmp_path / "backbone")}}
    cfg = config(tmp_path, {"red": gist, "blue": soft}, train_args={"save_steps": 2})
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "r"))
    state = loss_only_state(trainer.own_loss, trainer.model)
    assert sorted(state) == ["blue.classifier.bias", "blue.classifier.weight"]
    changed = {k: v + 1 for k, v in state.items()}
    restore_loss_state(trainer.own_loss, changed)
    assert all((loss_only_state(trainer.own_loss, trainer.model)[k] == v).all() for k, v in changed.items())

    import shutil

    import torch
    from safetensors.torch import load_file

    whole = engine.train(cfg, evaluate=False)
    last = whole.checkpoints / "checkpoint-4"
    uninterrupted = load_file(str(last / "loss_state.safetensors"))
    assert sorted(uninterrupted) == ["blue.classifier.bias", "blue.classifier.weight"]
    assert any(not torch.equal(uninterrupted[k], state[k]) for k in state)  # training moved the classifier
    shutil.rmtree(last)  # killed after step 2's checkpoint
    resumed = load_file(
        str(engine.train(cfg, resume=True, evaluate=False).checkpoints / "checkpoint-4" / "loss_state.safetensors")
    )
    for name, tensor in uninterrupted.items():  # the same steps on the same device: equal up to float noise
        torch.testing.assert_close(resumed[name], tensor, atol=1e-5, rtol=0)


def test_a_dumped_config_with_a_loss_per_set_loads_back_and_names_each_sets_teacher(mixed, tmp_path):
    import yaml

    from sentlab.methods import validate_config
    from sentlab.training.run_folder import changed_settings, named_models

    teacher = {**mixed["red"], "loss": "MSELoss", "columns": ["q"], "teacher": str(tmp_path / "backbone")}
    cfg = config(tmp_path, {**mixed, "green": teacher})
    again = validate_config(yaml.safe_load(cfg.to_yaml()))
    assert again.to_tree() == cfg.to_tree() and changed_settings(cfg.model_dump(), again.model_dump()) == []
    assert validate_config(cfg.model_dump(mode="json")).to_tree() == cfg.to_tree()
    assert named_models(cfg)["data.sets.green.teacher"] == str(tmp_path / "backbone")
    before = run_fingerprint(cfg)["models_sha256"]["data.sets.green.teacher"]
    (tmp_path / "backbone" / "extra.txt").write_text("another model's file")
    assert run_fingerprint(cfg)["models_sha256"]["data.sets.green.teacher"] != before


def test_every_sets_teacher_labels_in_supervised_teacher_setting(mixed, tmp_path):
    """supervised.teacher_setting reaches a set whose own loss reads a teacher (the set names its loss, yet
    the setting is every teacher's); with no set that reads a teacher, the key is refused in one line."""
    pytest.importorskip("onnxruntime")
    from sentlab.methods.supervised import Supervised

    teacher = {**mixed["red"], "loss": "MSELoss", "columns": ["q"], "teacher": str(tmp_path / "backbone")}
    section = {"supervised": {"loss": "mnrl", "teacher_setting": "onnx int8"}}

    def build(sets):
        return method_config(
            "supervised", tmp_path / "backbone", "", tmp_path / "run", section=section, data={"sets": sets}, max_steps=4
        )

    method = Supervised(build({**mixed, "green": teacher}), engine.RunPaths(tmp_path / "run"))
    method.train_dataset()
    assert method.set_method("green").labelling["setting"] == "onnx int8"
    with pytest.raises(ValueError, match="supervised.teacher_setting.*no teacher labels the rows"):
        build(mixed)
