"""What the benchmark scripts share: one JSON object on stdout (:func:`emit`), reading a child's
(:func:`last_json`, from ``record.py``), the mean and spread over seeds (:func:`spread`), and what
each script feeds (:func:`fed`: the records whose command runs it, the pages that name it or quote a
figure of those records), which every script states in its ``Feeds:`` line
(tests/test_benchmark_records.py checks the lines against this).

A script run as ``python benchmarks/NAME.py`` imports it as ``common``."""

from __future__ import annotations

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


def fed(script: Path) -> tuple[list[str], list[str]]:
    """(the records whose command runs ``script``, the pages that name it or quote one of their figures)."""
    import yaml

    name = str(script.relative_to(ROOT / "benchmarks"))
    stem = name.removesuffix(".py")
    records = sorted(
        r["name"]
        for r in (json.loads(p.read_text("utf-8")) for p in (ROOT / "benchmarks" / "records").glob("*.json"))
        if f"benchmarks/{name}" in r["command"] or f"benchmarks/{stem}." in r["command"]
    )
    figures = yaml.safe_load((ROOT / "docs" / "figures.yaml").read_text("utf-8"))
    quoted = {n for n, f in figures.items() if f.get("record") in records}
    pages = []
    for page in sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]:
        if page.name == "records.md":  # lists every record: feeds no reader's question
            continue
        text = page.read_text("utf-8")
        marked = {m.group(1) for m in re.finditer(r"<!--fig:([\w-]+)-->", text)}
        if f"benchmarks/{stem}" in text or marked & quoted:
            pages.append(str(page.relative_to(ROOT)))
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
