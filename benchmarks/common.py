"""What the benchmark scripts share: one JSON object on stdout (:func:`emit`), reading a child's
(:func:`last_json`, from ``record.py``), the mean and spread over seeds (:func:`spread`), and what
each script feeds (:func:`fed`: the records whose command runs it, the pages that name it or quote a
figure of those records), which every script states in its ``Feeds:`` line
(tests/test_benchmark_records.py checks the lines against this).

A script run as ``python benchmarks/NAME.py`` imports it as ``common``."""

from __future__ import annotations

import functools
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import record  # noqa: E402

__all__ = ["ROOT", "emit", "fed", "last_json", "scripts", "spread", "write_feeds"]


def emit(result: dict) -> None:
    """The script's result: one JSON object on one line of stdout (what ``record.py`` keeps)."""
    print(json.dumps(result))


def last_json(text: str) -> dict | list:
    """The last JSON object a child printed (``record.last_json``); a child that printed none is an
    error here, never a silent null in the result."""
    found = record.last_json(text)
    if found is None:
        raise SystemExit(f"the child printed no JSON object; its output ended: {text.strip()[-300:]!r}")
    return found


def spread(values: list[float], digits: int | None = None) -> dict:
    """``{"mean", "sd"}`` of ``values`` over seeds (sample standard deviation; None for one value),
    rounded to ``digits`` when given."""
    mean = statistics.mean(values)
    sd = statistics.stdev(values) if len(values) > 1 else None
    if digits is not None:
        mean = round(mean, digits)
        sd = round(sd, digits) if sd is not None else None
    return {"mean": mean, "sd": sd}


def scripts() -> list[Path]:
    """Every benchmark script (not the shared modules)."""
    found = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if p.name not in ("record.py", "common.py"))
    return found + [ROOT / "benchmarks" / "gpu" / "check.py"]


@functools.cache
def _records() -> tuple[tuple[str, str], ...]:
    """(name, command) of every record, read once a process."""
    found = (json.loads(p.read_text("utf-8")) for p in sorted((ROOT / "benchmarks" / "records").glob("*.json")))
    return tuple((r["name"], r["command"]) for r in found)


@functools.cache
def _pages() -> tuple[tuple[str, str, frozenset[str]], ...]:
    """(path, text, the figures it marks) of every docs page and the README, read once a process;
    records.md lists every record, so it feeds no reader's question."""
    pages = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    return tuple(
        (str(page.relative_to(ROOT)), text, frozenset(re.findall(r"<!--fig:([\w-]+)-->", text)))
        for page in pages
        if page.name != "records.md"
        for text in [page.read_text("utf-8")]
    )


@functools.cache
def _figure_records() -> dict[str, str | None]:
    """Each figure of docs/figures.yaml -> the record it reads (None for a derived one)."""
    import yaml

    return {n: f.get("record") for n, f in yaml.safe_load((ROOT / "docs" / "figures.yaml").read_text("utf-8")).items()}


def fed(script: Path) -> tuple[list[str], list[str]]:
    """(the records whose command runs ``script``, the pages that name it or quote one of their figures)."""
    name = str(script.relative_to(ROOT / "benchmarks"))
    stem = name.removesuffix(".py")
    records = sorted(
        r for r, command in _records() if f"benchmarks/{name}" in command or f"benchmarks/{stem}." in command
    )
    quoted = {n for n, r in _figure_records().items() if r in records}
    pages = [path for path, text, marked in _pages() if f"benchmarks/{stem}" in text or marked & quoted]
    return records, pages


def feeds_line(script: Path) -> str:
    """The ``Feeds:`` line ``script`` should carry."""
    records, pages = fed(script)
    said = f"records {', '.join(records)}" if records else "no record (its figures are quoted by hand)"
    return f"Feeds: {said}; pages {', '.join(pages)}." if pages else f"Feeds: {said}."


# a script that feeds no page says which test it backs instead
BACKS_A_TEST = {"learning_spread.py": "Feeds: no record; the margin of tests/training/test_learning.py."}


def write_feeds() -> list[str]:
    """Rewrite every script's ``Feeds:`` line (after its docstring's first paragraph) from :func:`fed`;
    the scripts changed."""
    import textwrap

    changed = []
    for script in scripts():
        line = BACKS_A_TEST.get(script.name) or feeds_line(script)
        text = script.read_text("utf-8")
        start = text.index('"""') + 3
        end = text.index('"""', start)
        doc = re.sub(r"\n\nFeeds: .*?(?=\n\n|$)", "", text[start:end], flags=re.S)
        wrapped = textwrap.fill(line, 100, break_on_hyphens=False)
        cut = doc.find("\n\n")
        if cut == -1:
            new = doc.rstrip("\n") + "\n\n" + wrapped + ("\n" if doc.endswith("\n") else "")
        else:
            new = doc[:cut] + "\n\n" + wrapped + doc[cut:]
        if new != text[start:end]:
            script.write_text(text[:start] + new + text[end:], "utf-8")
            changed.append(script.name)
    return changed


if __name__ == "__main__":  # python benchmarks/common.py: the Feeds lines, as records and pages are now
    print("\n".join(write_feeds()) or "every Feeds line is current")
