"""The documentation is checked like code: the site builds strictly (a broken link, anchor or API
reference fails), every Python snippet runs, and every ``sentlab`` command in a shell snippet parses
with the real parser. Shell snippets are not run here (they need the full data, a GPU or your own
text): each says so on its first line (``# needs: ...``)."""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sentlab.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
SKETCH = "# sketch"  # a Python block that shows a shape to fill in (names left undefined), not run


def blocks(language: str) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for number, match in enumerate(FENCE.finditer(page.read_text("utf-8"))):
            if match.group(1) == language:
                found.append((f"{page.relative_to(ROOT)}#{number}", match.group(2)))
    return found


PYTHON = [(name, code) for name, code in blocks("python") if not code.startswith(SKETCH)]
SHELL = blocks("bash")


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cli = (tmp_path / "reference" / "cli" / "index.html").read_text("utf-8")
    assert "sentlab presets show" in cli and "--max-seq-length" in cli  # generated from the parsers
    presets = (tmp_path / "guides" / "presets" / "index.html").read_text("utf-8")
    assert "rse-useb-bert-base" in presets and "wiki1m" in presets


@pytest.mark.slow
@pytest.mark.parametrize("name, code", PYTHON, ids=[name for name, _ in PYTHON])
def test_python_snippet_runs(name, code, tmp_path):
    import ast
    import importlib.util

    imported = {a.name.split(".")[0] for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Import) for a in n.names}
    imported |= {
        n.module.split(".")[0] for n in ast.walk(ast.parse(code)) if isinstance(n, ast.ImportFrom) and n.module
    }
    absent = sorted(m for m in imported if importlib.util.find_spec(m) is None)
    if absent:  # an optional extra the page names (mteb): installed by the README's command, maybe not elsewhere
        pytest.skip(f"{name} imports {', '.join(absent)}, which is not installed here")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SENTLAB_CACHE": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{name}:\n{result.stderr[-3000:]}"


def sentlab_commands(code: str) -> list[list[str]]:
    """The ``sentlab`` command lines of a shell block, ``-m sentlab.cli`` under a launcher included
    (continuations joined, comments, redirections and environment assignments dropped), as argument lists."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        line = line.split(" #")[0].split("#")[0] if line.lstrip().startswith("#") else line.split("  #")[0]
        for part in re.split(r"&&|;|\|", line):
            words = shlex.split(part.split(">")[0])
            while words and re.fullmatch(r"\w+=\S*", words[0]):
                words = words[1:]
            if words and words[0] == "sentlab":
                commands.append(words[1:])
            elif "sentlab.cli" in words and words[words.index("sentlab.cli") - 1] == "-m":  # torchrun, accelerate
                commands.append(words[words.index("sentlab.cli") + 1 :])
    return commands


@pytest.mark.parametrize("name, code", SHELL, ids=[name for name, _ in SHELL])
def test_shell_snippet_is_marked_and_its_commands_parse(name, code):
    first = code.splitlines()[0]
    assert first.startswith("# needs: "), f"{name}: a shell block says what it needs on its first line"
    for argv in sentlab_commands(code):
        try:
            build_parser().parse_args(argv)
        except SystemExit as stop:
            assert stop.code == 0, f"{name}: `sentlab {' '.join(argv)}` does not parse"


def test_snippets_were_found():
    assert len(PYTHON) >= 2 and len(SHELL) >= 15
    assert sum(len(sentlab_commands(code)) for _, code in SHELL) >= 40


def test_generated_reference_pages_are_current(tmp_path):
    """The committed CLI reference and preset / data tables equal what the code gives now (python
    docs/hooks.py rewrites them); a page whose generated text differs is found."""
    hooks = load_hooks()
    assert hooks.stale_pages() == []
    page = tmp_path / "cli.md"
    page.write_text((ROOT / "docs" / "reference" / "cli.md").read_text("utf-8").replace("--resume", "--resumed"))
    assert hooks.stale_pages(tmp_path) == [page]
    assert "sentlab train" in (ROOT / "docs" / "reference" / "cli.md").read_text("utf-8")  # in the repository


def test_every_quoted_figure_is_read_from_its_record(tmp_path):
    """Each figure of docs/figures.yaml is quoted on some page, every marker names a figure the file
    has, each value is the record's value at the key in the figure's format, and a page whose quoted
    value differs from the record's is found (python docs/hooks.py rewrites it)."""
    hooks = load_hooks()
    known = hooks.figures()
    quoted = set()
    for page in hooks.pages():
        for match in hooks.FIGURE.finditer(page.read_text("utf-8")):
            assert match.group("name") in known, f"{page}: unknown figure {match.group('name')}"
            quoted.add(match.group("name"))
    feeding = {name for f in known.values() for name in hooks.NAMED.findall(f.get("derive", ""))}
    assert quoted | feeding == set(known)  # a figure a derived one reads need not be quoted itself
    # the values as the runs printed them (benchmarks/records), pinned: a key that pointed at another
    # arm, row or scale would change them
    pinned = {
        "minilm-sts-avg": "78.87",
        "simcse-30-steps-sts-avg": "79.63",
        "rankencoder-eq7-minilm": "78.86",
        "evalrank-minilm-corrected": "83.70",
        "rawlm-accuracy": "40.8 %",
        "bertflow-over-rawlm": "+4.37",
    }
    assert {name: known[name]["value"] for name in pinned} == pinned
    page = tmp_path / "page.md"
    page.write_text("MiniLM reached <!--fig:minilm-sts-avg-->65.2<!--/fig--> here.\n")
    assert hooks.stale_pages(tmp_path) == [page]
    value = known["minilm-sts-avg"]["value"]
    assert f"<!--fig:minilm-sts-avg-->{value}<!--/fig-->" in hooks.refreshed(page.read_text())
    # a figure of a transcribed record is marked †, and its page must say what † means
    page.write_text("RankCSE reached <!--fig:rankcse-listnet-student-->65.2<!--/fig--> here.\n")
    with pytest.raises(KeyError, match="transcribed figure"):
        hooks.refreshed(page.read_text())
    value = known["rankcse-listnet-student"]["value"]
    marked = hooks.refreshed(page.read_text() + hooks.TRANSCRIBED + ": from a page.\n")
    assert f"<!--fig:rankcse-listnet-student-->{value}†<!--/fig-->" in marked


def test_a_figure_no_record_holds_cannot_reach_a_page(tmp_path):
    """A figure whose record is missing, or whose record lacks its key, stops the build with its name."""
    hooks = load_hooks()
    with pytest.raises(KeyError, match="no record"):
        hooks.figures(records=tmp_path)  # an empty records folder
    for path in hooks.RECORDS.glob("*.json"):
        data = json.loads(path.read_text("utf-8"))
        data["result"] = {}
        (tmp_path / path.name).write_text(json.dumps(data))
    with pytest.raises(KeyError, match="figure '.+': no 'result[.]"):
        hooks.figures(records=tmp_path)
    page = tmp_path / "page.md"
    page.write_text("<!--fig:a-figure-of-no-one-->1.0<!--/fig-->\n")
    with pytest.raises(KeyError, match="a-figure-of-no-one"):
        hooks.refreshed(page.read_text())


def test_a_figure_picks_its_row_of_a_list_by_its_fields():
    """``results[lambda_inf=0.1]``: the one row with those fields, wherever a re-run puts it."""
    hooks = load_hooks()
    data = {"results": [{"lambda_inf": 0.0, "sts": 1}, {"lambda_inf": 0.1, "corpus_size": 10000, "sts": 2}]}
    assert hooks.lookup(data, "results[lambda_inf=0.1].sts") == 2
    assert hooks.lookup({"results": data["results"][::-1]}, "results[lambda_inf=0.1,corpus_size=10000].sts") == 2
    with pytest.raises(KeyError, match="0 items"):
        hooks.lookup(data, "results[lambda_inf=0.5].sts")
    with pytest.raises(KeyError, match="2 items"):
        hooks.lookup({"results": data["results"] * 2}, "results[lambda_inf=0.1].sts")


def test_every_record_says_where_and_when_it_was_measured():
    """A record holds its command, date, machine and result; one kept by benchmarks/record.py its
    commit (a GPU check part's: its bundle's); one copied from the pages (before records were kept) says so."""
    hooks = load_hooks()
    records = sorted(hooks.RECORDS.glob("*.json"))
    assert records
    for path in records:
        r = json.loads(path.read_text("utf-8"))
        assert r["name"] == path.stem and r["command"] and r["result"], path
        datetime.date.fromisoformat(r["date"][:10])
        assert r["machine"]["cpu"]["cores"] >= 1, path
        assert r["machine"].get("gpus") is not None, path
        # a GPU check part (record.py --from) holds the commits of the checkout and of the bundle's wheel
        commit = r.get("commit") or {}
        assert r.get("transcribed") or commit.get("sha") or (commit.get("bundle") or {}).get("sha"), path


def load_hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*$", re.M)


def slug(heading: str) -> str:
    """Python-Markdown's toc slug, as mkdocs makes heading anchors: lower case, punctuation dropped,
    spaces and hyphens to one hyphen."""
    import unicodedata

    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", re.sub(r"`", "", text)).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text("utf-8"))
    return {slug(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)) for h in HEADING.findall(text)}


def broken_links(pages: list[Path], root: Path = ROOT) -> list[str]:
    """``page: target (why)`` for each relative link whose file or heading does not exist."""
    broken = []
    for page in pages:
        for target in LINK.findall(FENCE.sub("", page.read_text("utf-8"))):
            if re.match(r"^[a-z]+:", target):  # http(s), mailto: not checked offline
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(root)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_relative_link_and_heading_resolves(tmp_path):
    assert broken_links(PAGES) == []
    (tmp_path / "a.md").write_text("# Two `words`\n\n[ok](#two-words) [x](b.md) [y](#missing) [z](a.md#two-words)\n")
    assert broken_links([tmp_path / "a.md"], tmp_path) == [
        "a.md: b.md (no such file)",
        "a.md: #missing (no such heading)",
    ]


def test_benchmarks_page_stays_a_short_reference():
    """docs/results.md holds each area's headline figure; findings live on the method pages.

    25,000 characters reads in a few minutes; a longer page is a sign that a run's notes went there.
    """
    size = len((ROOT / "docs" / "results.md").read_text(encoding="utf-8"))
    assert size <= 25_000, f"docs/results.md is {size:,} characters (at most 25,000)"


def test_the_hard_negative_table_is_read_from_its_record(tmp_path):
    """Each row's mean, sd and margin over in-batch negatives come from the record's comparison; a
    kind of negative a training set lacks has no row."""
    hooks = load_hooks()

    def scores(mean):
        return {"sts_avg": {"mean": mean, "sd": 0.25}, "qqp-duplicates": {"mean": mean / 2, "sd": 0.5}}

    margin = {"difference": 1.5, "low": -0.25, "high": 3.0}
    result = {
        "start": {"sts_avg": 78.87, "qqp-duplicates": {"map@100": 40.0}},
        "datasets": {
            "qqp": {
                "pairs": 3794,
                "rows_trained": 3793,
                "compare": {
                    "scores": {"mined": scores(80.0), "in-batch": scores(79.0)},
                    "minus_baseline": {"mined": {"sts_avg": margin, "qqp-duplicates": margin}},
                },
            }
        },
    }
    (tmp_path / "hard-negatives-minilm.json").write_text(json.dumps({"result": result}))
    table = hooks.hard_negatives_table(records=tmp_path).splitlines()
    assert table[2] == "| (start model) | | | | 78.87 | | 40.00 | |"
    assert table[3] == "| qqp | in-batch only | 3,794 | 3,793 | 79.00 (sd 0.25) | | 39.50 (sd 0.50) | |"
    assert table[4] == (
        "| qqp | mined (sentlab mine) | 3,794 | 3,793 | 80.00 (sd 0.25) | +1.50 [-0.25, +3.00] | 40.00 (sd 0.50) "
        "| +1.50 [-0.25, +3.00] |"
    )
    assert len(table) == 5 and not any("the data's own" in row for row in table)


def nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav, relative to docs/."""
    import yaml

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8").split("\nhooks:")[0])["nav"]
    return [page for page in walk(nav) if page.endswith(".md")]


def linked_pages(text: str, prefix: str) -> set[str]:
    return {
        m.group(1)[len(prefix) :]
        for m in re.finditer(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text)
        if m.group(1).startswith(prefix) and "://" not in m.group(1)
    }


def test_every_page_is_linked_from_the_home_page_or_the_readme():
    """A page no one reaches from the front door is a page no one reads: every page of the site's nav
    is linked from docs/index.md or the README (the reference pages through the home page's last line)."""
    home = linked_pages((ROOT / "docs" / "index.md").read_text("utf-8"), "")
    readme = linked_pages((ROOT / "README.md").read_text("utf-8"), "docs/")
    missing = [page for page in nav_pages() if page != "index.md" and page not in home | readme]
    assert not missing, f"pages linked from neither docs/index.md nor README.md: {missing}"
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == set(nav_pages()), f"pages outside the site's nav: {sorted(on_disk - set(nav_pages()))}"
    assert linked_pages("[a](guides/x.md#y) [b](y.md) [c](https://e.org/z.md)", "") == {"guides/x.md", "y.md"}


def test_the_task_index_lives_on_the_home_page_and_the_readme_stays_short():
    """One task index (docs/index.md), which the README links to; the README, the front door, stays
    under 10,000 characters."""
    home = (ROOT / "docs" / "index.md").read_text("utf-8")
    section = home.split("## What do you want to do?")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (.+?) \| \[.+?\]\((.+?)\) \|$", section, re.M)
    assert len(rows) >= 20 and ("Train on a GPU (presets, precision, memory)", "guides/gpu.md") in rows
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "docs/index.md#what-do-you-want-to-do" in readme
    assert not re.search(r"^\| Resume an interrupted run \|", readme, re.M)  # not a second copy
    assert len(readme) < 10_000, len(readme)


# A figure on a user's page (guides, method pages, the README, the home page) is a marker read from a
# record, or its line says where it comes from (a paper's table, an estimate's arithmetic).
# a line that says where its numbers come from: a paper's table or equation, an estimate, arithmetic,
# or a software version
SOURCED = re.compile(r"\bpaper\b|paper's|Table \d|estimate|arithmetic|Python \d|torch \d|==", re.I)
# a line whose numbers with units are settings, limits or inputs, not results: a threshold, a card's
# size, an interval's level, a default, a benchmark's input sizes, a computed product
SETTING = re.compile(
    r"interval|\bCI\b|(?:GB|GiB) card|target|default|at most|at least|limit|blocks of|papers'|(?:GB|GiB) free\b|up to|"
    r"\bfrom \d|\bover \d|\breach|\brule\b|not (?:checked|measured|run)\b|computed|\d = \d",
    re.I,
)
# a row of a method page's equation table (| Eq. 1, ... | code |) names the paper's equations and settings
EQUATION_ROW = re.compile(r"^\| (Eq\.|Sec\.|App\.|Table|Fig\.)")
DECIMAL = re.compile(r"(?<![\w.\-/])\d+\.\d+(?![\w.])")
# a number with a unit of what is measured (time, memory, rate, ratio, share), or a decimal with a
# magnitude (22.7M); a shape (4 × 256) is a setting
WITH_UNIT = re.compile(
    r"(?<![\w.\-/])(?:\d+\.\d+[kMB]|\d[\d,]*(?:\.\d+)?\s?(?:MB|MiB|GB|GiB|KiB|kB|ms|s|min|h|%|×(?! ?\d)|sentences/s|tokens/s))"
    r"(?![\w/])"
)
# results.md and contributing.md may type a figure in a section that names where it comes from
PROVENANCE = re.compile(r"\b20\d\d-\d\d-\d\d\b|\brecords? `[\w.-]+`")


def unmarked_figures(text: str) -> int:
    """Decimal numbers and numbers with units outside figure markers, code blocks and generated tables,
    on lines that do not say they come from a paper, an equation or an estimate (numbers with units:
    nor that they are settings)."""
    text = FENCE.sub("", text)
    text = re.sub(r"<!-- sentlab:(\w+) begin.*?<!-- sentlab:\1 end -->", "", text, flags=re.S)
    count = 0
    for line in text.splitlines():
        line = re.sub(r"<!--fig:[\w-]+-->.*?<!--/fig-->", "", line)
        line = re.sub(r"`[^`]*`", "", line)  # a code span is a setting or a command, not a figure
        if SOURCED.search(line) or EQUATION_ROW.match(line):
            continue
        figures = {m.start() for m in DECIMAL.finditer(line)}  # by where it starts: 3.2× is one figure
        if not SETTING.search(line):
            figures |= {m.start() for m in WITH_UNIT.finditer(line)}
        count += len(figures)
    return count


def unsourced_sections(text: str) -> dict[str, int]:
    """The sections (by heading) of a page of measurements that type figures without naming where they
    come from: a date of the run or a record."""
    text = FENCE.sub("", text)
    sections = re.split(r"\n(?=#{1,4} )", text)
    return {s.splitlines()[0]: n for s in sections if not PROVENANCE.search(s) and (n := unmarked_figures(s))}


MEASUREMENT_PAGES = ("results.md", "contributing.md")


def test_a_user_page_quotes_no_figure_without_a_marker():
    user_pages = [p for p in PAGES if "reference" not in p.parts and p.name not in MEASUREMENT_PAGES]
    found = {str(p.relative_to(ROOT)): unmarked_figures(p.read_text("utf-8")) for p in user_pages}
    typed = {page: n for page, n in found.items() if n}
    assert not typed, f"figures typed by hand (give each a marker from a record, or say its source): {typed}"
    assert (
        unmarked_figures("STS 78.9 here, <!--fig:x-->78.87<!--/fig--> there\n76.25 in the paper\n```text\n1.5\n```")
        == 1
    )
    # a model's name or a page's title is no source; an equation table's row is
    assert unmarked_figures("all-MiniLM-L6-v2 scores 77.52\nPapers in miniature: 12.3\n| Eq. 1, τ = 0.05 | `x` |") == 2
    # numbers with units count (22.7M, 137 MB, 3.2×, 8 %), settings and shapes do not
    assert unmarked_figures("22.7M parameters, 137 MB more, 3.2× faster, 8 % read, 829 sentences/s") == 5
    assert unmarked_figures("on a 16 GB card\na 95 % interval\n4 × 256 layers\n30 steps of 64") == 0
    assert unmarked_figures("the card ran 12 min, 3.2× free of charge") == 2  # a word alone is no setting


def test_a_page_of_measurements_types_figures_only_in_a_section_that_names_their_run():
    """results.md and contributing.md may type figures where a section names the run's date or record;
    a section that types one without is found."""
    found = {p.name: unsourced_sections(p.read_text("utf-8")) for p in PAGES if p.name in MEASUREMENT_PAGES}
    assert len(found) == 2 and not any(found.values()), found
    page = "## Speed\n\nSimCSE runs at 3.2× the loop.\n\n## Memory (2026-11-27, record `x`)\n\n137 MB more.\n"
    assert unsourced_sections(page) == {"## Speed": 1}


def test_a_time_beside_a_record_is_read_from_it():
    """On a page of measurements, a line that names its record types no time of its own: a run's duration
    is a figure of its record ("45 min" beside a record of 580 s was not)."""
    duration = re.compile(r"(?<![\w.-])\d+(?:\.\d+)? ?(?:min|minutes|h|hours|s)\b")
    typed = []
    for page in (p for p in PAGES if p.name in MEASUREMENT_PAGES):
        for number, line in enumerate(page.read_text("utf-8").splitlines(), 1):
            if re.search(r"record `[\w.+-]+`", line):
                bare = re.sub(r"`[^`]*`", "", re.sub(r"<!--fig:[\w-]+-->.*?<!--/fig-->", "", line))
                typed += [f"{page.name}:{number}: {m.group(0)}" for m in duration.finditer(bare)]
    assert not typed, typed
    assert duration.findall("took 45 min, 3.2 s, 12 steps, 8 h") == ["45 min", "3.2 s", "8 h"]


def test_every_guide_and_method_page_says_what_to_expect():
    """One "What to expect" box a guide or method page: its numbers, time and memory labelled
    measured (with the record), paper, estimate, or not measured (said once, in the box)."""
    import yaml

    figures = yaml.safe_load((ROOT / "docs" / "figures.yaml").read_text("utf-8"))
    pages = sorted((ROOT / "docs" / "guides").glob("*.md")) + sorted((ROOT / "docs" / "methods").glob("*.md"))
    wrong = []
    for page in pages:
        text = page.read_text("utf-8")
        boxes = re.findall(r'^!!! note "What to expect"\n((?:    .*\n|\n)+)', text, re.M)
        if len(boxes) != 1:
            wrong.append(f"{page.name}: {len(boxes)} boxes")
            continue
        body = boxes[0]
        if not re.search(r"\*\*(Measured|Paper|Estimate|Not measured)", body) and "Nothing to measure" not in body:
            wrong.append(f"{page.name}: no label")
        if "**Measured" in body and "record" not in body and "no record kept" not in body:
            wrong.append(f"{page.name}: a measured figure without its record")
        for name in re.findall(r"<!--fig:([\w-]+)-->", body):  # each quoted figure names its record in the box
            record = figures[name].get("record")  # a derived figure names its sources' records elsewhere
            if record and f"`{record}`" not in body:
                wrong.append(f"{page.name}: figure {name} without its record `{record}` in the box")
    assert not wrong, wrong


def test_the_distillation_verdict_calls_only_a_gain_above_zero_a_beat(tmp_path):
    """beyond_noise is two-sided: a regression reliably *worse* than its start on both headlines must not
    read as having beaten it; without a record the table says it is not measured."""
    hooks = load_hooks()
    assert hooks.distill_table(tmp_path).startswith("Not measured yet: no record `distill-mpnet-minilm`")
    worse = {"difference": -2.0, "low": -3.0, "high": -1.0, "beyond_noise": True}
    better = {"difference": 2.0, "low": 1.0, "high": 3.0, "beyond_noise": True}
    result = {
        "routes": {"mse-distill": "a", "rankcse": "b"},
        "minus_start": {
            "mse-distill": {"sts_avg": worse, "forum-test": worse},
            "rankcse": {"sts_avg": better, "forum-test": better},
        },
        "minus_simcse": {
            "mse-distill": {"sts_avg": worse, "forum-test": worse},
            "rankcse": {"sts_avg": better, "forum-test": better},
        },
        "gap_closed": {"mse-distill": {"sts_avg": -0.4, "test": None}, "rankcse": {"sts_avg": 0.6, "test": 0.5}},
        "chosen_on_dev": "start model",
        "settings": {"model_pooler": None},
    }
    (tmp_path / "distill-mpnet-minilm.json").write_text(json.dumps({"name": "distill-mpnet-minilm", "result": result}))
    hooks._records_module = lambda: type(
        "R", (), {"read": staticmethod(lambda name, where: json.loads((where / f"{name}.json").read_text()))}
    )
    regression, listwise, chosen = hooks.distill_verdict(tmp_path).split("\n\n")
    assert regression.startswith("- The regression (a) did not beat its start") and "is missed" in regression
    assert "no share (the teacher scores no higher)" in regression
    assert "-2.00 on the STS average (SimCSE ahead beyond the noise)" in regression
    assert listwise.startswith("- The listwise route (b, RankCSE) beat its start") and "is met" in listwise
    assert "+2.00 on the STS average (beyond the noise)" in listwise
    assert chosen == "- The dev forum chose the start model."
    # a route whose every seed kept the start says how far its best trained checkpoint got on dev
    kept = {**result, "kept_steps": {"mse-distill": [0, 0]}, "best_trained_dev": {"mse-distill": [40.0, 41.5]}}
    kept["scores"] = {"start model": {"dev": 48.48}}
    (tmp_path / "distill-mpnet-minilm.json").write_text(json.dumps({"name": "distill-mpnet-minilm", "result": kept}))
    assert "(the best trained one, by seed: 40.00, 41.50; the start: 48.48)." in hooks.distill_verdict(tmp_path)
    # a record whose configs named model.pooler (or before the key was kept) says its routes trained unnormalised
    named = {**result, "settings": {}}
    (tmp_path / "distill-mpnet-minilm.json").write_text(json.dumps({"name": "distill-mpnet-minilm", "result": named}))
    assert "without its `Normalize` module" in hooks.distill_verdict(tmp_path).split("\n\n")[3]
    (tmp_path / "distill-mpnet-minilm.json").write_text(json.dumps({"name": "distill-mpnet-minilm", "result": result}))
    # the table: the route dev chose is the one marked, the labels' check and cost under it
    cells = {k: 1.0 for k in ("sts_avg", "stsb_test", "dev", "test")}
    mean = {k: {"mean": 1.0} for k in cells}
    result |= {
        "chosen_on_dev": "rankcse",
        "scores": {"start model": cells, "mse-distill": mean, "rankcse": mean, "simcse": mean},
        "minus_start": {**result["minus_start"], "simcse": {"sts_avg": worse, "forum-test": worse}},
        "teacher_scores": cells,
        "data": {"texts": 4, "wikipedia_sentences": 2, "domain_titles": 2, "dev_forum": "d", "test_forum": "t"},
        "settings": {"seeds": "1,2,3", "batch_size": 64, "max_seq_length": 64, "model_pooler": None},
        "teacher_labels": {"mse-distill": {"first_run": {}, "later_runs_from_cache": [True, True]}},
        "label_cost": {
            "setting": "openvino int8",
            "device": "cpu",
            "a_b": {"texts": 4, "seconds": 2.0},
            "c": {"texts": 6, "seconds": 3.0},
        },
        "label_check": {
            "settings": {
                "onnx int8": {
                    "cosine_to_fp32": {"wikipedia": {"mean": 0.88}, "titles": {"mean": 0.89}},
                    "sentences_per_second": 40,
                }
            },
            "torch_fp32_sentences_per_second": 25,
            "chosen": "torch fp32",
            "why": "no faster setting keeps 0.99",
        },
    }
    machine = {"cpu": {"cores": 2, "model": "AMD EPYC (family 25)"}}
    (tmp_path / "distill-mpnet-minilm.json").write_text(
        json.dumps({"name": "distill-mpnet-minilm", "result": result, "machine": machine})
    )
    expect = hooks.distill_expect(tmp_path)
    assert "(record `distill-mpnet-minilm`, a 2-core AMD EPYC CPU): 1 of the 2 teacher-labelled configs" in expect
    assert "(listwise route (b, RankCSE)); the dev forum chose the listwise route (b, RankCSE)." in expect
    assert "**Not measured yet**: static students against potion-base-8M" in expect
    table = hooks.distill_table(tmp_path)
    assert "| **listwise route (b, RankCSE): `rankcse`** (chosen on dev) |" in table
    assert "| regression (a): `mse-distill` |" in table
    assert "The runs were labelled in torch fp32 (no faster setting keeps 0.99)" in table
    assert "encoded route (a)'s and (b)'s 4 texts in 2 s and route (c)'s 6 in 3 s from an empty cache" in table


def test_the_static_students_table_reads_its_targets_from_the_record(tmp_path):
    """One teacher's record renders its rows and says each target met or missed as the record has it;
    the other teacher, without a record, is said not measured."""
    hooks = load_hooks()
    cell = lambda mean, fraction: {"mean": mean, "fraction_of_minilm": fraction}  # noqa: E731
    diff = {"difference": 1.0, "low": 0.5, "high": 1.5, "beyond_noise": True}
    keys = ("sts_avg", "sts_b", "domain_ndcg_at_10")
    result = {
        "teacher": "sentence-transformers/all-MiniLM-L6-v2",
        "seeds": [1, 2, 3],
        "data": {
            "wikipedia_sentences": 100000,
            "domain_titles": 16705,
            "student_tokens": 40000,
            "student_dims": 256,
            "test_forum": "mathematica",
            "rate_sentences": 5000,
        },
        "label_check": {
            "chosen": "openvino int8",
            "why": "the fastest setting keeping a mean cosine of 0.99",
            "settings": {
                "openvino int8": {
                    "cosine_to_fp32": {"wikipedia": {"mean": 0.9995}, "titles": {"mean": 0.9996}},
                    "sentences_per_second": 86,
                }
            },
            "torch_fp32_sentences_per_second": 28,
        },
        "labels": {
            "backend": "openvino",
            "precision": "int8",
            "texts_encoded": 116705,
            "teacher_seconds": 1489.4,
            "later_seeds_from_cache": [True, False],
        },
        "scores": {
            "potion-base-8M": dict(zip(keys, (70.0, 75.0, 10.0))),
            "all-MiniLM-L6-v2": dict(zip(keys, (78.9, 82.0, 25.0))),
            "distilled": {k: cell(60.0, 0.76) for k in keys},
            "trained": {k: cell(71.0, 0.9) for k in keys},
        },
        "minus_potion": {row: {k: diff for k in keys} for row in ("distilled", "trained")},
        "speed": {  # the table divides the rates (times_minilm_fp32 is rounded to one decimal)
            "all-MiniLM-L6-v2 torch fp32": {"sentences_per_second": 200},
            "potion-base-8M": {"sentences_per_second": 24000},
            "distilled": {"sentences_per_second": 22000},
            "trained": {"sentences_per_second": 19100},
        },
        "targets": {
            "sts_avg_at_least_potion": True,
            "sts_b_at_least_potion": False,
            "domain_beyond_potion": True,
            "speed_100x_minilm": False,
            "fraction_of_minilm_095": {k: False for k in keys},
        },
    }
    machine = {"cpu": {"cores": 2, "model": "AMD EPYC (family 25)"}}
    record = {"name": "static-potion-minilm", "machine": machine, "result": result}
    (tmp_path / "static-potion-minilm.json").write_text(json.dumps(record))
    hooks._records_module = lambda: type(
        "R", (), {"read": staticmethod(lambda name, where: json.loads((where / f"{name}.json").read_text()))}
    )
    minilm, mpnet = hooks.static_potion(tmp_path).split("\n\n", 1)[0], hooks.static_potion(tmp_path)
    assert "| student: trained | 71.00 | 71.00 | 71.00 | 95.5× | +1.00 [+0.50, +1.50]" in mpnet
    assert "STS average or above met, its STS-B or above missed, beyond it on the domain card met" in mpnet
    assert "100× all-MiniLM-L6-v2's torch fp32 rate missed" in mpnet and "sts b 90.0% (missed)" in mpnet
    assert "| potion-base-8M | 70.00 | 75.00 | 10.00 | 120× |" in mpnet
    assert "'distilled' is model2vec's distillation alone (one run, nothing drawn)" in mpnet
    assert "on a 2-core AMD EPYC CPU (all-MiniLM-L6-v2: 200/s at batch 128" in mpnet
    assert "openvino int8 0.9995 / 0.9996, 86/s; torch fp32 28/s), 116,705 texts in 1,489 s" in mpnet
    assert "the later seeds encoded them again" in mpnet  # one of them did not read the cache
    assert minilm.startswith("Teacher all-MiniLM-L6-v2 (record `static-potion-minilm`)")
    assert "Not measured yet: no record `static-potion-mpnet`" in mpnet


def test_the_second_architecture_table_says_each_paths_status_from_its_record(tmp_path):
    """No record: not measured; a path that failed shows its error line, one that ran what it read back."""
    hooks = load_hooks()
    assert hooks.mpnet_paths(tmp_path).startswith("Not measured yet: no record `mpnet-paths`")
    paths = {
        "supervised": {"status": "ok", "seconds": 12.3, "dims": 768, "model_type": "mpnet", "losses": [1.5, 0.5]}
        | {"reload_max_abs_difference": 0.0},
        "mine": {"status": "failed", "error": "no corpus", "seconds": 1.0},
    }
    found = {"result": {"steps": 4, "batch_size": 8, "paths": paths}, "machine": {"cpu": {"cores": 2, "model": "X"}}}
    (tmp_path / "mpnet-paths.json").write_text(json.dumps(found))
    hooks._records_module = lambda: type(
        "R", (), {"read": staticmethod(lambda name, where: json.loads((where / f"{name}.json").read_text()))}
    )
    table = hooks.mpnet_paths(tmp_path)
    assert "| supervised | ok | 12 | mpnet, 768 dimensions, reloaded to 0; loss 1.500 → 0.500 |" in table
    assert "| mine | failed | 1 | failed: no corpus |" in table


def test_the_parity_run_is_read_from_its_own_record_once_it_exists(tmp_path):
    """Before record distill-mse-parity the verdict quotes the study's own parity (its pooler-named
    config); with it, the three rows of the parity record and nothing said of a run "below" that is absent."""
    hooks = load_hooks()
    hooks._records_module = lambda: type(
        "R", (), {"read": staticmethod(lambda name, where: json.loads((where / f"{name}.json").read_text()))}
    )
    same = {"difference": 0.0, "low": 0.0, "high": 0.0, "beyond_noise": False}
    result = {
        "routes": {"mse-distill": "a"},
        "minus_start": {"mse-distill": {"sts_avg": same, "forum-test": same}},
        "minus_simcse": {"mse-distill": {"sts_avg": same, "forum-test": same}},
        "gap_closed": {"mse-distill": {"sts_avg": 0.0, "test": 0.0}},
        "chosen_on_dev": "start model",
        "scores": {"start model": {"test": 24.95}},
        "sentence_transformers_parity": {"sentence_transformers_trainer": 8.66, "sentlab": 3.54, "seed": 1},
    }
    (tmp_path / "distill-mpnet-minilm.json").write_text(json.dumps({"result": result}))
    before = hooks.distill_verdict(tmp_path)
    assert "ends at 3.54 test nDCG@10 (start 24.95)" in before and "below" not in before
    rows = {
        "sentence_transformers_trainer": {"test": 9.0},
        "sentlab": {"test": 8.5},
        "sentlab_pooler_named": {"test": 3.5},
    }
    (tmp_path / "distill-mse-parity.json").write_text(
        json.dumps({"result": {"rows": rows, "difference": -0.5, "seed": 1}})
    )
    after = hooks.distill_verdict(tmp_path)
    assert "the parity run below shows" in after and "ends at 3.54" not in after
    assert "scores 9.00 nDCG@10" in after and "same config 8.50 (-0.50)" in after and "out of training, 3.50" in after
