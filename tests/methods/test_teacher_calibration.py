"""An int8-static teacher calibrates on the data folder of the run or command that loads it: supervised's
and RankCSE's ``data.data_dir``, ``distill-static --data-dir``. Each caller's ``load_teacher`` is
replaced by one that records the folder and loads the teacher in torch fp32 (the export itself is
tested in tests/encoders/test_backends.py)."""

from __future__ import annotations

import json

import pytest

from sentlab.methods import base
from sentlab.methods.supervised import Supervised
from sentlab.training import engine
from tests.methods.test_baselines import method_config
from tests.training.test_rankcse_engine import rankcse_config


@pytest.fixture
def seen(monkeypatch):
    """The data folder each teacher was loaded with, in order."""
    folders = []
    real = base.load_teacher

    def recorded(name, setting, trust_remote_code, data_dir=None):
        from sentlab.rank.index import encoder_fingerprint

        folders.append(None if data_dir is None else str(data_dir))
        model = real(name, "torch fp32", trust_remote_code)
        # as accelerate marks an int8-static model: its fingerprint and its calibration's digest
        digest, weights = f"calibrated on {data_dir}", encoder_fingerprint(model)
        model.sentlab_inference = {"backend": "torch", "precision": "fp32", "calibration_sha256": digest}
        model.sentlab_inference["fingerprint"] = weights + digest
        return model

    for module in ("sentlab.methods.base", "sentlab.methods.supervised", "sentlab.methods.rankcse"):
        monkeypatch.setattr(f"{module}.load_teacher", recorded)
    return folders


def test_supervised_labels_with_the_runs_data_folder(tiny_backbone, tmp_path, seen):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"t": f"sentence {i}"}) + "\n" for i in range(8)))
    section = {
        "supervised": {"loss": "MSELoss", "teacher": str(tiny_backbone), "teacher_setting": "openvino int8-static"}
    }
    data = {"columns": ["t"], "data_dir": str(tmp_path / "data")}
    cfg = method_config("supervised", tiny_backbone, rows, tmp_path / "run", section=section, data=data, max_steps=1)
    (tmp_path / "run").mkdir()
    Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    assert seen == [str(tmp_path / "data")]
    labelled = json.loads((tmp_path / "run" / "teacher_labels.json").read_text())
    assert labelled["calibration_sha256"] == f"calibrated on {tmp_path / 'data'}"  # what ran, recorded


def test_rankcse_encodes_its_teachers_with_the_runs_data_folder(tiny_backbone, corpus_file, tmp_path, seen):
    cfg = rankcse_config(
        tiny_backbone, [tiny_backbone], corpus_file, tmp_path / "run", {"teacher_setting": "openvino int8-static"}
    )
    cfg = cfg.model_copy(update={"data": cfg.data.model_copy(update={"data_dir": str(tmp_path / "data")})})
    method = base.get_method("rankcse")(cfg, engine.RunPaths(tmp_path / "run"))
    method.prepare(method.train_dataset())
    assert seen == [str(tmp_path / "data")]


@pytest.mark.slow  # all-MiniLM-L6-v2 distilled and trained for a step (about half a minute)
def test_distill_static_labels_with_its_data_dir(corpus_file, tmp_path, seen):
    pytest.importorskip("model2vec")
    from sentlab.cli import main

    argv = ["distill-static", "--model", "minilm", "--corpus", str(corpus_file), "--train", "--quiet"]
    argv += ["--label-backend", "openvino", "--label-precision", "int8-static", "--data-dir", str(tmp_path / "d")]
    assert main([*argv, "--output", str(tmp_path / "student"), "--no-cache"]) == 0
    assert seen == [str(tmp_path / "d")]
    labels = json.loads((tmp_path / "student" / "distill.json").read_text())["labels"]
    assert labels["calibration_sha256"] == f"calibrated on {tmp_path / 'd'}"
