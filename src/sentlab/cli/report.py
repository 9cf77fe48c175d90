"""``sentlab report``: paper-style Markdown tables and bar charts from results files."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_report(args: argparse.Namespace) -> int:
    from sentlab.evaluation.results import EvalReport
    from sentlab.reporting.tables import plot_tables, render_markdown

    reports = [EvalReport.read(path) for path in args.results]
    markdown = render_markdown(reports, args.results)
    print(markdown, end="")
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(markdown, encoding="utf-8")
        for path in plot_tables(reports, args.results, out):
            print(f"written {path} (+ .json)")
        print(f"written {out / 'report.md'}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="paper-style Markdown tables (STS, transfer, USEB, EvalRank) and bar charts from results files"
    )
    p.add_argument("results", nargs="+", help="results files of `sentlab eval --output` (one model each)")
    p.add_argument("--output", default=None, help="folder for report.md and the bar charts (PNG + JSON)")
    p.set_defaults(func=cmd_report)
