"""Crash-safe checkpoints: kill -9 at points inside a checkpoint's save, then --resume finishes with the
weights of an uninterrupted run; damaged or incomplete checkpoints are named and skipped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sentlab.cli import main
from sentlab.training import engine
from sentlab.training.checkpoints import COMPLETE_MARKER, checkpoint_problem, mark_complete, newest_complete_checkpoint
from tests.conftest import subprocess_env, the_error, tiny_config

ROOT = Path(__file__).resolve().parents[2]
PROBE = ["a man plays the guitar", "the dog runs in the park", "a girl reads a book"]
# (kill point inside the save of checkpoint-4, the checkpoint --resume must continue from)
KILL_POINTS = [
    ("weights-half", 2),
    ("before-optimizer", 2),
    ("optimizer-half", 2),
    ("trainer-state-half", 2),
    ("before-marker", 2),
    ("marker-half", 2),
    ("after-marker", 4),
]


def write_config(backbone, corpus, out: Path, config_path: Path) -> Path:
    cfg = tiny_config(backbone, corpus, out, max_steps=6, save_steps=2, save_total_limit=1)
    config_path.write_text(cfg.to_yaml(), encoding="utf-8")
    return config_path


@pytest.mark.slow
def test_kill_9_inside_a_save_then_resume_gives_the_uninterrupted_weights(tiny_backbone, corpus_file, tmp_path, capsys):
    full = engine.train(
        tiny_config(tiny_backbone, corpus_file, tmp_path / "full", max_steps=6, save_steps=2), evaluate=False
    )
    expected = SentenceTransformer(str(full.model)).encode(PROBE)
    env = subprocess_env(OMP_NUM_THREADS="1")
    runs = {}
    for point, _ in KILL_POINTS:  # all killed runs at once: each is mostly interpreter start-up
        config = write_config(tiny_backbone, corpus_file, tmp_path / point, tmp_path / f"{point}.yaml")
        runs[point] = (
            config,
            subprocess.Popen(
                [sys.executable, "-m", "tests.training.crash_worker", str(config), point, "4"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            ),
        )
    for point, resumed_from in KILL_POINTS:
        config, process = runs[point]
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == -9, f"{point}: exit {process.returncode}: {stderr.decode()[-500:]}"
        checkpoints = tmp_path / point / "checkpoints"
        # save_total_limit 1: the old checkpoint is deleted only once the new one is complete
        assert (checkpoints / "checkpoint-2" / COMPLETE_MARKER).is_file() == (resumed_from == 2), point

        capsys.readouterr()
        assert main(["train", str(config), "--resume", "--no-eval"]) == 0
        said = capsys.readouterr().err
        assert f"resuming from checkpoint-{resumed_from}" in said, point
        if resumed_from == 2:
            assert "skipping checkpoint-4: " in said, point
        # the same float32 steps from the same saved state; 1e-5 absorbs only a BLAS that is not
        # bit-reproducible across thread counts (the killed run used 1), a wrong resume moves ~lr = 5e-4 a step
        got = SentenceTransformer(str(tmp_path / point / "model")).encode(PROBE)
        np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=point)
        metrics = [json.loads(line) for line in (tmp_path / point / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in metrics if "loss" in r] == [1, 2, 3, 4, 5, 6], point
        assert [p.name for p in sorted(checkpoints.iterdir())] == ["checkpoint-6"], point  # the limit holds


def test_an_incomplete_or_damaged_checkpoint_is_named_and_skipped(tiny_backbone, corpus_file, tmp_path, capsys):
    paths = engine.train(
        tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=4, save_steps=2, save_total_limit=None),
        evaluate=False,
    )
    first, second = paths.checkpoints / "checkpoint-2", paths.checkpoints / "checkpoint-4"
    assert checkpoint_problem(first) is None and checkpoint_problem(second) is None

    weights = max(second.glob("*.safetensors"), key=lambda p: p.stat().st_size)
    data = weights.read_bytes()
    weights.write_bytes(data[:-100])
    assert "model.safetensors has" in checkpoint_problem(second)
    assert newest_complete_checkpoint(paths.checkpoints) == (first, [(second, checkpoint_problem(second))])

    (second / "trainer_state.json").unlink()
    weights.write_bytes(data)
    assert checkpoint_problem(second) == "trainer_state.json is missing"
    (second / COMPLETE_MARKER).unlink()
    assert "not marked complete" in checkpoint_problem(second)

    mark_complete(first, 2)
    (first / COMPLETE_MARKER).write_text("{", encoding="utf-8")
    assert "unreadable" in checkpoint_problem(first)
    capsys.readouterr()
    resumed = engine.resume_point(paths)  # nothing complete: both named, removed, training from step 0
    assert resumed is None
    said = capsys.readouterr().err
    assert "skipping checkpoint-4: not marked complete" in said and "skipping checkpoint-2: its" in said
    assert not first.exists() and not second.exists()


def test_a_damaged_model_folder_is_one_line_naming_the_file(tiny_backbone, corpus_file, tmp_path, capsys):
    import shutil

    paths = engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=1), evaluate=False)
    weights = next(paths.model.rglob("model.safetensors"))
    weights.write_bytes(weights.read_bytes()[:1000])
    assert (
        main(
            [
                "encode",
                "--model",
                str(paths.model),
                "--input",
                str(corpus_file),
                "--output",
                str(tmp_path / "e.npy"),
                "--quiet",
            ]
        )
        == 2
    )
    assert f"{weights}: damaged weights file" in the_error(capsys.readouterr().err)

    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_backbone, pickled)
    (pickled / "model.safetensors").unlink()
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04 not really a pickle")
    assert (
        main(
            [
                "encode",
                "--model",
                str(pickled),
                "--input",
                str(corpus_file),
                "--output",
                str(tmp_path / "e.npy"),
                "--quiet",
            ]
        )
        == 2
    )
    assert "pytorch_model.bin: pickled weights, which sentlab does not load" in the_error(capsys.readouterr().err)
