"""Training prompts (``data.prompts``): sentence-transformers' prompts put before a column's texts in
every batch, from the config or the start model's own query / document prompts; recorded in the run
folder and on the card, and kept as the saved model's prompts."""

from __future__ import annotations

import json

import pytest

from sentlab.encoders import build_encoder, load_encoder
from sentlab.errors import ConfigError
from sentlab.training import engine
from tests.methods.test_baselines import method_config

ROWS = [("a man plays guitar", "the man is playing music"), ("a dog runs", "the dog is running")] * 8


def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"q": q, "p": p, "n": "a cat sits"}) + "\n" for q, p in ROWS), encoding="utf-8")
    return path


def config(tmp_path, start, prompts=..., pooler="mean", columns=None, **data):
    extra = {} if prompts is ... else {"prompts": prompts}
    data = {"columns": columns or {"anchor": "q", "positive": "p"}, **data}
    return method_config(
        "supervised",
        start,
        pairs_file(tmp_path),
        tmp_path / "run",
        pooler=pooler,
        section={"supervised": {"loss": "mnrl"}},
        data={**data, **extra},
        max_steps=2,
        batch_size=4,
    )


def first_tokens(trainer, column: str, count: int) -> list[str]:
    """The first ``count`` tokens after [CLS] of ``column`` in a batch the trainer's collator builds."""
    batch = trainer.data_collator([trainer.train_dataset[0]])
    ids = batch[f"{column}_input_ids"][0].tolist()
    return trainer.model.tokenizer.convert_ids_to_tokens(ids)[1 : 1 + count]


def test_prompts_reach_the_batches_the_record_the_card_and_the_saved_model(tiny_backbone, tmp_path):
    cfg = config(tmp_path, tiny_backbone, {"q": "the dog :", "positive": "a cat :"})  # by file name and by role
    trainer = engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))
    assert first_tokens(trainer, "anchor", 3) == ["the", "dog", ":"]
    assert first_tokens(trainer, "positive", 3) == ["a", "cat", ":"]
    paths = engine.train(cfg, evaluate=False)
    assert json.loads(paths.runtime.read_text())["prompts"] == {"anchor": "the dog :", "positive": "a cat :"}
    assert "**Prompts** in training: anchor `the dog :`, positive `a cat :`" in (paths.model / "README.md").read_text()
    saved = load_encoder(paths.model)
    assert saved.prompts["query"] == "the dog :" and saved.prompts["document"] == "a cat :"


def test_a_negative_takes_the_positives_prompt_and_the_saved_model_keeps_exactly_what_trained(tiny_backbone, tmp_path):
    triplets = {"anchor": "q", "positive": "p", "negative": "n"}
    trainer = engine.build_trainer(
        config(tmp_path, tiny_backbone, {"anchor": "the dog :", "positive": "a cat :"}, columns=triplets),
        engine.RunPaths(tmp_path / "r1"),
    )
    assert trainer.data_collator.prompts == {"anchor": "the dog :", "positive": "a cat :", "negative": "a cat :"}
    model = build_encoder(str(tiny_backbone), "mean")
    model.prompts = {"query": "the dog :", "passage": "a cat :"}
    model.save(str(tmp_path / "start"))
    paths = engine.train(config(tmp_path, tmp_path / "start", prompts={}, pooler=None))  # trained without prompts
    saved = load_encoder(paths.model)
    assert not saved.prompts.get("query") and not saved.prompts.get("document") and "passage" not in saved.prompts


def test_the_start_models_own_prompts_are_the_default_and_none_turns_them_off(tiny_backbone, tmp_path):
    model = build_encoder(str(tiny_backbone), "mean")
    model.prompts = {"query": "the dog :", "passage": "a cat :"}  # e5's names
    model.save(str(tmp_path / "start"))
    trainer = engine.build_trainer(config(tmp_path, tmp_path / "start", pooler=None), engine.RunPaths(tmp_path / "r1"))
    assert trainer.data_collator.prompts == {"anchor": "the dog :", "positive": "a cat :"}
    assert first_tokens(trainer, "positive", 3) == ["a", "cat", ":"]
    trainer = engine.build_trainer(
        config(tmp_path, tmp_path / "start", prompts={}, pooler=None), engine.RunPaths(tmp_path / "r2")
    )
    assert not trainer.data_collator.prompts
    assert first_tokens(trainer, "anchor", 1) == ["a"]  # "a man plays guitar", unprompted


def test_bad_prompts_are_one_line(tiny_backbone, corpus_file, tmp_path):
    cfg = config(tmp_path, tiny_backbone, {"question": "q :"})
    with pytest.raises(ConfigError, match="data.prompts: 'question' is not a text column of the training table"):
        engine.build_trainer(cfg, engine.RunPaths(tmp_path / "run"))
    with pytest.raises(ValueError, match="data.prompts: method simcse-unsup does not read it"):
        method_config("simcse-unsup", tiny_backbone, corpus_file, tmp_path / "r", data={"prompts": "q :"})
    with pytest.raises(ValueError, match="prompts: sentlab.s own setting is data.prompts"):
        method_config(
            "supervised",
            tiny_backbone,
            pairs_file(tmp_path),
            tmp_path / "r",
            section={"supervised": {"loss": "mnrl"}},
            data={"columns": ["q", "p"]},
            trainer_args={"prompts": "q :"},
        )
