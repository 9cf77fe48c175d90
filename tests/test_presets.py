"""Presets as package data found by name, their data through the data folder, ``sentlab data``
downloads against a local stand-in of the hub, and an installed wheel used from outside the checkout."""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from sentlab.cli import main
from sentlab.data.sources import SOURCES, source_of, wikipedia_sentences
from sentlab.methods import load_config
from sentlab.presets import PRESETS_DIR, list_presets, resolve_config
from tests.conftest import the_error

ROOT = Path(__file__).resolve().parents[1]


def test_every_preset_is_listed_loads_by_name_and_names_known_data(tmp_path):
    presets = list_presets()
    files = [p for p in PRESETS_DIR.rglob("*.yaml") if "method:" in p.read_text("utf-8")]
    assert len(presets) == len(files) >= 40
    for preset in presets:
        cfg = load_config(preset.name, [f"data.data_dir={tmp_path}"])
        assert cfg.about is not None and cfg.about.summary, preset.name
        assert preset.hardware in ("cpu", "gpu") and not preset.run_on_gpu
        for path in cfg._data_paths:  # every data path lands in the data folder, in a known data set
            assert path.is_relative_to(tmp_path) and source_of(path.relative_to(tmp_path)) is not None, path
        assert all(name in SOURCES for name in preset.data), preset
        assert preset.data == cfg.data_sets()  # the listing's reading of the YAML agrees with the config's


def test_presets_command_lists_and_shows(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "simcse-unsup-minilm-cpu" in out and "rse-useb-bert-base" in out and "miniature/" not in out
    assert main(["presets", "--all", "--hardware", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "miniature/simcse" in out and "bert-base" not in out
    assert main(["presets", "show", "simcse-unsup-minilm-cpu"]) == 0
    assert capsys.readouterr().out == (PRESETS_DIR / "simcse-unsup-minilm-cpu.yaml").read_text("utf-8")
    assert main(["presets", "show", "no-such-preset"]) == 2
    assert "no preset of that name" in the_error(capsys.readouterr().err)


def test_a_file_wins_over_a_preset_and_unknown_names_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_config("simcse-unsup-minilm-cpu") == PRESETS_DIR / "simcse-unsup-minilm-cpu.yaml"
    assert resolve_config("configs/simcse-unsup-minilm-cpu.yaml") == PRESETS_DIR / "simcse-unsup-minilm-cpu.yaml"
    own = tmp_path / "simcse-unsup-minilm-cpu"
    own.write_text("method: simcse-unsup\n", encoding="utf-8")
    assert resolve_config("simcse-unsup-minilm-cpu").resolve() == own
    with pytest.raises(Exception, match="no such config file and no preset of that name"):
        load_config("nothing-like-this")


def test_missing_data_names_its_set_and_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["train", "simcse-unsup-minilm-cpu", "--data-dir", str(tmp_path / "data"), "--quiet"]
    assert main(argv) == 2
    error = the_error(capsys.readouterr().err)
    assert "wikipedia/wiki_sentences.txt: not found; it is part of 'wikipedia'" in error
    assert "`sentlab data download wikipedia`" in error and "--data-dir / $SENTLAB_DATA" in error
    assert not (tmp_path / "runs").exists()  # nothing written before the check


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "missing required key 'method'"),
        ("method: [\n", "not valid YAML"),
        ("method: simcse-unsup\nmodel: {name: minilm}\n", "missing required key 'data'"),
    ],
)
def test_data_download_for_a_bad_config_is_a_one_line_error(tmp_path, capsys, text, message):
    config = tmp_path / "my.yaml"
    config.write_text(text, encoding="utf-8")
    assert main(["data", "download", "--preset", str(config), "--data-dir", str(tmp_path / "data")]) == 2
    assert message in the_error(capsys.readouterr().err)
    assert not (tmp_path / "data").exists()


def test_a_config_object_keeps_its_data_check_unless_an_override_replaces_the_path(
    tmp_path, tiny_backbone, corpus_file
):
    import sentlab

    cfg = load_config("simcse-unsup-minilm-cpu", [f"data.data_dir={tmp_path / 'empty'}"])
    with pytest.raises(sentlab.SentlabError, match="it is part of 'wikipedia'"):
        sentlab.train(cfg, train={"output_dir": str(tmp_path / "run")})
    assert not (tmp_path / "run").exists()  # refused before anything is written
    run = sentlab.train(  # the override replaces the missing file: nothing left to refuse
        cfg,
        evaluate=False,
        data={"train": str(corpus_file), "limit": None},
        model={"name": str(tiny_backbone), "max_seq_length": 16},
        train={"output_dir": str(tmp_path / "run"), "max_steps": 1, "batch_size": 8, "progress_bar": False},
        eval={"dev_task": "none"},
    )
    assert (run.model_path / "modules.json").is_file()


class HubRequests(http.server.BaseHTTPRequestHandler):
    """A local HTTP stand-in of the hub's file endpoint (``/datasets/REPO/resolve/REVISION/FILE``, the
    headers ``hf_hub_download`` reads), serving the files of ``self.server.folder``; with
    ``self.server.fail`` every request is a 404 (a 5xx would be retried with back-off for tens of seconds)."""

    def _answer(self) -> bytes:
        self.server.asked.append(self.path)
        path = self.server.folder / self.path.split("/resolve/", 1)[-1].split("/", 1)[-1]
        if self.server.fail or not path.is_file():
            self.send_response(404)
            self.end_headers()
            return b""
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("X-Repo-Commit", "0" * 40)
        self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return data

    def do_HEAD(self):
        self._answer()

    def do_GET(self):
        self.wfile.write(self._answer())

    def log_message(self, *args):
        pass


@pytest.fixture
def local_hub(tmp_path, hub_files, monkeypatch):
    """sentlab's real ``Hub`` pointed at a local HTTP server that serves ``hub_files``; the STS sets
    (``datasets.load_dataset``) come from a fake split function. Returns the server."""
    import huggingface_hub.constants

    import sentlab.data.sources as sources

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubRequests)
    server.folder, server.fail, server.asked = hub_files, False, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the tests run offline

    class LocalHub(sources.Hub):
        def dataset(self, name: str, split: str):
            server.asked.append(f"{name}:{split}")
            if server.fail:
                raise ConnectionError("no network")
            n = {"train": 3, "validation": 2, "test": 4}[split]
            return {
                "sentence1": [f"s{i}" for i in range(n)],
                "sentence2": [f"t{i}" for i in range(n)],
                "score": [float(i) for i in range(n)],
            }

    endpoint = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setattr(sources, "Hub", lambda: LocalHub(endpoint=endpoint, cache_dir=tmp_path / "hf-cache"))
    yield server
    server.shutdown()


@pytest.fixture
def hub_files(tmp_path) -> Path:
    folder = tmp_path / "hub"
    folder.mkdir()
    lines = [
        "one two three four five",
        "one two three four five",
        "too short",
        " ".join(["w"] * 61),
        "six seven eight nine ten eleven",
        "a b c d e f g",
    ]
    (folder / "wiki1m_for_simcse.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "nli_for_simcse.csv").write_text("sent0,sent1,hard_neg\na,b,c\n", encoding="utf-8")
    return folder


def test_data_download_fetches_a_presets_data_from_the_hub(tmp_path, hub_files, local_hub, capsys):
    data = tmp_path / "data"
    assert main(["data", "download", "--preset", "simcse-unsup-minilm-cpu", "--data-dir", str(data)]) == 0
    text = (data / "wikipedia/wiki_sentences.txt").read_text("utf-8").splitlines()
    assert sorted(text) == sorted(wikipedia_sentences((hub_files / "wiki1m_for_simcse.txt").read_text().splitlines()))
    assert sorted(text) == ["a b c d e f g", "one two three four five", "six seven eight nine ten eleven"]
    assert (data / "senteval/downstream/STS/STSBenchmark/sts-dev.csv").is_file()
    assert "/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt" in local_hub.asked
    assert not list(data.rglob("*.part")) and not list(data.glob(".sts-download-*"))
    load_config("simcse-unsup-minilm-cpu", [f"data.data_dir={data}"]).require_data()
    capsys.readouterr()
    assert main(["data", "list", "--data-dir", str(data)]) == 0
    listing = capsys.readouterr().out
    assert "wikipedia       present" in listing and "wiki1m          present" in listing


def test_failed_download_leaves_nothing_that_reads_as_complete(tmp_path, local_hub, capsys):
    local_hub.fail = True
    data = tmp_path / "data"
    assert main(["data", "download", "sts", "wiki1m", "--data-dir", str(data)]) == 2
    assert "mteb/sts12-sts: could not load from the hub (ConnectionError: no network)" in the_error(
        capsys.readouterr().err
    )
    assert main(["data", "download", "wiki1m", "--data-dir", str(data)]) == 2
    assert "wiki1m: download failed (" in the_error(capsys.readouterr().err)
    assert not [p for p in data.rglob("*") if p.is_file()]
    assert main(["data", "download", "snli", "--data-dir", str(data)]) == 2
    assert "sentlab cannot download it" in the_error(capsys.readouterr().err)


@pytest.mark.slow
def test_installed_wheel_trains_a_preset_by_name_from_an_unrelated_folder(tmp_path, tiny_backbone, corpus_file):
    """Build the wheel, install it into a fresh virtual environment (the dependencies come from this
    interpreter's site-packages: no network), and from a folder that is not the checkout list the
    presets and train one by name for 2 steps on a tiny model, its data read through --data-dir."""
    import shutil
    import zipfile

    dist, venv, elsewhere = tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    source = tmp_path / "source"  # a clean copy: no build/ folder of an earlier build leaks into the wheel
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(source)],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("sentlab-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "sentlab/presets/simcse-unsup-minilm-cpu.yaml" in names and "sentlab/cli/__init__.py" in names
    assert not any(name.startswith(("tests/", "build/")) for name in names)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True
    )
    elsewhere.mkdir()
    data = tmp_path / "data"
    (data / "wikipedia").mkdir(parents=True)
    (data / "wikipedia/wiki_sentences.txt").write_bytes(corpus_file.read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SENTLAB_DATA")}
    env["HF_HUB_OFFLINE"] = "1"

    def sentlab(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(venv / "bin" / "sentlab"), *argv], cwd=elsewhere, env=env, capture_output=True, text=True
        )

    where = subprocess.run(
        [python, "-c", "import sentlab, sys; print(sentlab.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the installed wheel, not the checkout
    listed = sentlab("presets")
    assert listed.returncode == 0 and "simcse-unsup-minilm-cpu" in listed.stdout, listed.stderr
    shown = sentlab("presets", "show", "rse-minilm-cpu")
    assert yaml.safe_load(shown.stdout)["method"] == "rse"
    run = sentlab(
        "train",
        "simcse-unsup-minilm-cpu",
        "--data-dir",
        str(data),
        "--quiet",
        "--no-eval",
        "--set",
        f"model.name={tiny_backbone}",
        "--set",
        "model.max_seq_length=16",
        "--set",
        "train.max_steps=2",
        "--set",
        "train.batch_size=8",
        "--set",
        "data.limit=64",
        "--set",
        "eval.dev_task=none",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert (elsewhere / "runs/simcse-unsup-minilm-cpu/model/modules.json").is_file()
    config = yaml.safe_load((elsewhere / "runs/simcse-unsup-minilm-cpu/config.yaml").read_text("utf-8"))
    assert config["data"]["train"] == str(data / "wikipedia/wiki_sentences.txt")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["presets", "--all", "show", "rse-minilm-cpu"], "`sentlab presets show NAME` takes neither"),
        (["data", "download", "sts", "--target", "a", "--data-dir", "b"], "give --target or --data-dir, not both"),
    ],
)
def test_options_that_would_do_nothing_are_refused(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in the_error(capsys.readouterr().err)
    assert not list(tmp_path.iterdir())


def test_the_catalogue_and_the_fetchers_agree():
    """A set the catalogue calls downloadable has a fetcher, and every fetcher belongs to such a set."""
    from sentlab.data.sources import FETCHERS

    assert set(FETCHERS) == {name for name, source in SOURCES.items() if source.fetchable}
