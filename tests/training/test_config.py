import re

import pytest

from sentlab.errors import ConfigError
from sentlab.methods import load_config, validate_config
from sentlab.presets import PRESETS_DIR

BASE = """method: simcse-unsup
model:
  name: minilm
data:
  train: corpus.txt
train:
  output_dir: runs/x
"""


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_and_overrides(tmp_path):
    cfg = load_config(write(tmp_path, BASE), ["train.learning_rate=1e-5", "model.pooler=mean", "data.limit=10"])
    assert cfg.train.learning_rate == 1e-5 and cfg.model.pooler == "mean" and cfg.data.limit == 10
    assert cfg.loss.temperature == 0.05 and cfg.train.batch_size == 64 and cfg.model.max_seq_length == 32


@pytest.mark.parametrize(
    "text, overrides, message",
    [
        (BASE.replace("  output_dir", "  lerning_rate: 1\n  output_dir"), [], "unknown key 'train.lerning_rate'"),
        (BASE.replace("method: simcse-unsup\n", ""), [], "missing required key 'method'"),
        (BASE, ["train.batch_size=0"], "train.batch_size: Input should be greater than 0"),
        (BASE, ["model.pooler=maxx"], "model.pooler"),
        (BASE, ["train.learning_rate"], "expected key=value"),
        ("method: [unclosed", [], "not valid YAML"),
        (BASE, ["train.max_steps=0"], r"^--set train.max_steps=0: train.max_steps: must be at least 1, or -1"),
        (
            BASE.replace("  output_dir", "  max_steps: -5\n  output_dir"),
            [],
            r"c.yaml: train.max_steps: must be at least 1",
        ),
        # a misspelt --set key is the option's error, not the file's, with the nearest key
        (
            BASE,
            ["train.learnig_rate=1e-5"],
            r"^--set train.learnig_rate=1e-5: unknown key 'train.learnig_rate' "
            r"\(did you mean 'train.learning_rate'\?\)$",
        ),
        (BASE, ["trian.batch_size=8"], r"^--set trian.batch_size=8: unknown key 'trian' \(did you mean 'train'\?\)"),
        (
            BASE.replace("  output_dir", "  lerning_rate: 1\n  output_dir"),
            ["train.batch_size=8"],
            r"c.yaml: unknown key",
        ),
    ],
)
def test_invalid_configs_give_one_line_errors(tmp_path, text, overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_config(write(tmp_path, text), overrides)
    assert "\n" not in str(err.value)


def test_a_folder_given_as_the_config_says_so(tmp_path):
    with pytest.raises(ConfigError, match="is a folder; give a YAML config file"):
        load_config(tmp_path)


def test_presets_are_valid():

    presets = sorted(PRESETS_DIR.glob("*.yaml"))
    assert len(presets) >= 3
    for preset in presets:
        load_config(preset)


def test_a_saved_preset_reads_back_as_the_same_config(tmp_path):
    """``to_yaml`` leaves out what the method does not read, so the run folder's config and the model
    card's ``sentlab_config.yaml`` load again (the refusal below would otherwise fire on them)."""
    for preset in sorted(PRESETS_DIR.glob("*.yaml")):
        cfg = load_config(preset)
        again = load_config(write(tmp_path, cfg.to_yaml()))
        assert again.model_dump() == cfg.model_dump(), preset.name


def test_every_key_a_method_does_not_read_is_refused_naming_what_it_reads(tmp_path):
    """One mechanism for every method: each registered config's ``not_read`` keys (a whole section, or
    one key of it), set in a config file or by --set, are one-line errors that name the method and
    what it reads instead; the same keys under a method that reads them load."""
    from sentlab.methods import installed_methods
    from sentlab.training.config import METHOD_REFUSES, TrainConfig

    sections = {"loss": {"temperature": "0.1", "hard_negative_weight": "0.5"}, "data": {"train": "t.txt"}}
    sections["data"]["columns"] = "[text]"
    sections["model"] = {"mlp_only_train": "true"}
    sections["train"] = {"mini_batch_size": "4", "matryoshka_dims": "[8]"}
    sections["model"]["adapter"] = "{rank: 4}"
    checked = set()
    for method, config_class in installed_methods().items():
        if config_class.__module__.split(".")[0] != "sentlab":
            continue
        preset = next((p for p in sorted(PRESETS_DIR.glob("*.yaml")) if load_config(p).method == method), None)
        if preset is None:
            continue
        for dotted, instead in {**config_class.not_read, **METHOD_REFUSES[method]}.items():
            section, _, key = dotted.partition(".")
            key = key or next(iter(sections[section]))
            option = f"--set {section}.{key}={sections[section][key]}"
            with pytest.raises(
                ConfigError,
                match=rf"^{re.escape(option)}: {section}.{key}: method {method} does not read it; {re.escape(instead)}$",
            ):
                load_config(preset, [option.removeprefix("--set ")])
            assert instead
            checked.add((method, dotted))
    no_mlp = {"bert-flow", "ct", "mlm", "supervised", "tsdae"}  # no SimCSE MLP on [CLS]
    assert checked == {
        *((m, "loss") for m in ("bert-flow", "mlm", "tsdae")),
        *(
            (m, "loss.hard_negative_weight")
            for m in ("simcse-unsup", "rankcse", "rankencoder", "rse", "ct", "supervised")
        ),
        ("rse", "data.train"),
        ("rse", "data.columns"),
        *((m, "model.mlp_only_train") for m in no_mlp),
        *((m, "train.mini_batch_size") for m in ("bert-flow", "ct", "mlm", "tsdae")),  # a loss row by row
        *((m, "train.matryoshka_dims") for m in ("bert-flow", "ct", "mlm", "tsdae", "rse")),  # not of directions
        *((m, "model.adapter") for m in ("bert-flow", "ct", "mlm", "tsdae", "rse", "rankencoder")),
    }
    assert "loss" not in TrainConfig.not_read  # the methods that read it take it
    load_config(write(tmp_path, BASE + "loss:\n  temperature: 0.1\n"))


def test_the_keys_a_config_idles_under_some_settings_are_the_ones_the_reference_lists():
    """Each key a method's unread() adds under some settings is in its idle_when (the configuration
    reference lists them), shown here on configs that idle every one of them."""
    from sentlab.training.config import METHOD_REFUSES

    base = {"model": {"name": "minilm"}, "data": {"train": "t.csv"}, "train": {"output_dir": "r"}}
    cases = [
        {"method": "supervised", "supervised": {"format": "stsb", "loss": "cosine-mse"}},
        {"method": "supervised", "supervised": {"loss": "mnrl"}},
        {"method": "supervised", "supervised": {"loss": "TripletLoss"}},
        {"method": "simcse-sup", "data": {"train": "t.csv", "columns": ["a", "b"]}},
    ]
    seen: dict[str, set[str]] = {}
    for case in cases:
        cfg = validate_config({**base, **case})
        added = set(cfg.unread()) - set(type(cfg).not_read) - set(METHOD_REFUSES[cfg.method])
        assert added <= set(type(cfg).idle_when), (case, added - set(type(cfg).idle_when))
        seen.setdefault(case["method"], set()).update(added)
    shared = {"model.prompt_template", "data.sampler"}  # without pooler: prompt, without data.sets
    assert seen == {
        "supervised": {
            "supervised.split",
            "eval.dev_limit",  # a supervised run selects on no dev task unless it names one
            "loss.temperature",
            "supervised.score_range",
            "supervised.teacher",
            "supervised.teacher_setting",
            "supervised.projection_init",
            "data.columns",
            "train.mini_batch_size",
            "train.matryoshka_dims",
            *shared,
        },
        # its pooler is not cls; training prompts and several sets are the supervised method's
        "simcse-sup": {"loss.hard_negative_weight", "model.mlp_only_train", "data.prompts", "data.sets", *shared},
    }


def test_a_whole_dump_and_a_changed_setting_load_again_but_a_changed_idle_key_does_not():
    """Only a value that differs from the default is refused: a config dumped whole (a run folder's
    config.yaml of an earlier version, model_dump()) loads again, and so does one whose other settings
    now idle a key it holds at its default; the same key at another value is refused."""

    tree = {
        "method": "supervised",
        "model": {"name": "minilm"},
        "data": {"train": "t.csv", "columns": ["a", "b", "s"]},
        "train": {"output_dir": "r"},
        "supervised": {"loss": "cosent"},
    }
    dumped = validate_config(tree).model_dump()  # loss.hard_negative_weight 0.0, score_range None, ...
    assert validate_config(dumped).supervised.loss == "cosent"
    dumped["supervised"]["loss"] = "mnrl"  # score_range (None) is idle now: its default passes
    assert validate_config(dumped).supervised.loss == "mnrl"
    dumped["loss"]["hard_negative_weight"] = 0.1  # a value the method would ignore
    with pytest.raises(ValueError, match="loss.hard_negative_weight: method supervised does not read it"):
        validate_config(dumped)
