"""Paper-style tables and bar charts from results files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentlab.evaluation.results import EvalReport, MetricsResult, TaskResult
from sentlab.reporting.tables import TABLES, plot_tables, render_markdown, table_rows


def report(name, sts=None, transfer=None, useb=None):
    r = EvalReport(model=name)
    for task, value in (sts or {}).items():
        r.tasks[task] = TaskResult(spearman=value, pearson=0.0, n_pairs=10)
    for task, value in (transfer or {}).items():
        r.tasks[task] = MetricsResult("accuracy", {"accuracy": value}, n=10)
    for task, (value, parts) in (useb or {}).items():
        r.tasks[task] = MetricsResult("ap", {"ap": value}, n=10, parts=parts)
    return r


STS = {"STS12": 70.0, "STS13": 80.0, "STS14": 75.0, "STS15": 85.0, "STS16": 80.0, "STS-B": 82.0, "SICK-R": 78.0}
TRANSFER = {"MR": 80.0, "CR": 85.0, "SUBJ": 90.0, "MPQA": 88.0, "SST2": 84.0, "TREC": 86.0, "MRPC": 72.0}


def test_tables_in_paper_column_order_with_average():
    headers, rows, note = table_rows(TABLES[0], [report("a", sts=STS), report("b", sts={"STS12": 60.0})], ["a", "b"])
    assert headers == ["model", "STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Avg"]
    assert rows[0][-1] == pytest.approx(sum(STS.values()) / 7)
    assert rows[1][1] == 60.0 and rows[1][-1] is None and note is None  # incomplete row: no average
    headers, _, _ = table_rows(TABLES[1], [report("a", transfer=TRANSFER)], ["a"])
    assert headers[1:] == ["MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC", "Avg"]


def test_partial_useb_table_says_what_its_average_covers():
    r = report(
        "m",
        useb={
            "CQADupStack": (12.0, {"android": {"ap": 10.0}, "gaming": {"ap": 14.0}}),
            "TwitterPara": (70.0, {"TURL": {"ap": 80.0}, "PIT": {"ap": 60.0}}),
        },
    )
    headers, rows, note = table_rows(TABLES[2], [r], ["m"])
    assert headers[-1] == "Avg*" and rows[0][-1] == pytest.approx(41.0)
    assert "CQADup., TwitterP." in note
    markdown = render_markdown([r], ["m.json"])
    assert "| m | - | 12.00 | 70.00 | - | 41.00 |" in markdown
    assert "### CQADupStack (ap)" in markdown and "| m | 10.00 | 14.00 | 12.00 |" in markdown


def test_same_model_name_in_two_files_is_told_apart_and_charts_are_written(tmp_path):
    reports = [report("m", sts=STS, transfer=TRANSFER), report("m", sts=STS)]
    markdown = render_markdown(reports, ["runs/a.json", "runs/b.json"])
    assert "| m (a) |" in markdown and "| m (b) |" in markdown
    written = plot_tables(reports, ["runs/a.json", "runs/b.json"], tmp_path)
    assert [p.name for p in written] == ["sts.png", "transfer.png"]
    values = json.loads((tmp_path / "transfer.json").read_text())["values"]
    assert values == {
        "m (a)": {
            **{k if k != "SST2" else "SST-2": v for k, v in TRANSFER.items()},
            "Avg": pytest.approx(sum(TRANSFER.values()) / 7),
        }
    }


def test_task_cards_get_intervals_and_paired_differences_against_the_first_model(tmp_path):
    from sentlab.evaluation.uncertainty import bootstrap_interval, mean_items

    def card_report(model, values):
        items = mean_items(values, "same-queries")
        result = MetricsResult(
            "map@100",
            {"map@100": 100 * float(np.mean(values))},
            n=len(values),
            extra={"items": items, "ci95": {"map@100": list(bootstrap_interval(items))}},
        )
        return EvalReport(model=model, tasks={"tickets": result}, settings={"task_cards": {"tickets": "cards"}})

    base = list(np.linspace(0.1, 0.5, 20))
    reports = [card_report("start", base), card_report("tuned", [v + 0.1 for v in base])]
    markdown = render_markdown(reports, ["a.json", "b.json"])
    assert "## Your tasks (task cards)" in markdown and "30.00 [" in markdown
    # every query gains exactly 10 points: the paired difference is +10 with a zero-width interval
    assert "| tuned | +10.00 (95% CI [+10.00, +10.00], beyond the noise) |" in markdown
    written = plot_tables(reports, ["a.json", "b.json"], tmp_path)
    assert tmp_path / "your-tasks.png" in written
