"""What the benchmark modules share: one JSON object on stdout (:func:`emit`), reading a child's
(:func:`last_json`), the mean and spread over seeds (:func:`spread`), running sentlab (:func:`sentlab`),
"train a preset, then score it" (:func:`train_preset`, :func:`scores`), and what each module feeds
(:func:`fed`: the records of the benchmarks that run it, the pages that name it or quote a figure of
those records), which every module states in its ``Feeds:`` line (tests/test_benchmark_records.py
checks the lines against this; ``python -m benchmarks feeds`` rewrites them)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks import record, registry

ROOT = Path(__file__).resolve().parents[1]

__all__ = [
    "ROOT",
    "emit",
    "fed",
    "last_json",
    "produced_by",
    "same_settings",
    "commit_name",
    "scores",
    "scripts",
    "sentlab",
    "spread",
    "train_preset",
    "write_feeds",
]

# a child that runs sentlab and reports its own peak resident memory on its last stderr line
_CHILD = (
    "import resource, sys\n"
    "from sentlab.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def emit(result: dict) -> None:
    """The module's result: one JSON object on one line of stdout (what the runner keeps)."""
    print(json.dumps(result))


def last_json(text: str) -> dict | list:
    """The last JSON object a child printed (``record.last_json``); a child that printed none is an
    error here, never a silent null in the result."""
    found = record.last_json(text)
    if found is None:
        raise SystemExit(f"the child printed no JSON object; its output ended: {text.strip()[-300:]!r}")
    return found


def same_settings(out: Path, asked: dict) -> None:
    """A study's output folder, whose finished pieces a rerun reuses, holds runs of one set of settings:
    ``asked`` is kept in ``out/asked.json``; other settings into the same folder stop in one line."""
    kept = out / "asked.json"
    if kept.is_file() and json.loads(kept.read_text("utf-8")) != asked:
        raise SystemExit(f"{out} holds a run at other settings ({kept}); give another --output")
    kept.write_text(json.dumps(asked), encoding="utf-8")


def commit_name() -> str:
    """This checkout's commit as a ledger names it: the sha, and ``+changes:DIGEST`` (the diff's sha256,
    12 hex digits) where the tree differs from it."""
    this = record.commit()
    return f"{this.get('sha')}" + (f"+changes:{this.get('diff_sha256', '?')[:12]}" if this.get("dirty") else "")


def produced_by(out: Path, files: list[Path], before: bool, made_by: str) -> dict[str, list[str]]:
    """Which commit produced each of ``files`` (under ``out``): a study's outputs, which a rerun reuses.
    Called ``before`` a step, it notes the files missing, to be written by ``made_by``
    (:func:`commit_name`, read once when the study starts); called after, each file it noted and now
    finds is ``made_by``'s. A file noted as another commit's and found before the step was written by
    that commit's run, cut short before it could say so. ``out/produced-by.json`` keeps the ledger; a
    file found before the ledger knew of it (an older run, a hand) is ``unrecorded``; a known file found
    missing is noted again. Returns ``{commit: [files]}`` of ``files``, relative to ``out``."""
    ledger_path = out / "produced-by.json"
    ledger = json.loads(ledger_path.read_text("utf-8")) if ledger_path.is_file() else {"pending": {}, "by": {}}
    keys = [path.resolve().relative_to(out.resolve()).as_posix() for path in files]
    for path, key in zip(files, keys):
        if not path.exists():
            ledger["by"].pop(key, None)
            if before:
                ledger["pending"][key] = made_by
        elif key not in ledger["by"]:
            noted = ledger["pending"].pop(key, None)
            ledger["by"][key] = noted or "unrecorded"
    ledger_path.write_text(json.dumps(ledger, indent=1), encoding="utf-8")
    grouped: dict[str, list[str]] = {}
    for key in keys:
        if key in ledger["by"]:
            grouped.setdefault(ledger["by"][key], []).append(key)
    return grouped


def spread(values: list[float], digits: int | None = None) -> dict:
    """``{"mean", "sd"}`` of ``values`` over seeds (sample standard deviation; None for one value),
    rounded to ``digits`` when given."""
    mean = statistics.mean(values)
    sd = statistics.stdev(values) if len(values) > 1 else None
    if digits is not None:
        mean = round(mean, digits)
        sd = round(sd, digits) if sd is not None else None
    return {"mean": mean, "sd": sd}


def sentlab(argv: list[str], *, child: bool = False, env: dict | None = None) -> dict:
    """``sentlab ARGV`` with its stdout sent to stderr (stdout holds the module's one JSON object): in
    this process, or in a fresh one (``child``: the run's own memory and threads, ``env`` added to the
    environment). A failure exits with the command and its last line. Returns the child's peak resident
    memory (``peak_rss_mib``; None in this process)."""
    print("sentlab " + " ".join(argv), file=sys.stderr)
    if not child:
        from sentlab.cli import main

        with contextlib.redirect_stdout(sys.stderr):
            code = main(argv)
        if code:
            raise SystemExit(f"sentlab {' '.join(argv)} exited with {code}")
        return {"peak_rss_mib": None}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        stdout=sys.stderr,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    said = [line for line in done.stderr.splitlines() if not line.startswith("PEAK_RSS_KB")]
    sys.stderr.write("".join(line + "\n" for line in said))
    if done.returncode:
        raise SystemExit(f"sentlab {' '.join(argv)} exited with {done.returncode}: {(said or ['?'])[-1]}")
    peak = re.search(r"PEAK_RSS_KB (\d+)", done.stderr)
    return {"peak_rss_mib": round(int(peak.group(1)) / 1024, 1) if peak else None}


def train_preset(
    preset: str,
    folder: Path,
    sets: dict | None = None,
    *,
    options: list[str] | None = None,
    child: bool = False,
    env: dict | None = None,
) -> dict:
    """``sentlab train PRESET`` (a preset or a config file) into ``folder`` with ``sets`` as
    ``--set KEY=VALUE`` (and ``options``, such as ``--no-eval``). A finished run there is reused when
    sentlab's run fingerprint says it learnt from these settings and data
    (:func:`~sentlab.training.run_folder.run_fingerprint`); a finished run of other settings stops the
    benchmark in one line. Returns :func:`sentlab`'s report (``peak_rss_mib``: None for a reused run)
    with ``folder``."""
    from sentlab.methods import load_config
    from sentlab.training.run_folder import RunPaths, run_fingerprint

    folder = Path(folder)
    overrides = [f"train.output_dir={folder}", *(f"{key}={value}" for key, value in (sets or {}).items())]
    paths = RunPaths(folder)
    if (paths.model / "modules.json").is_file():
        try:
            recorded = json.loads(paths.fingerprint.read_text("utf-8"))
        except (OSError, ValueError):
            recorded = None
        if recorded != run_fingerprint(load_config(preset, overrides)):
            raise SystemExit(f"{folder}: a finished run of other settings or data; remove it or choose another folder")
        return {"peak_rss_mib": None, "folder": folder}
    argv = ["train", preset, "--quiet", *(options or [])]
    for override in overrides:
        argv += ["--set", override]
    return {**sentlab(argv, child=child, env=env), "folder": folder}


def scores(model: str | Path, tasks: str, output: Path, options: list[str] | None = None) -> dict:
    """``sentlab eval`` of ``model`` on ``tasks`` into ``output`` (reused when it is there): the report."""
    output = Path(output)
    if not output.is_file():
        sentlab(["eval", "--model", str(model), "--tasks", tasks, "--quiet", "--output", str(output), *(options or [])])
    return json.loads(output.read_text("utf-8"))


def scripts() -> list[Path]:
    """Every benchmark module (perf/ and studies/, not the shared ones) and the GPU check."""
    found = sorted(p for kind in ("perf", "studies") for p in (ROOT / "benchmarks" / kind).glob("*.py"))
    return [p for p in found if p.name != "__init__.py"] + [ROOT / "benchmarks" / "gpu" / "check.py"]


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
    """(the records of the benchmarks that run ``script`` (``registry.py``; for the GPU check, the
    records of its parts), the pages that name it, as a path or a module, or quote one of their figures)."""
    stem = str(script.relative_to(ROOT / "benchmarks")).removesuffix(".py")
    module = "benchmarks." + stem.replace("/", ".")
    kept = {path.stem for path in record.RECORDS.glob("*.json")}
    if stem == "gpu/check":
        records = sorted(r for r in kept if registry.gpu_part(r))
    else:
        records = sorted(b.name for b in registry.BENCHMARKS.values() if module in b.modules and b.name in kept)
    quoted = {n for n, r in _figure_records().items() if r in records}
    runs = [b.name for b in registry.BENCHMARKS.values() if module in b.modules]
    named = re.compile(
        "|".join([re.escape(f"benchmarks/{stem}.py"), re.escape(module) + r"(?![\w.])"])
        + "".join(rf"|benchmarks\s+run\s+{re.escape(name)}(?![\w-])" for name in runs)  # a line may break
    )
    pages = [path for path, text, marked in _pages() if named.search(text) or marked & quoted]
    return records, pages


def feeds_line(script: Path) -> str:
    """The ``Feeds:`` line ``script`` should carry."""
    records, pages = fed(script)
    said = f"records {', '.join(records)}" if records else "no record (its figures are quoted by hand)"
    return f"Feeds: {said}; pages {', '.join(pages)}." if pages else f"Feeds: {said}."


# a module that feeds no page says which test it backs instead
BACKS_A_TEST = {"learning_spread.py": "Feeds: no record; the margin of tests/training/test_learning.py."}


def write_feeds() -> list[str]:
    """Rewrite every module's ``Feeds:`` line (after its docstring's first paragraph) from :func:`fed`;
    the modules changed."""
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
