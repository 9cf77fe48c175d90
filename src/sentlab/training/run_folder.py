"""The files of a run folder; methods add their own names (``Method.run_files``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RUN_FILES: dict[str, str] = {"config": "config.yaml", "checkpoints": "checkpoints", "metrics": "metrics.jsonl",
                             "model": "model", "results": "results.json", "loss_plot": "loss.png",
                             "log": "run.log"}


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
