"""Reference pages generated from the code and committed, so they read the same in a repository
browser, an editor and the site, and cannot drift from the code.

Between ``<!-- sentlab:NAME begin ... -->`` and ``<!-- sentlab:NAME end -->`` a page holds generated
text: ``cli`` the command-line reference, read from each command module's parser
(``sentlab.cli.COMMANDS``); ``presets`` the table of packaged presets (``sentlab.presets.list_presets``);
``data`` the data sets (``sentlab.data.sources``).

    python docs/hooks.py            # rewrite the generated regions of every page in docs/
    python docs/hooks.py --check    # exit 1 naming each stale page (tests/test_docs.py runs the same check)

As an mkdocs hook it refuses to build a page whose generated text is stale.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
WIDTH = "100"  # argparse wraps help at the terminal's width: one width wherever it is generated


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


GENERATORS = {"cli": cli_reference, "presets": presets_table, "data": data_table}
REGION = re.compile(
    r"(<!-- sentlab:(?P<name>\w+) begin[^>]*-->\n)(?P<body>.*?)(<!-- sentlab:(?P=name) end -->)", re.DOTALL
)


def refreshed(markdown: str) -> str:
    """``markdown`` with each generated region rebuilt from the code."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return REGION.sub(lambda m: f"{m.group(1)}\n{GENERATORS[m.group('name')]()}\n\n{m.group(4)}", markdown)
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def stale_pages(docs: Path = DOCS) -> list[Path]:
    """The pages whose generated regions differ from what the code gives now."""
    return [page for page in sorted(docs.rglob("*.md")) if refreshed(text := page.read_text("utf-8")) != text]


def on_page_markdown(markdown: str, page=None, **kwargs) -> str:
    if refreshed(markdown) != markdown:
        name = getattr(getattr(page, "file", None), "src_path", "a page")
        raise RuntimeError(f"{name}: its generated reference is stale; run python docs/hooks.py")
    return markdown


def main(argv: list[str]) -> int:
    stale = stale_pages()
    if "--check" in argv:
        for page in stale:
            print(f"{page.relative_to(DOCS.parent)}: stale generated reference (python docs/hooks.py)")
        return 1 if stale else 0
    for page in stale:
        page.write_text(refreshed(page.read_text("utf-8")), encoding="utf-8")
        print(f"rewrote {page.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent / "src"))
    sys.exit(main(sys.argv[1:]))
