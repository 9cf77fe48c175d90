"""mkdocs hook: pages generated from the code, so they cannot drift from it.

``<!-- sentlab:cli -->`` becomes the command-line reference, read from each command module's parser
(``sentlab.cli.COMMANDS``); ``<!-- sentlab:presets -->`` becomes the table of packaged presets
(``sentlab.presets.list_presets``); ``<!-- sentlab:data -->`` the data sets (``sentlab.data.sources``).
"""

from __future__ import annotations

import argparse


def _usage(parser: argparse.ArgumentParser, title: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{title}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                lines += _usage(child, f"{title} {name}", min(level + 1, 4))
    return lines


def cli_reference() -> str:
    from sentlab.cli import build_parser

    parser = build_parser()
    lines = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                lines += _usage(child, f"sentlab {name}", 2)
    return "\n".join(lines)


def presets_table() -> str:
    from sentlab.presets import list_presets

    rows = [
        "| preset | method | start model | hardware | run on a GPU | data | paper |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in list_presets():
        rows.append(
            f"| `{p.name}` | {p.method} | `{p.model}` | {p.hardware} | {'yes' if p.run_on_gpu else 'no'} | "
            f"{', '.join(p.data)} | {p.paper} |"
        )
    return "\n".join(rows)


def data_table() -> str:
    from sentlab.data.sources import SOURCES

    rows = ["| data set | where in the data folder | what | how to get it |", "|---|---|---|---|"]
    for source in SOURCES.values():
        where = ", ".join(f"`{path}`" for path in source.paths)
        rows.append(f"| `{source.name}` | {where} | {source.description} | {source.how_to_get()} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **kwargs) -> str:
    for marker, build in (
        ("<!-- sentlab:cli -->", cli_reference),
        ("<!-- sentlab:presets -->", presets_table),
        ("<!-- sentlab:data -->", data_table),
    ):
        if marker in markdown:
            markdown = markdown.replace(marker, build())
    return markdown
