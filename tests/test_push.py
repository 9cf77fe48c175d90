"""``sentlab push`` against a local stand-in of the hub's upload API (repository creation, the
preupload check, the commit of base64 file contents), so no test touches the network."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

from tests.conftest import the_error, tiny_config

pytestmark = pytest.mark.slow  # each push is a child process of sentlab against a stand-in hub


class StandInHub(BaseHTTPRequestHandler):
    """The three calls ``HfApi.create_repo`` and ``upload_folder`` make, answered as the hub does for
    small files (every file "regular": its bytes travel inside the commit)."""

    repos: dict[str, dict[str, bytes]] = {}
    private: dict[str, bool] = {}
    calls: list[str] = []

    def log_message(self, *args):
        pass

    def _reply(self, body: dict, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        StandInHub.calls.append(self.path)
        host = f"http://{self.headers['Host']}"
        if self.path == "/api/repos/create":
            request = json.loads(body)
            repo = f"{request.get('organization') or 'user'}/{request['name']}"
            self.repos.setdefault(repo, {})
            self.private[repo] = request.get("visibility") == "private"
            return self._reply({"url": f"{host}/{repo}", "name": repo, "id": repo})
        if self.path == "/api/validate-yaml":  # the card's metadata, checked before a README is committed
            return self._reply({"errors": [], "warnings": []})
        parts = self.path.split("?")[0].split("/")  # /api/models/NS/NAME/preupload|commit/REVISION
        if len(parts) < 7:
            return self._reply({"error": f"unknown call {self.path}"}, 404)
        repo, action = f"{parts[3]}/{parts[4]}", parts[5]
        if repo not in self.repos:
            return self._reply({"error": "Repository not found"}, 404)
        if "refused" in repo:  # a repository the token may not write to
            return self._reply({"error": "You don't have the rights to create a model under this namespace"}, 403)
        if action == "preupload":
            files = json.loads(body)["files"]
            found = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None} for f in files]
            return self._reply({"files": found, "commitOid": "0" * 40})
        if action == "commit":
            for line in body.decode().splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    self.repos[repo][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            return self._reply({"commitUrl": f"{host}/{repo}/commit/{'a' * 40}", "commitOid": "a" * 40})
        return self._reply({"error": f"unknown call {self.path}"}, 404)


@pytest.fixture()
def hub():
    StandInHub.repos, StandInHub.private, StandInHub.calls = {}, {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandInHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def push(
    args: list[str], endpoint: str, offline: bool = False, command: str = "push", token: str | None = "hf_standin"
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_TOKEN", "HF_TOKEN_PATH")}
    env |= {"HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_XET": "1", "NO_PROXY": "127.0.0.1"}
    # no token: a hub home of its own with no stored token either
    env |= {"HF_TOKEN": token} if token else {"HF_HOME": tempfile.mkdtemp()}
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "sentlab.cli", command, *args], capture_output=True, text=True, env=env, timeout=120
    )


def saved_model(tiny_backbone: Path, folder: Path) -> Path:
    model = SentenceTransformer(str(tiny_backbone))
    model.save(str(folder))
    return folder


def test_a_saved_folder_is_pushed_whole_and_its_card_names_the_repository(tiny_backbone, tmp_path, hub):
    folder = saved_model(tiny_backbone, tmp_path / "model")
    done = push([str(folder), "me/my-model", "--private"], hub)
    assert done.returncode == 0, (StandInHub.calls, done.stderr[-2000:])
    uploaded = StandInHub.repos["me/my-model"]
    local = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert set(uploaded) == set(local) and "model.safetensors" in uploaded
    assert all(uploaded[name] == local[name] for name in local if name != "README.md")  # byte for byte
    assert b"sentence_transformers_model_id" in local["README.md"]  # the folder's own card is left as it was
    assert StandInHub.private["me/my-model"]
    assert b'SentenceTransformer("me/my-model")' in uploaded["README.md"]  # not the placeholder id
    commits = [call for call in StandInHub.calls if "/commit/" in call]
    assert len(commits) == 1  # weights and card in one commit: a failure cannot leave weights without a card
    assert "pushed" in done.stdout and "me/my-model" in done.stdout


@pytest.mark.parametrize(
    "make, args, message",
    [
        (lambda f: f.mkdir(), ["me/x"], "not a saved sentence-transformers model"),
        (lambda f: (f.mkdir(), (f / "modules.json").write_text("[]")), ["me/x"], "no model weights"),
        (None, ["me/x"], "no such folder"),
        ("model", ["not-a-repo-id"], "a repository id is NAMESPACE/NAME"),
    ],
)
def test_a_folder_that_cannot_be_pushed_is_one_line_and_a_non_zero_exit(
    tiny_backbone, tmp_path, hub, make, args, message
):
    folder = tmp_path / "folder"
    if make == "model":
        saved_model(tiny_backbone, folder)
    elif make is not None:
        make(folder)
    done = push([str(folder), *args], hub)
    assert done.returncode != 0
    assert message in the_error(done.stderr)
    assert StandInHub.repos == {}  # nothing was created


def test_pushing_while_offline_is_refused_in_one_line(tiny_backbone, tmp_path, hub):
    folder = saved_model(tiny_backbone, tmp_path / "model")
    done = push([str(folder), "me/my-model"], hub, offline=True)
    assert done.returncode != 0 and "HF_HUB_OFFLINE is set" in the_error(done.stderr)


def tiny_yaml(backbone: Path, corpus: Path, tmp_path: Path, adapter: bool = False) -> Path:
    """A two-step training config of the tiny model, written as a YAML file (runs into tmp_path/run);
    ``adapter``: a LoRA adapter is trained instead of the weights."""
    import yaml

    config = tmp_path / "tiny.yaml"
    tree = tiny_config(backbone, corpus, tmp_path / "run", max_steps=2, pooler="mean").to_tree()
    if adapter:
        tree["model"]["adapter"] = {"rank": 4, "alpha": 8, "target_modules": ["query", "value"]}
    config.write_text(yaml.safe_dump(tree))
    return config


def test_train_pushes_an_adapter_over_a_local_start_as_merged_weights_and_says_so_first(
    tiny_backbone, corpus_file, tmp_path, hub
):
    """Nobody loading from the hub has the local start model an adapter names: the merged model goes."""
    pytest.importorskip("peft")
    config = tiny_yaml(tiny_backbone, corpus_file, tmp_path, adapter=True)
    done = push([str(config), "--no-eval", "--push-to-hub", "me/lora"], hub, command="train")
    assert done.returncode == 0, (StandInHub.calls, done.stderr[-2000:])
    said = done.stderr
    assert "merged into full weights" in said and said.index("merged into full weights") < said.index("training ")
    uploaded = StandInHub.repos["me/lora"]
    assert "model.safetensors" in uploaded and "adapter_config.json" not in uploaded
    merged = tmp_path / "run" / "merged"
    assert uploaded["model.safetensors"] == (merged / "model.safetensors").read_bytes()
    assert "sentlab_config.yaml" in uploaded  # the card's "Reproduce" names it
    card = uploaded["README.md"].decode()
    assert "A LoRA adapter, not full weights" not in card and "- lora" not in card  # full weights now
    assert "**Full weights**: a LoRA adapter (model) merged into its base" in card
    assert f"pushed {merged}" in done.stdout


def test_an_adapter_folder_is_pushed_only_over_a_base_the_hub_resolves(tiny_backbone, corpus_file, tmp_path, hub):
    pytest.importorskip("peft")
    from sentlab.training import engine

    cfg = yaml_config(tiny_yaml(tiny_backbone, corpus_file, tmp_path, adapter=True))
    model = engine.train(cfg, evaluate=False).model
    done = push([str(model), "me/x"], hub)  # the adapter names the local tiny model
    assert done.returncode != 0 and "sentlab merge-adapter" in the_error(done.stderr)
    assert StandInHub.repos == {}
    adapter = json.loads((model / "adapter_config.json").read_text())
    (model / "adapter_config.json").write_text(json.dumps({**adapter, "base_model_name_or_path": "org/base"}))
    done = push([str(model), "me/x"], hub)
    assert done.returncode == 0, done.stderr[-2000:]
    uploaded = StandInHub.repos["me/x"]
    assert json.loads(uploaded["adapter_config.json"])["base_model_name_or_path"] == "org/base"
    assert "adapter_model.safetensors" in uploaded and "model.safetensors" not in uploaded


def yaml_config(path: Path):
    from sentlab.methods import load_config

    return load_config(str(path))


def test_train_pushes_the_kept_model_once_trained(tiny_backbone, corpus_file, tmp_path, hub):
    config = tiny_yaml(tiny_backbone, corpus_file, tmp_path)
    done = push([str(config), "--no-eval", "--push-to-hub", "me/trained", "--quiet"], hub, command="train")
    assert done.returncode == 0, (StandInHub.calls, done.stderr[-2000:])
    model = tmp_path / "run" / "model"
    uploaded = StandInHub.repos["me/trained"]
    local = {str(p.relative_to(model)): p.read_bytes() for p in model.rglob("*") if p.is_file()}
    assert set(uploaded) == set(local) and uploaded["model.safetensors"] == local["model.safetensors"]
    assert not StandInHub.private["me/trained"]  # the account's default: --private was not given
    assert "pushed" in done.stdout and "me/trained" in done.stdout


@pytest.mark.parametrize(
    "args, offline, token, message",
    [
        (["--push-to-hub", "trained"], False, "hf_standin", "NAMESPACE/NAME"),
        (["--push-to-hub", "me/a--b"], False, "hf_standin", "not a repository id the hub takes"),
        (["--push-to-hub", "me/x"], True, "hf_standin", "OFFLINE"),
        (["--push-to-hub", "me/x"], False, None, "no hub token"),
        (["--private"], False, "hf_standin", "--private applies to --push-to-hub"),
    ],
)
def test_a_push_that_cannot_happen_is_refused_before_training(
    tiny_backbone, corpus_file, tmp_path, hub, args, offline, token, message
):
    config = tiny_yaml(tiny_backbone, corpus_file, tmp_path)
    done = push([str(config), "--no-eval", *args], hub, offline=offline, command="train", token=token)
    assert done.returncode != 0 and message in the_error(done.stderr)
    assert not (tmp_path / "run").exists() and StandInHub.calls == []  # nothing trained, nothing sent


def test_an_upload_that_fails_after_training_keeps_the_model_and_says_how_to_retry(
    tiny_backbone, corpus_file, tmp_path, hub
):
    import shlex

    spaced = tmp_path / "my runs"
    spaced.mkdir()
    config = tiny_yaml(tiny_backbone, corpus_file, spaced)
    done = push([str(config), "--no-eval", "--push-to-hub", "me/refused", "--private"], hub, command="train")
    assert done.returncode != 0
    error = the_error(done.stderr)
    retry = error.split("the model is kept: ", 1)[1]
    assert "the upload failed" in error
    # the retry runs as printed: the path quoted, and --private kept (a retry that creates it keeps it private)
    assert shlex.split(retry) == ["sentlab", "push", str(spaced / "run" / "model"), "me/refused", "--private"]
    assert (spaced / "run" / "model" / "model.safetensors").is_file()
