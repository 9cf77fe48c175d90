"""The offline install (docs/guides/operations.md): scripts/wheelhouse.py plans binary wheels for the
target's Python and every platform it installs, with torch left to the cluster; every requirement of
sentlab is pinned (so it is in the wheelhouse); sentlab's own wheel builds offline with its package data.
The real download and install is ``scripts/offline_install.py`` (network), whose recorded run the
guide gives."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
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


def test_the_download_asks_for_every_platform_the_target_installs():
    """pip matches --platform exactly: a glibc 2.28 target must also ask for manylinux_2_17 /
    manylinux2014 wheels (what hf-xet 1.8.0 publishes), or they are not found."""
    script = wheelhouse_script()
    download = script.commands(Path("wh"), "3.12", "manylinux_2_28_x86_64", ROOT / "constraints.txt")[1]
    platforms = [download[i + 1] for i, flag in enumerate(download) if flag == "--platform"]
    assert platforms[0] == "manylinux_2_28_x86_64"
    assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"} <= set(platforms)
    assert "manylinux_2_29_x86_64" not in platforms
    assert script.compatible_platforms("macosx_11_0_arm64") == ["macosx_11_0_arm64"]


def _requirement_closure(names: list[str], skip: set[str]) -> set[str]:
    """The installed distributions ``names`` need, transitively (markers evaluated for this Python)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [(name, extras) for name, extras in names]
    while todo:
        name, extras = todo.pop()
        key = name.lower().replace("_", "-")
        if key in skip or (key, extras) in seen:
            continue
        seen.add((key, extras))
        try:
            needed = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in needed:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
                todo.append((req.name, frozenset(req.extras)))
    return {name for name, _ in seen}


def test_every_requirement_of_sentlab_is_in_the_wheelhouse_but_torch_s_own():
    """The wheelhouse is constraints.txt without torch: every distribution sentlab[minilm,test] needs
    (transitively) is pinned there, save torch and what torch itself requires (the node's torch brings
    those). A requirement missing from constraints.txt would be missing from the wheelhouse."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    torch_own = {"torch"} | {
        Requirement(r).name.lower().replace("_", "-") for r in requires("torch") if "extra" not in r
    }
    needed = _requirement_closure([("sentlab", frozenset({"minilm", "test"}))], skip=torch_own)
    pinned = {wheelhouse_script().name_of(p) for p in wheelhouse_script().pins(ROOT / "constraints.txt")}
    assert needed - pinned - {"sentlab"} == set()


@pytest.mark.slow
def test_sentlab_s_own_wheel_builds_offline_and_carries_its_package_data(tmp_path):
    """The wheel the wheelhouse holds: built without network, installed alone (no dependencies) into an
    empty folder, it carries the presets (package data) the installed command lists."""
    house, target = tmp_path / "house", tmp_path / "target"
    pip = [sys.executable, "-m", "pip", "--isolated"]
    subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--wheel-dir", str(house), str(ROOT)], check=True
    )
    done = subprocess.run(
        [
            *pip,
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--target",
            str(target),
            "--find-links",
            str(house),
            "sentlab",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    code = "import sentlab, sentlab.presets as p; print(sentlab.__file__); print(len(p.list_presets()))"
    env = {"PATH": "", "PYTHONPATH": str(target), "HF_HUB_OFFLINE": "1"}  # the installed copy, not the checkout
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    where, count = ran.stdout.split()
    assert where.startswith(str(target)) and int(count) >= 30, ran.stderr[-2000:]
