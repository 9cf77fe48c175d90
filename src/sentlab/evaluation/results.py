"""Typed results: what every evaluator returns and what ``sentlab eval --output`` writes as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sentlab.errors import DataError
from sentlab.paths import json_text, write_text_atomic


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
        write_text_atomic(path, json_text(self.to_dict(), indent=2))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalReport:
        tasks = {name: result_from_dict(result) for name, result in data.get("tasks", {}).items()}
        return cls(model=data["model"], tasks=tasks, summary=data.get("summary", {}), settings=data.get("settings", {}))

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

    def table(self, *others: EvalReport) -> str:
        """The tasks and summary as a plain-text table: one row for this model, then one for each of
        ``others`` (the same columns; a task another report lacks shows ``-``)."""
        columns = [(name, suffix) for name, task in self.tasks.items() for suffix in task.headline]
        summary = [k for k in self.summary if isinstance(self.summary[k], float)]
        headers = ["model", *(name + suffix for name, suffix in columns), *summary]

        def cells(report: EvalReport) -> list[str]:
            values = [report.model]
            for name, suffix in columns:
                task = report.tasks.get(name)
                value = task.headline.get(suffix) if task is not None else None
                values.append(f"{value:.2f}" if value is not None else "-")
            values += [f"{report.summary[k]:.2f}" if isinstance(report.summary.get(k), float) else "-" for k in summary]
            return values

        rows = [headers] + [cells(report) for report in (self, *others)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows)
