"""``sentlab report``: results files rendered in the papers' table layouts, plus bar charts.

Tables (models as rows, one column per task and an average column; the tables are declared as data
in :data:`TABLES`):

* STS - STS12-16, STS-B, SICK-R, Avg (Spearman x 100; SimCSE / RankCSE / RankEncoder Table 1 layout).
* Transfer - MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC, Avg (accuracy; RankCSE Table 3, RSE Table 6).
* USEB - AskU., CQADup., TwitterP., SciDocs, Avg (TSDAE Table 2, RSE Table 5); the detail tables
  list CQADupStack's forums, TwitterPara's TURL / PIT and SciDocs' relations.
* EvalRank - MRR, Hits@1, Hits@3 as the toolkit computes them (RSE's ranking evaluation), and sentlab's
  corrected MRR / Hits@1 (s1 and s2 excluded).
* Your tasks - every task card in the results (``sentlab eval --task-card``), each headline with its
  95% bootstrap interval, and each model after the first against the first: the paired bootstrap
  difference on the same items, said to be inside or beyond the noise.

A cell without a result is "-". The average column is filled only for a row with every task of
the table; a table where no row has them all averages what is there and says so under the table.
Bar charts (PNG, one per table, with a JSON of the plotted numbers) show the same numbers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentlab.data.sts import STS_TASKS
from sentlab.data.transfer import TRANSFER_TASKS
from sentlab.data.useb import USEB_TASKS
from sentlab.evaluation.results import EvalReport, MetricsResult, TaskResult
from sentlab.evaluation.uncertainty import paired_difference

Getter = Callable[[EvalReport], float | None]


def _sts(task: str) -> Getter:
    def get(report: EvalReport) -> float | None:
        result = report.tasks.get(task)
        return result.spearman if isinstance(result, TaskResult) else None

    return get


def _metric(task: str, metric: str | None = None) -> Getter:
    def get(report: EvalReport) -> float | None:
        result = report.tasks.get(task)
        if not isinstance(result, MetricsResult):
            return None
        return result.scores.get(metric or result.main_metric)

    return get


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[tuple[str, Getter], ...]
    average: bool = True


TABLES = (
    Table("STS (Spearman x 100)", tuple((t, _sts(t)) for t in STS_TASKS)),
    Table("Transfer (accuracy)", tuple(((t if t != "SST2" else "SST-2"), _metric(t)) for t in TRANSFER_TASKS)),
    Table(
        "USEB", tuple((label, _metric(t)) for label, t in zip(("AskU.", "CQADup.", "TwitterP.", "SciDocs"), USEB_TASKS))
    ),
    Table(
        "EvalRank",
        (
            ("MRR", _metric("EvalRank", "mrr")),
            ("Hits@1", _metric("EvalRank", "hits@1")),
            ("Hits@3", _metric("EvalRank", "hits@3")),
            ("MRR (corrected)", _metric("EvalRank", "mrr_corrected")),
            ("Hits@1 (corrected)", _metric("EvalRank", "hits@1_corrected")),
        ),
        average=False,
    ),
)


def _cell(value: float | str | None) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:.2f}"


def _unique_names(reports: list[EvalReport], files: list[str]) -> list[str]:
    names = [r.model for r in reports]
    return [f"{n} ({Path(f).stem})" if names.count(n) > 1 else n for n, f in zip(names, files)]


def table_rows(
    table: Table, reports: list[EvalReport], names: list[str]
) -> tuple[list[str], list[list[float | None]], str | None]:
    """(headers, numeric rows, note) of one table; rows with no value at all are dropped."""
    headers = [label for label, _ in table.columns]
    rows: list[list[float | None]] = []
    kept: list[str] = []
    for report, name in zip(reports, names):
        values = [get(report) for _, get in table.columns]
        if all(v is None for v in values):
            continue
        rows.append(values)
        kept.append(name)
    note = None
    if table.average and rows:
        complete = any(all(v is not None for v in row) for row in rows)
        present = [i for i in range(len(headers)) if any(row[i] is not None for row in rows)]
        for row in rows:
            values = [row[i] for i in present] if not complete else row
            row.append(float(np.mean(values)) if all(v is not None for v in values) else None)
        if not complete:
            note = f"Avg over the tasks present: {', '.join(headers[i] for i in present)} (not the paper's average)."
        headers.append("Avg" if complete else "Avg*")
    return ["model", *headers], [[name, *row] for name, row in zip(kept, rows)], note


def _markdown(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
    lines += ["| " + " | ".join([row[0], *(_cell(v) for v in row[1:])]) + " |" for row in rows]
    return "\n".join(lines)


def _detail_tables(reports: list[EvalReport], names: list[str]) -> list[str]:
    """Per-part tables of the USEB tasks (forums, TURL / PIT, SciDocs relations)."""
    out = []
    for task in USEB_TASKS:
        parts: dict[str, None] = {}
        for report in reports:
            result = report.tasks.get(task)
            if isinstance(result, MetricsResult):
                parts.update(dict.fromkeys(result.parts))
        if not parts:
            continue
        rows = []
        for report, name in zip(reports, names):
            result = report.tasks.get(task)
            if isinstance(result, MetricsResult):
                rows.append([name, *(result.parts.get(p, {}).get(result.main_metric) for p in parts), result.main])
        metric = next(r.tasks[task].main_metric for r in reports if isinstance(r.tasks.get(task), MetricsResult))
        out.append(f"### {task} ({metric})\n\n" + _markdown(["model", *parts, "Avg"], rows))
    return out


def card_table(reports: list[EvalReport]) -> Table | None:
    """The task cards found in the reports, as a table (no average: the cards are unrelated tasks)."""
    cards: dict[str, None] = {}
    for report in reports:
        cards.update(dict.fromkeys(report.settings.get("task_cards", {})))
    return Table("Your tasks (task cards)", tuple((c, _metric(c)) for c in cards), average=False) if cards else None


def _card_sections(table: Table, reports: list[EvalReport], names: list[str]) -> list[str]:
    cards = [label for label, _ in table.columns]
    rows = []
    for report, name in zip(reports, names):
        cells: list[str | None] = []
        for card in cards:
            result = report.tasks.get(card)
            if not isinstance(result, MetricsResult):
                cells.append(None)
                continue
            low_high = result.extra.get("ci95", {}).get(result.main_metric)
            cells.append(
                f"{result.main:.2f}"
                + (f" [{low_high[0]:.2f}, {low_high[1]:.2f}]" if low_high else "")
                + f" ({result.main_metric})"
            )
        rows.append([name, *cells])
    out = [
        f"## {table.title}\n\n"
        + _markdown(["model", *cards], rows)
        + "\n\nCells: headline [95% bootstrap CI over the card's items]."
    ]
    if len(reports) > 1:
        differences = []
        for report, name in zip(reports[1:], names[1:]):
            cells = []
            for card in cards:
                items = [getattr(r.tasks.get(card), "extra", {}).get("items") for r in (report, reports[0])]
                same = all(items) and items[0]["key"] == items[1]["key"]
                cells.append(paired_difference(items[0], items[1]).describe() if same else "- (not the same items)")
            differences.append([name, *cells])
        out.append(
            f"### Against {names[0]} (paired bootstrap over the same items)\n\n"
            + _markdown(["model", *cards], differences)
        )
    return out


def render_markdown(reports: list[EvalReport], files: list[str]) -> str:
    names = _unique_names(reports, files)
    sections = []
    cards = card_table(reports)
    if cards is not None:
        sections += _card_sections(cards, reports, names)
    for table in TABLES:
        headers, rows, note = table_rows(table, reports, names)
        if rows:
            sections.append(f"## {table.title}\n\n" + _markdown(headers, rows) + (f"\n\n{note}" if note else ""))
    sections += _detail_tables(reports, names)
    skipped = {
        (name, task): reason
        for report, name in zip(reports, names)
        for task, reason in report.summary.get("skipped", {}).items()
    }
    if skipped:
        sections.append(
            "## Skipped\n\n" + "\n".join(f"- {name}: {task} ({reason})" for (name, task), reason in skipped.items())
        )
    return "\n\n".join(sections) + "\n"


def _slug(title: str) -> str:
    return title.split(" (")[0].lower().replace(" ", "-")


def plot_tables(reports: list[EvalReport], files: list[str], out_dir: str | Path) -> list[Path]:
    """One grouped bar chart per table with results (tasks on x, one bar per model)."""
    from sentlab.reporting.plots import pyplot

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = _unique_names(reports, files)
    written = []
    for table in [*TABLES, *filter(None, [card_table(reports)])]:
        headers, rows, _ = table_rows(table, reports, names)
        if not rows:
            continue
        columns = headers[1:]
        data = {row[0]: dict(zip(columns, row[1:])) for row in rows}
        slug = _slug(table.title)
        (out_dir / f"{slug}.json").write_text(
            json.dumps({"table": table.title, "values": data}, indent=2) + "\n", encoding="utf-8"
        )
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(columns) * max(1, len(rows)) ** 0.5), 4))
        width = 0.8 / len(rows)
        x = np.arange(len(columns))
        for k, row in enumerate(rows):
            heights = [np.nan if v is None else v for v in row[1:]]
            bars = ax.bar(x + (k - (len(rows) - 1) / 2) * width, heights, width, label=row[0])
            ax.bar_label(bars, fmt="%.1f", fontsize=7)
        ax.set_xticks(x, columns, rotation=30 if len(columns) > 6 else 0)
        ax.set_title(table.title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{slug}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
