"""Training presets shipped with sentlab: YAML configs with the papers' settings (GPU) and CPU-sized
runs on the packaged all-MiniLM-L6-v2, found by name wherever sentlab is installed.

A preset's name is its path in this folder without ``.yaml`` (``simcse-unsup-minilm-cpu``,
``miniature/simcse``). ``sentlab train NAME`` reads a packaged preset when no file of that name
exists; ``sentlab presets`` lists them and ``sentlab presets show NAME`` prints one to edit. Each has an
``about:`` section (summary, paper, hardware, whether it has been run on a GPU); its data paths start
with ``$SENTLAB_DATA/`` (:func:`sentlab.paths.expand_data_paths`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from sentlab.errors import ConfigError

PRESETS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Preset:
    """A packaged training preset and what ``sentlab presets`` shows of it."""

    name: str
    path: Path
    method: str
    model: str
    summary: str
    paper: str
    hardware: str
    run_on_gpu: bool
    data: tuple[str, ...]  # the data sets it reads (sentlab.data.sources), in order

    @classmethod
    def read(cls, path: Path) -> Preset:
        """What ``sentlab presets`` shows, from the YAML alone: listing does not import the training
        stack (the packaged presets are validated by the tests, a user's config by ``load_config``)."""
        from sentlab.data.sources import data_sets
        from sentlab.paths import data_dir, expand_data_paths

        tree = yaml.safe_load(path.read_text("utf-8"))
        about, evaluation = tree.get("about") or {}, tree.get("eval") or {}
        root = data_dir()
        reads_sts = evaluation.get("dev_task", "STS-B") == "STS-B" or "sts" in evaluation.get("final_tasks", ["sts"])
        return cls(
            name=path.relative_to(PRESETS_DIR).with_suffix("").as_posix(),
            path=path,
            method=tree["method"],
            model=str(tree["model"].get("name") or "random init"),
            summary=about.get("summary", ""),
            paper=about.get("paper") or "",
            hardware=about.get("hardware", "cpu"),
            run_on_gpu=bool(about.get("run_on_gpu", False)),
            data=data_sets(expand_data_paths(tree, root), root, reads_sts),
        )


def preset_files() -> list[Path]:
    """Every packaged training preset (files with a ``method``), top-level ones first."""
    files = sorted(PRESETS_DIR.rglob("*.yaml"), key=lambda p: (len(p.relative_to(PRESETS_DIR).parts), p.as_posix()))
    return [p for p in files if "method:" in p.read_text("utf-8")]


def list_presets() -> list[Preset]:
    return [Preset.read(path) for path in preset_files()]


def packaged_file(name: str) -> Path | None:
    """The packaged YAML file called ``name`` (with or without ``.yaml``), or None."""
    relative = name if name.endswith((".yaml", ".yml")) else name + ".yaml"
    path = (PRESETS_DIR / relative).resolve()
    if PRESETS_DIR in path.parents and path.is_file():
        return path
    return None


def resolve_config(name_or_path: str | Path) -> Path:
    """A YAML file that exists, else the packaged preset of that name; otherwise a one-line error."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; give a YAML config file or a preset name")
    packaged = packaged_file(str(name_or_path))
    if packaged is None and str(name_or_path).startswith("configs/"):  # the presets' former place
        packaged = packaged_file(str(name_or_path).removeprefix("configs/"))
    if packaged is not None:
        return packaged
    raise ConfigError(
        f"{name_or_path}: no such config file and no preset of that name (`sentlab presets` lists the presets)"
    )
