import pytest

from sentlab.errors import ConfigError
from sentlab.presets import PRESETS_DIR
from sentlab.training.config import load_config

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
