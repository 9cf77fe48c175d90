"""The offline install (docs/guides/operations.md): scripts/wheelhouse.py plans binary wheels for the
target's Python and platform with torch left to the cluster, and sentlab installs from a wheelhouse
with pip's --no-index, its requirements met by what is already installed (torch from the cluster)."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def wheelhouse_script():
    spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "scripts" / "wheelhouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TARGET = ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"]


def test_the_plan_is_binary_wheels_for_the_target_without_torch(tmp_path, capsys):
    script = wheelhouse_script()
    assert script.main([*TARGET, "--dest", str(tmp_path / "wh"), "--dry-run"]) == 0
    planned = [shlex.split(line) for line in capsys.readouterr().out.splitlines()]
    own, download, source = planned
    assert own[-5:] == ["wheel", "--no-deps", "--wheel-dir", str(tmp_path / "wh"), str(ROOT)]
    for flag in ["--no-deps", "--only-binary=:all:", "--python-version", "3.12", "--platform"]:
        assert flag in download
    assert download[-1] == str(tmp_path / "wh" / "requirements.txt")
    assert source[-1].startswith("normflows==")  # no wheel on PyPI: built from its sdist
    assert not (tmp_path / "wh").exists()  # a dry run writes nothing


def test_the_wheelhouse_pins_every_version_but_torch(tmp_path, monkeypatch):
    script = wheelhouse_script()
    ran = []
    monkeypatch.setattr(
        script.subprocess, "run", lambda command: ran.append(command) or subprocess.CompletedProcess(command, 0)
    )
    assert script.main([*TARGET, "--dest", str(tmp_path)]) == 0
    assert len(ran) == 3
    pinned = script.pins(ROOT / "constraints.txt")
    kept = (tmp_path / "constraints.txt").read_text().split()
    wheels = (tmp_path / "requirements.txt").read_text().split()
    assert "torch==2.13.0" in pinned and not any(p.startswith("torch==") for p in kept + wheels)
    assert len(kept) == len(pinned) - 1 and "transformers==5.23.0" in wheels
    assert not any(p.startswith("normflows==") for p in wheels) and any(p.startswith("normflows==") for p in kept)


def test_a_missing_constraints_file_is_one_line(tmp_path, capsys):
    assert wheelhouse_script().main([*TARGET, "--constraints", str(tmp_path / "nope.txt")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.txt'}: no such constraints file\n"


@pytest.mark.slow
def test_sentlab_installs_from_a_wheelhouse_with_no_index(tmp_path):
    """sentlab's wheel, built offline, installed with --no-index into an environment that has the
    dependencies (as a cluster has its torch): pip resolves every requirement of sentlab[minilm,test]
    without an index, and the installed package (not this checkout) runs with its presets."""
    house = tmp_path / "wheelhouse"
    pip = ["-m", "pip", "--isolated"]  # no user or environment pip settings (find-links, index)
    subprocess.run(
        [
            sys.executable,
            *pip,
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(house),
            str(ROOT),
        ],
        check=True,
    )
    kept = [p for p in wheelhouse_script().pins(ROOT / "constraints.txt") if not p.startswith("torch==")]
    (house / "constraints.txt").write_text("\n".join(kept) + "\n")
    env_dir = tmp_path / "env"
    venv.create(env_dir, system_site_packages=True, with_pip=False)  # the running pip, through the system site
    python = str(env_dir / "bin" / "python")
    offline = [python, *pip, "install", "--no-index", "--find-links", str(house)]
    subprocess.run([*offline, "-q", "--no-deps", "--force-reinstall", "sentlab"], check=True)
    done = subprocess.run(
        [*offline, "-c", str(house / "constraints.txt"), "sentlab[minilm,test]"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # no index is consulted: what is neither installed nor in the wheelhouse is not found
    missing = subprocess.run([*offline, "sentlab-no-such-package"], capture_output=True, text=True)
    assert missing.returncode != 0 and "No matching distribution" in missing.stderr
    where = subprocess.run(
        [python, "-c", "import sentlab; print(sentlab.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert where.stdout.strip().startswith(str(env_dir))
    presets = subprocess.run(
        [str(env_dir / "bin" / "sentlab"), "presets"], capture_output=True, text=True, cwd=tmp_path
    )
    assert presets.returncode == 0 and "simcse-unsup-minilm-cpu" in presets.stdout
