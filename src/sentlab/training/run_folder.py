"""The files of a run folder; methods add their own names (``Method.run_files``). A finished run is
found again by what it was trained from (:func:`run_fingerprint`, :func:`find_finished_run`), so a
benchmark reuses a raw LM it finds and never trains one again silently."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentlab.paths import json_text, write_text_atomic

RUN_FILES: dict[str, str] = {
    "config": "config.yaml",
    "checkpoints": "checkpoints",
    "metrics": "metrics.jsonl",
    "model": "model",
    "results": "results.json",
    "loss_plot": "loss.png",
    "log": "run.log",
    "fingerprint": "fingerprint.json",
    "start_dev": "start_dev.json",
    "selection": "selection.json",
    "precision": "precision.json",
    "runtime": "runtime.json",
    "start_results": "start_results.json",
}
# settings that change where a run is written or how it reports, not what it learns
NOT_LEARNED = {
    "train": (
        "output_dir",
        "progress_bar",
        "logging_steps",
        "report_to",
        "compile",
        "fused_optimizer",
        "dataloader_workers",
    ),
    "data": ("data_dir",),
    "eval": ("compare_start",),
    "model": ("inference_max_seq_length",),
}


@dataclass(frozen=True)
class RunPaths:
    """Paths inside a run folder by name (``paths.model``, ``paths.base_index``, ...)."""

    root: Path

    def __getattr__(self, name: str) -> Path:
        try:
            return self.root / RUN_FILES[name]
        except KeyError:
            raise AttributeError(name) from None


def add_run_files(files: dict[str, str]) -> None:
    """Register a method's run-folder names; two methods may share a name only for the same file."""
    for name, filename in files.items():
        if RUN_FILES.setdefault(name, filename) != filename:
            raise ValueError(f"run file {name!r} is already {RUN_FILES[name]!r}, not {filename!r}")


def write_json(path: Path, data: Any) -> None:
    """Write whole or not at all (:func:`sentlab.paths.write_text_atomic`)."""
    write_text_atomic(path, json_text(data, indent=2))


def learned_settings(tree: dict[str, Any]) -> dict[str, Any]:
    """A resolved config tree (``cfg.model_dump()`` or a run's ``config.yaml``) without the settings of
    ``NOT_LEARNED``, as plain JSON values."""
    tree = json.loads(json.dumps(tree, default=str))
    tree.pop("about", None)  # a preset's description
    for section, keys in NOT_LEARNED.items():
        for key in keys:
            tree.get(section, {}).pop(key, None)
    return tree


def changed_settings(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The learned settings that differ between two config trees, as ``key: old -> new`` lines."""
    return _differences(learned_settings(before), learned_settings(after), "")


def _differences(before: dict[str, Any], after: dict[str, Any], prefix: str) -> list[str]:
    changes = []
    for key in sorted(set(before) | set(after), key=str):
        old, new = before.get(key), after.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changes += _differences(old, new, f"{prefix}{key}.")
        elif old != new:
            changes.append(f"{prefix}{key}: {old!r} -> {new!r}")
    return changes


def run_fingerprint(cfg) -> dict[str, str]:
    """What a run learns from: a sha256 of its resolved config (without the settings of
    ``NOT_LEARNED``; a key moved since the version before as that version wrote it,
    :func:`~sentlab.training.config.as_fingerprinted`) and the sha256 of its training file."""
    from sentlab.cache import file_sha256
    from sentlab.data.datasets_source import is_datasets_source, open_source, source_identity
    from sentlab.training.config import as_fingerprinted

    tree = as_fingerprinted(learned_settings(cfg.model_dump()), cfg._written)

    def identity(train: str, split: str | None, subset: str | None) -> str:
        if train and is_datasets_source(train):  # the table's own fingerprint
            return source_identity(open_source(train, split, subset))
        return file_sha256(Path(train)) if train and Path(train).is_file() else ""

    sets = cfg.data.sets
    if sets:  # each named set's data, in the config's order (the set names are in the config)
        parts = [f"{name}={identity(part.train, part.split, part.subset)}" for name, part in sets.items()]
        data = hashlib.sha256(";".join(parts).encode()).hexdigest()
    else:
        data = identity(cfg.data.train, cfg.data.split, cfg.data.subset)
    found = {
        "config_sha256": hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest(),
        "train_sha256": data,
    }
    weights = local_models(cfg)
    if weights:  # a local start model, teacher or guide by its files, not its path (a hub id is its name)
        found["models_sha256"] = weights
    settings = {getattr(getattr(cfg, section, None), "teacher_setting", None) for section in ("supervised", "rankcse")}
    if "openvino int8-static" in settings:  # a key that is idle is refused, so this one is read
        # its ranges come from the data folder's Wikipedia sentences (a folder NOT_LEARNED leaves out) by
        # NNCF's recipe: the digest its labels record (a missing file or extra: the one line that says so)
        from sentlab.encoders.backends import calibration_digest, calibration_sentences, require_extra

        require_extra("openvino")
        found["teacher_calibration_sha256"] = calibration_digest(calibration_sentences(cfg.data.data_dir))
    return found


# the config's keys that name a model the run learns from or against (* for each training set's name)
MODEL_KEYS = (
    "model.name",
    "supervised.teacher",
    "supervised.loss_args.guide",
    "data.sets.*.teacher",
    "data.sets.*.loss_args.guide",
    "rankcse.teachers",
    "rank.base_encoder",
    "tsdae.decoder",
)


def named_models(cfg) -> dict[str, str]:
    """The models ``cfg`` names (:data:`MODEL_KEYS`), by key (``rankcse.teachers.0`` for a list,
    ``data.sets.NAME.teacher`` for a training set's)."""
    tree, named = cfg.model_dump(), {}

    def walk(node: object, parts: list[str], at: str) -> None:
        if not parts:
            for index, value in enumerate(node if isinstance(node, list) else [node]):
                if isinstance(value, str) and value:
                    named[f"{at}.{index}" if isinstance(node, list) else at] = value
            return
        if not isinstance(node, dict):
            return
        keys = list(node) if parts[0] == "*" else [parts[0]]
        for key in keys:
            walk(node.get(key), parts[1:], f"{at}.{key}" if at else key)

    for dotted in MODEL_KEYS:
        walk(tree, dotted.split("."), "")
    return named


def local_models(cfg) -> dict[str, str]:
    """The sha256 of each local model folder ``cfg`` names (:func:`named_models`), by key."""
    from sentlab.encoders.loading import folder_identity

    return {key: identity for key, name in named_models(cfg).items() if (identity := folder_identity(name))}


def find_finished_run(cfg, root: Path) -> Path | None:
    """The model folder of a finished run under ``root`` (``root/*/``) trained from what ``cfg`` would
    train from, by :func:`run_fingerprint`; None when there is none."""
    wanted = run_fingerprint(cfg)
    for folder in sorted(p for p in Path(root).glob("*") if p.is_dir()):
        paths = RunPaths(folder)
        try:
            recorded = json.loads(paths.fingerprint.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if recorded == wanted and (paths.model / "modules.json").is_file():
            return paths.model
    return None


def require_finished_run(cfg, config: str | Path) -> Path:
    """The model folder of the finished run of ``cfg`` (read from the file or preset ``config``; by
    :func:`find_finished_run`, under the folder that holds its ``train.output_dir``); a one-line
    :class:`ConfigError` saying how to train it when there is none - a benchmark never trains one
    silently."""
    from sentlab.errors import ConfigError

    runs = Path(cfg.train.output_dir).parent
    found = find_finished_run(cfg, runs)
    if found is None:
        raise ConfigError(
            f"no finished run of {config} under {runs}/: train it with `sentlab train {config}` "
            "(resumable with --resume), or pass the model folder"
        )
    return found
