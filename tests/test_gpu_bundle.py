"""The GPU check's bundle (scripts/gpu_bundle.py): what it holds and its size limit. The full bundle
needs network (its wheels); ``--tiny`` holds the data and the record only, which this checks offline.
The check itself (benchmarks/gpu/check.sh) runs in CI with --tiny (.ci/run)."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def bundle(dest: Path, data: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "scripts" / "gpu_bundle.py"), "--tiny", "--dest", str(dest)]
    return subprocess.run([*command, "--data-dir", str(data), *extra], capture_output=True, text=True, timeout=300)


def test_the_tiny_bundle_records_what_it_holds(tmp_path, data_dir):
    done = bundle(tmp_path / "b", data_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert record["wikipedia_lines"] == 2000 and record["bytes"]["with_checkout"] <= record["bytes"]["limit"]
    assert {"data/sts.tar.xz", "data/wiki_sentences.txt.xz", "data/data.json"} <= set(record["files"])
    with lzma.open(tmp_path / "b" / "data" / "wiki_sentences.txt.xz", "rt", encoding="utf-8") as text:
        assert len(text.read().splitlines()) == 2000
    assert record["versions"]["transformers"] and record["versions"]["sentence-transformers"]


def test_a_bundle_over_the_limit_is_refused_in_one_line_and_removed(tmp_path, data_dir):
    done = bundle(tmp_path / "b", data_dir, "--limit-mib", "1")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "exceeds 1 MiB" in errors[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "b").exists()


def load_script(path: Path, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_bundle_script():
    return load_script(ROOT / "scripts" / "gpu_bundle.py", "gpu_bundle")


def load_check_script():
    return load_script(ROOT / "benchmarks" / "gpu" / "check.py", "gpu_check")


def test_a_copy_without_git_is_checked_against_the_bundle_file_by_file(tmp_path, data_dir):
    """The documented copy (a tar of git ls-files and .gpu) has no .git: the bundle's record of every
    tracked file's sha256 is what a node compares its copy with, so a copy from another checkout, or
    a file changed since the bundle was built, is refused."""
    import shutil

    done = bundle(tmp_path / "b", data_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    built = json.loads((tmp_path / "b" / "bundle.json").read_text())["checkout"]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert set(built) == {name for name in tracked if (ROOT / name).is_file()}
    copy = tmp_path / "copy"  # the tar of git ls-files: no .git
    for name in built:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, copy / name)
    check = load_check_script()
    assert check.checkout_differences(tmp_path / "b", copy) == []
    (copy / "benchmarks" / "record.py").write_text("# changed on the node\n")
    (copy / "README.md").unlink()
    assert check.checkout_differences(tmp_path / "b", copy) == ["README.md missing", "benchmarks/record.py differs"]


def test_tiny_data_is_a_few_items_a_task_from_the_data_folder(tmp_path, data_dir):
    """--tiny reads a copy cut to a few lines a file: STS inputs and gold scores stay aligned, SICK keeps
    its header, CQADupStack keeps a few queries a forum with their relevant titles, and sentlab's
    loaders read it."""
    from sentlab.data.sts import load_sts_task
    from sentlab.data.useb import load_cqadupstack

    check = load_check_script()
    tiny = check.tiny_data(data_dir, tmp_path)
    wiki = (tiny / "wikipedia" / "wiki_sentences.txt").read_text().splitlines()
    assert len(wiki) == check.TINY_LINES
    for task in ("STS12", "STS-B", "SICK-R"):
        pairs = load_sts_task(task, str(tiny))
        assert 0 < len(pairs.scores) <= 5 * check.TINY_PAIRS and len(pairs.sentences1) == len(pairs.scores)
    forums = load_cqadupstack(tiny / "useb" / "data-eval" / "cqadupstack")
    assert forums and all(len(f.queries) == check.TINY_QUERIES for f in forums.values())
    assert check.tiny_data(data_dir, tmp_path) == tiny  # made once, then reused


def test_the_install_part_fails_when_pip_check_finds_a_missing_requirement(tmp_path, monkeypatch):
    """What the image lacks shows on the node: an install whose ``pip check`` fails (a requirement of
    sentlab neither in the image nor carried) fails the install part, with pip's first line."""
    import argparse

    check = load_check_script()
    ran = []

    def fake_run(command, timeout, env=None, cwd=None):
        ran.append(command[3] if len(command) > 3 else command[-1])
        if command[3:4] == ["check"]:
            return {"exit_code": 1, "tail": ["sentlab 0.1.0 requires faiss-cpu, which is not installed."]}
        return {"exit_code": 0}

    monkeypatch.setattr(check, "run", fake_run)
    (tmp_path / "wheels").mkdir()
    args = argparse.Namespace(bundle=tmp_path)
    record: dict = {}
    with pytest.raises(RuntimeError, match="pip check failed: sentlab 0.1.0 requires faiss-cpu"):
        check.install_bundle(args, record)
    assert ran == ["install", "check"]
    monkeypatch.setattr(check, "run", lambda command, timeout, env=None, cwd=None: {"exit_code": 0})
    check.install_bundle(args, {})  # everything there: no error


def test_the_raw_lm_rows_carry_a_null_score_through(tmp_path, monkeypatch):
    """A record writes a non-finite score (the rank correlation of a tiny model's tied scores) as null;
    claim-a's table keeps it null instead of failing on it (the check failed this way at tiny sizes)."""
    from benchmarks.studies import rawlm_simcse

    report = {
        "summary": {"sts_avg": 50.123, "note": "text"},
        "tasks": {
            "STS12": {"spearman": 53.234},
            "STS13-ranking": {"kcc": None, "ndcg": None},
            "STS-B-ranking": {"kcc": 55.561, "ndcg": 99.741},
            "MR": {"main_metric": "accuracy", "scores": {"accuracy": None}},
        },
    }
    monkeypatch.setattr(rawlm_simcse, "common_scores", lambda *args: report)
    row = rawlm_simcse.scores(tmp_path / "model", "mean", tmp_path / "out.json")
    assert row == {
        "sts_avg": 50.12,
        "tasks": {
            "STS12": 53.23,
            "STS13-ranking": {"kcc": None, "ndcg": None},
            "STS-B-ranking": {"kcc": 55.56, "ndcg": 99.74},
            "MR": None,
        },
    }
