"""``sentlab push``: upload a saved model folder to the Hugging Face Hub (or another hub at
``$HF_ENDPOINT``) through ``huggingface_hub``; the card uploaded names the repository in its usage
code (the folder's own README.md is not changed)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

PLACEHOLDER = "sentence_transformers_model_id"  # sentence-transformers' card names the model so until it has an id
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


ADAPTER_WEIGHTS = "adapter_model.safetensors"


def check_folder(folder: Path) -> None:
    """A sentence-transformers folder with weights (or a LoRA adapter whose base the hub resolves), or a
    one-line error."""
    from sentlab.encoders.adapters import adapter_base
    from sentlab.errors import DataError
    from sentlab.training.model_card import hub_base

    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder")
    if not (folder / "modules.json").is_file():
        raise DataError(f"{folder}: not a saved sentence-transformers model (no modules.json)")
    base = adapter_base(folder)
    if base is not None:
        if not (folder / ADAPTER_WEIGHTS).is_file():
            raise DataError(f"{folder}: a LoRA adapter without its weights ({ADAPTER_WEIGHTS}); nothing to push")
        if hub_base(base) is None:
            raise DataError(
                f"{folder}: a LoRA adapter over the local folder {base}, which nobody loading it from the hub "
                f"has; push full weights instead: sentlab merge-adapter --model {folder} --output MERGED, "
                "then sentlab push MERGED REPO_ID"
            )
    elif not any(path.name in WEIGHTS for path in folder.rglob("*")):
        raise DataError(f"{folder}: no model weights (model.safetensors) in it; nothing to push")


def check_destination(repo_id: str) -> None:
    """A repository id the hub takes, and the hub reachable by setting, or a one-line error (asked
    before anything is trained or uploaded)."""
    from huggingface_hub import get_token
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from sentlab.errors import ConfigError

    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ConfigError(f"{repo_id!r}: a repository id is NAMESPACE/NAME")
    try:
        validate_repo_id(repo_id)  # the hub's own rule for names (characters, "--", "..", length)
    except HFValidationError as err:
        raise ConfigError(f"{repo_id!r}: not a repository id the hub takes ({str(err).splitlines()[0]})") from None
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        raise ConfigError("HF_HUB_OFFLINE is set: pushing needs the hub (unset it for this command)")
    if get_token() is None:
        raise ConfigError("no hub token: set HF_TOKEN or run `hf auth login` before pushing")


def push_folder(folder: Path, repo_id: str, private: bool = False, message: str = "model trained with sentlab") -> str:
    """Upload ``folder`` to ``repo_id`` (created if missing) in one commit: the weights and every file
    of the folder (not its checkpoints or lock files) with the card naming the repository, so a
    failed upload leaves the repository as it was, never weights without their card; returns the
    commit's address."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.utils import filter_repo_objects

    from sentlab.progress import say
    from sentlab.training.model_card import hub_base

    check_folder(folder)
    check_destination(repo_id)
    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    say(f"pushing {folder} to {api.endpoint}/{repo_id}")
    api.create_repo(repo_id, private=True if private else None, exist_ok=True)  # None: the account default
    files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    operations = []
    skip = ["checkpoint-*/**", "*.lock", "*.inuse", ".*.tmp", ".*.partial*", ".git/**", ".cache/huggingface/**"]
    for name in filter_repo_objects(files, ignore_patterns=skip):
        if name == "README.md":  # the card's usage code names the repository; the folder is left as it is
            text = (folder / name).read_text("utf-8").replace(PLACEHOLDER, repo_id)
            operations.append(CommitOperationAdd(name, text.encode()))
        elif name == "adapter_config.json":  # the base by its hub id (check_folder found one), not a local path
            config = json.loads((folder / name).read_text("utf-8"))
            config["base_model_name_or_path"] = hub_base(config["base_model_name_or_path"])
            operations.append(CommitOperationAdd(name, (json.dumps(config, indent=2) + "\n").encode()))
        else:
            operations.append(CommitOperationAdd(name, str(folder / name)))
    commit = api.create_commit(repo_id=repo_id, operations=operations, commit_message=message)
    return commit.commit_url


def cmd_push(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    url = push_folder(folder, args.repo_id, args.private, args.message)
    print(f"pushed {folder} to {args.repo_id}: {url}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "push",
        help="upload a saved model folder to the Hugging Face Hub (token: $HF_TOKEN or `hf auth login`; "
        "another hub: $HF_ENDPOINT)",
    )
    p.add_argument("folder", help="a saved model folder (e.g. runs/NAME/model)")
    p.add_argument("repo_id", help="NAMESPACE/NAME on the hub; created if it does not exist")
    p.add_argument("--private", action="store_true", help="create the repository private")
    p.add_argument("--message", default="model trained with sentlab", help="the commit message")
    p.set_defaults(func=cmd_push)
