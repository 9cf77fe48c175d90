"""Typed results: what every evaluator returns and what ``sentlab eval --output`` writes as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sentlab.errors import DataError
from sentlab.paths import write_text_atomic


@dataclass
class TaskResult:
    """One task's scores. ``spearman`` is the headline (x 100); ``subsets`` holds per-subset scores."""

    spearman: float
    pearson: float
    n_pairs: int
    split: str = "test"
    subsets: dict[str, dict[str, float]] = field(default_factory=dict)
    subsets_mean: float | None = None  # unweighted mean of the subsets' Spearman (STS12-16)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> dict[str, float]:
        return {"": self.spearman}


@dataclass
class RankingResult:
    """A ranking task's scores (RankCSE App. A.6): mean Kendall tau and NDCG over samples, x 100."""

    kcc: float
    ndcg: float
    n_samples: int
    n_skipped_constant_gold: int = 0
    split: str = "test"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> dict[str, float]:
        return {" KCC": self.kcc, " NDCG": self.ndcg}


@dataclass
class MetricsResult:
    """A task scored by named metrics (x 100): transfer accuracy, USEB MAP / AP, EvalRank MRR.

    ``main_metric`` names the headline among ``scores``; ``parts`` holds the per-part scores that the
    headline averages (CQADupStack forums, TwitterPara's two sets, SciDocs' four relations).
    """

    main_metric: str
    scores: dict[str, float]
    n: int  # test samples, queries or pairs
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    split: str = "test"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def main(self) -> float:
        return self.scores[self.main_metric]

    @property
    def headline(self) -> dict[str, float]:
        return {"": self.main}


AnyResult = TaskResult | RankingResult | MetricsResult


def result_from_dict(data: dict[str, Any]) -> AnyResult:
    if "kcc" in data:
        return RankingResult(**data)
    if "main_metric" in data:
        return MetricsResult(**data)
    return TaskResult(**data)


@dataclass
class EvalReport:
    """All results for one model: ``{"model": ..., "tasks": {...}, "summary": {...}}``."""

    model: str
    tasks: dict[str, AnyResult] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: str | Path) -> None:
        """Whole or not at all (a temporary file renamed into place): a results file that a killed
        process leaves behind is never read as valid."""
        write_text_atomic(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalReport:
        tasks = {name: result_from_dict(result) for name, result in data.get("tasks", {}).items()}
        return cls(model=data["model"], tasks=tasks, summary=data.get("summary", {}),
                   settings=data.get("settings", {}))

    @classmethod
    def read(cls, path: str | Path) -> EvalReport:
        """A results file of ``sentlab eval --output``; a bad file is a one-line :class:`DataError`."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"{path}: file not found")
        try:
            return cls.from_dict(json.loads(path.read_text("utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
            raise DataError(f"{path}: not a sentlab results file ({type(err).__name__}: {err})") from None

    def table(self) -> str:
        """The tasks and summary as a plain-text table (one row for this model)."""
        columns = {name + suffix: value for name, task in self.tasks.items() for suffix, value in task.headline.items()}
        headers = ["model", *columns] + [k for k in self.summary if isinstance(self.summary[k], float)]
        values = [self.model] + [f"{v:.2f}" for v in columns.values()]
        values += [f"{v:.2f}" for v in self.summary.values() if isinstance(v, float)]
        widths = [max(len(h), len(v)) for h, v in zip(headers, values)]
        line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
        return "\n".join([line(headers), line(values)])
