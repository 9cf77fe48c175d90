"""The offline install of docs/guides/operations.md, for real: ``scripts/wheelhouse.py`` downloads the
wheelhouse from PyPI into a fresh folder (this needs network), then ``sentlab[minilm,test]`` is
installed from it with ``--no-index`` into a fresh virtual environment that has no site packages but
torch and what torch itself requires (linked from this environment, as a cluster node has its own
torch). The installed sentlab (not this checkout) then lists its presets and encodes a sentence with
the packaged MiniLM. Prints JSON: the wheelhouse's files and size, each step's seconds and exit code,
and the last lines of a failed step.

Feeds: no record (its figures are quoted by hand); pages docs/contributing.md,
docs/guides/operations.md.

    python scripts/offline_install.py --work /tmp/offline [--python-version 3.11 --platform manylinux_2_28_x86_64]

The defaults are this machine's Python and glibc, so the environment built from the wheelhouse can run
here; give a node's values to build its wheelhouse instead (then only the download half runs).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import platform
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def step(name: str, command: list[str], steps: list[dict], **kwargs) -> bool:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    record = {"step": name, "seconds": round(time.perf_counter() - start, 1), "exit_code": done.returncode}
    if done.returncode:
        record["tail"] = (done.stdout + done.stderr).strip().splitlines()[-8:]
    steps.append(record)
    return done.returncode == 0


def torch_site(folder: Path) -> Path:
    """A folder of links to torch and the distributions torch requires, from this environment."""
    needed = [Requirement(r) for r in metadata.requires("torch") or []]
    names = ["torch"] + [r.name for r in needed if r.marker is None or r.marker.evaluate({"extra": ""})]
    folder.mkdir(parents=True)
    for name in names:
        dist = metadata.distribution(name)
        top = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for part in top:
            source = Path(dist.locate_file(part))
            if source.exists() and not (folder / part).exists() and part != "__pycache__":
                (folder / part).symlink_to(source)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="a folder to create (removed first)")
    parser.add_argument("--python-version", default=platform.python_version())  # x.y alone is x.y.0 to pip
    libc, version = platform.libc_ver()
    glibc = version.split(".") if libc == "glibc" else ["2", "17"]  # not glibc: give --platform
    parser.add_argument("--platform", default=f"manylinux_{glibc[0]}_{glibc[1]}_{platform.machine()}")
    args = parser.parse_args()
    marker = args.work / ".offline-install"
    if args.work.exists() and any(args.work.iterdir()) and not marker.is_file():
        sys.exit(f"error: {args.work}: exists and was not made by this benchmark; give an empty or new folder")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    marker.touch()
    house, steps = args.work / "wheelhouse", []
    script = [sys.executable, str(ROOT / "scripts" / "wheelhouse.py"), "--dest", str(house)]
    script += ["--python-version", args.python_version, "--platform", args.platform]
    downloaded = step("download", script, steps)
    files = sorted(p.name for p in house.glob("*")) if house.is_dir() else []
    result = {
        "command": " ".join(sys.argv),
        "python": platform.python_version(),
        "target": {"python": args.python_version, "platform": args.platform},
        "wheelhouse": {"files": len(files), "mb": round(sum(p.stat().st_size for p in house.glob("*")) / 1e6, 1)},
        "steps": steps,
    }
    here = args.python_version == platform.python_version()
    if downloaded and here:
        env = args.work / "env"
        venv.create(env, system_site_packages=False, with_pip=True)
        python = str(env / "bin" / "python")
        site = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        (Path(site) / "node_torch.pth").write_text(str(torch_site(args.work / "node-torch")) + "\n")
        pip = [python, "-m", "pip", "--isolated", "install", "--no-index", "--find-links", str(house)]
        installed = step("install", [*pip, "-c", str(house / "constraints.txt"), "sentlab[minilm,test]"], steps)
        if installed:
            step("presets", [str(env / "bin" / "sentlab"), "presets"], steps, cwd=args.work)
            encode = (
                "import sentlab, numpy; m = sentlab.load('minilm'); "
                "v = m.encode(['a man plays the guitar']); print(sentlab.__file__, numpy.asarray(v).shape)"
            )
            step("encode", [python, "-c", encode], steps, cwd=args.work, env={"HF_HUB_OFFLINE": "1", "PATH": ""})
            where = subprocess.run(
                [python, "-c", "import sentlab; print(sentlab.__file__)"], capture_output=True, text=True, cwd=args.work
            )
            result["installed_from"] = where.stdout.strip()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
