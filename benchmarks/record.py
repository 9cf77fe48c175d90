"""Records: ``benchmarks/records/NAME.json``, what a page needs to quote a figure.

A record holds the command line, the date, the commit (and whether the working tree differed from
it), the machine (CPU model and the flags that decide its speed, cores, memory, GPU, Python, torch and
sentlab), the seconds and the command's JSON result. A figure a page quotes through a marker is read
from its record when the docs are built (``docs/figures.yaml`` names each figure's record and key;
``docs/hooks.py`` writes it in), so a marker cannot quote a figure no record holds.

This module is the records' one reader and writer; the runner (``python -m benchmarks run NAME``,
``benchmarks/__main__.py``) is the only caller that writes. The result is the last JSON object the
command printed at the start of a line, or the file the benchmark declares (an earlier file there is
moved aside first). The commit and machine are read before the run. A command that fails or prints
no JSON leaves the record as it was; so does a GPU part file of a failed or ``--tiny`` part. Like asv,
records are files in the repository, one per named run; unlike asv (runs of milliseconds, many
repeats a commit), a run here takes minutes, so a record is one run, replaced by the next run of the
same name; ``git log -p benchmarks/records/NAME.json`` is its history over commits.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "records"
# the CPU flags that decide a benchmark's speed (vector width, bf16 / int8 units)
CODE_FOLDERS = ("src/", "benchmarks/", "scripts/", "tests/", "docs/")  # an untracked file here is code: its text
CODE_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".toml", ".md", ".txt", ".json")
FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "asimd", "sve")
PROBE = (
    "import json, torch\n"
    "d = torch.cuda.is_available()\n"
    "gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if d else []\n"
    "try:\n    import sentlab; version = sentlab.__version__\nexcept Exception:\n    version = None\n"
    "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'gpus': gpus,"
    " 'capability': list(torch.cuda.get_device_capability(0)) if d else None,"
    " 'bf16': bool(d and torch.cuda.is_bf16_supported()), 'sentlab': version}))"
)


def _cpu() -> dict:
    found: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key in ("model name", "cpu family", "flags", "Features") and key not in found:
                found[key] = value
    except OSError:
        pass
    model = found.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in found:
        model += f" (family {found['cpu family']})"
    flags = set((found.get("flags") or found.get("Features") or "").split())
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"model": model, "flags": [f for f in FLAGS if f in flags], "cores": usable}


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine() -> dict:
    """The machine as this Python sees it. torch and sentlab are read in a child process: a caller
    may have just installed them (the GPU check's ``install``)."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (ValueError, IndexError):
        found = None
    if found is None:
        found = {"torch": None, "gpus": [], "error": (done.stderr or done.stdout)[-300:]}
    return {
        "cpu": _cpu(),
        "memory_gb": _memory_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        **found,
    }


def commit() -> dict:
    """The checkout's commit; where the tree differs from it (tracked files changed, or files git does
    not ignore added; the records themselves, outputs, aside), the files and the diff itself (``git diff HEAD`` and each untracked file as a
    new file's diff) with its sha256, so a run on a changed tree names the change it ran with. None
    outside git."""

    def git(*args: str, ok: tuple[int, ...] = (0,)) -> str | None:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode in ok else None

    sha = git("rev-parse", "HEAD")
    if sha is None:
        return {"sha": None, "dirty": None}
    code = ["--", ".", f":(exclude){RECORDS.relative_to(ROOT).as_posix()}"]  # records are outputs, not code
    tracked = (git("diff", "HEAD", "--name-only", *code) or "").split()
    untracked = (git("ls-files", "--others", "--exclude-standard", "-z", *code) or "").split("\0")
    untracked = [name for name in untracked if name]
    found: dict = {"sha": sha.strip(), "dirty": bool(tracked or untracked)}
    if found["dirty"]:
        diff = git("diff", "HEAD", *code) or ""
        for name in untracked:  # code as a new file's diff (--no-index exits 1: they differ); anything else
            if name.startswith(CODE_FOLDERS) and name.endswith(CODE_SUFFIXES):  # by name and sha256 only
                diff += git("diff", "--no-index", "--", os.devnull, name, ok=(0, 1)) or ""
            else:
                digest = hashlib.sha256((ROOT / name).read_bytes()).hexdigest() if (ROOT / name).is_file() else "?"
                diff += f"untracked {name} sha256 {digest}\n"
        found |= {"changed": tracked, "untracked": untracked, "diff_sha256": hashlib.sha256(diff.encode()).hexdigest()}
        found["diff"] = diff
    return found


def provenance() -> dict:
    """The commit and the machine, read before a run (the tree as it ran); an error here is kept as
    the error, never lost with the run's result."""
    found = {}
    for key, read in (("commit", commit), ("machine", machine)):
        try:
            found[key] = read()
        except Exception as err:  # noqa: BLE001 - provenance is best effort, the result is not
            found[key] = {"error": f"{type(err).__name__}: {err}"}
    return found


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def last_json(text: str) -> dict | list | None:
    """The last JSON object (or list) printed in ``text`` that starts a line: one line or an indented
    block, whatever is printed after it."""
    decoder, found, offset = json.JSONDecoder(), None, 0
    for line in text.splitlines(keepends=True):
        if line.startswith(("{", "[")):
            try:
                found = decoder.raw_decode(text, offset)[0]
            except ValueError:
                pass
        offset += len(line)
    return found


def write(name: str, record: dict, folder: Path = RECORDS) -> Path:
    from sentlab.paths import write_text_atomic  # the one atomic writer

    path = folder / f"{name}.json"
    write_text_atomic(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return path


def read(name: str, folder: Path = RECORDS) -> dict:
    path = folder / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no record {name!r} in {folder} (python -m benchmarks run {name})")
    return json.loads(path.read_text("utf-8"))


def run(
    name: str, command: list[str], result_file: Path | None, folder: Path = RECORDS, *, declared: str | None = None
) -> int:
    """Run ``command`` (its output passes through; no hub at run time), then keep its JSON as the record
    ``name`` with ``declared`` (the command as the registry declares it; ``command`` joined otherwise)."""
    if result_file is not None and result_file.exists():  # an earlier run's file must not pass for this one's
        aside = result_file.with_name(result_file.name + ".before-record")
        result_file.replace(aside)
        print(f"benchmarks: moved the earlier {result_file} to {aside}", file=sys.stderr)
    known, date, start = provenance(), now(), time.perf_counter()
    lines = []
    try:
        # no hub at run time; `python` is this interpreter, whose machine block the record holds
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": path}
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as child:
            for line in child.stdout:
                sys.stdout.write(line)
                lines.append(line)
        code = child.returncode
    except OSError as err:
        print(f"benchmarks: cannot run {command[0]}: {err.strerror}", file=sys.stderr)
        return 127
    seconds = round(time.perf_counter() - start, 1)
    if code:
        print(f"benchmarks: the command exited with {code}; record {name!r} left as it was", file=sys.stderr)
        return code
    if result_file is not None:
        try:
            result = json.loads(result_file.read_text("utf-8"))
        except (OSError, ValueError) as err:
            print(f"benchmarks: {result_file}: no JSON result ({err}); record {name!r} left as it was", file=sys.stderr)
            return 1
    else:
        result = last_json("".join(lines))
        if result is None:
            print(f"benchmarks: the command printed no JSON; record {name!r} left as it was", file=sys.stderr)
            return 1
    record = {
        "name": name,
        "command": declared or shlex.join(command),
        "date": date,
        "seconds": seconds,
        **known,
        "result": result,
    }
    print(f"benchmarks: wrote {write(name, record, folder)}", file=sys.stderr)
    return 0


def imported(name: str, source: Path, folder: Path = RECORDS, part: str | None = None) -> int:
    """A JSON written on another machine that carries its own command, date and machine (the GPU
    check's part files), kept as the record ``name``."""
    try:
        data = json.loads(source.read_text("utf-8"))
    except (OSError, ValueError) as err:
        print(f"benchmarks: {source}: not a JSON file ({err})", file=sys.stderr)
        return 1
    missing = [key for key in ("command", "date", "machine") if key not in data]
    if missing:
        print(
            f"benchmarks: {source}: has no {', '.join(missing)}; run the command through python -m benchmarks run",
            file=sys.stderr,
        )
        return 1
    if part is not None and data.get("part") != part:
        print(f"benchmarks: {source}: a {data.get('part')!r} part, not {part!r} as {name!r} says", file=sys.stderr)
        return 1
    if data.get("status", "ok") != "ok" or data.get("tiny"):
        why = (
            "a --tiny run" if data.get("tiny") else f"a part whose status is {data['status']!r} {data.get('error', '')}"
        )
        print(f"benchmarks: {source}: {why} is not kept as a record", file=sys.stderr)
        return 1
    record = {"name": name, "command": data["command"], "date": data["date"], "seconds": data.get("seconds")}
    record |= {"commit": data.get("commit"), "machine": data["machine"], "imported_from": source.name, "result": data}
    print(f"benchmarks: wrote {write(name, record, folder)}", file=sys.stderr)
    return 0


def all_records(folder: Path = RECORDS) -> list[dict]:
    """Every record of ``folder``, by name (the one listing the docs and ``--list`` share)."""
    return [read(path.stem, folder) for path in sorted(folder.glob("*.json"))]


def listing(folder: Path = RECORDS) -> list[str]:
    rows = []
    for r in all_records(folder):
        where = ", ".join(r["machine"].get("gpus") or []) or r["machine"].get("cpu", {}).get("model", "?")
        rows.append(f"{r['name']}\t{r['date'][:10]}\t{where}\t{r['command']}")
    return rows
