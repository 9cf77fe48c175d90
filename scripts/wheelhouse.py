"""Build a wheelhouse for installing sentlab on a machine without network (a GPU cluster's nodes).

Run it on a machine with network, for the target's Python and platform; copy the folder over; install
there with pip's ``--no-index`` after the cluster's own torch build:

    python scripts/wheelhouse.py --python-version 3.12 --platform manylinux_2_28_x86_64 --dest wheelhouse
    # on the machine without network, torch already installed (the cluster's CUDA build of 2.13.0):
    pip install --no-index --find-links wheelhouse -c wheelhouse/constraints.txt "sentlab[minilm,test]"

The folder holds sentlab's own wheel, a wheel of every version pinned in ``constraints.txt`` (for
the platform and every older glibc's, :func:`compatible_platforms`) except torch (the cluster's build is used, so its CUDA libraries match the driver), and
``constraints.txt`` without torch. Wheels are binary only, for the given Python and platform; normflows
publishes no wheel, so it is built from its source distribution (pure Python). ``--dry-run`` prints
the pip commands instead of running them.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FROM_SOURCE = {"normflows"}  # no wheel on PyPI: built with pip wheel (pure Python, any platform)
SKIPPED = {"torch"}  # the cluster's own build


def pins(constraints: Path) -> list[str]:
    """The ``name==version`` lines of a constraints file."""
    lines = (line.split("#", 1)[0].strip() for line in constraints.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def name_of(pin: str) -> str:
    return pin.split("==", 1)[0].strip().lower().replace("_", "-")


LEGACY = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}  # PEP 600's older names of glibc 2.17 / 2.12 / 2.5


def compatible_platforms(platform: str) -> list[str]:
    """Every wheel platform a machine of ``platform`` installs, newest first. pip matches a
    ``--platform`` exactly, so ``manylinux_2_28_x86_64`` alone would not find a wheel published only
    as ``manylinux_2_17_x86_64`` / ``manylinux2014_x86_64``; a glibc 2.28 machine runs those too
    (PEP 600), so each older glibc's tag is passed as well."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if not match:
        return [platform]
    glibc, arch = int(match.group(1)), match.group(2)
    tags = []
    for minor in range(glibc, 4, -1):
        tags.append(f"manylinux_2_{minor}_{arch}")
        if minor in LEGACY:
            tags.append(f"{LEGACY[minor]}_{arch}")
    return tags


def commands(
    dest: Path, python_version: str, platform: str, constraints: Path, pins: list[str] | None = None
) -> list[list[str]]:
    """The pip commands that fill ``dest`` with ``pins`` (default: every pin of ``constraints`` but
    torch), after :func:`write_requirements` wrote ``dest/requirements.txt``: sentlab's own wheel, a
    binary wheel of each pin for the target, and the pins PyPI has no wheel of built from source."""
    pip = [sys.executable, "-m", "pip"]
    platforms = [flag for tag in compatible_platforms(platform) for flag in ("--platform", tag)]
    target = ["--python-version", python_version, *platforms, "--only-binary=:all:"]
    chosen = kept_pins(constraints) if pins is None else pins
    source = [pin for pin in chosen if name_of(pin) in FROM_SOURCE]
    return [
        [*pip, "wheel", "--no-deps", "--wheel-dir", str(dest), str(ROOT)],
        [*pip, "download", "--no-deps", *target, "--dest", str(dest), "-r", str(dest / "requirements.txt")],
        *([[*pip, "wheel", "--no-deps", "--wheel-dir", str(dest), *source]] if source else []),
    ]


def kept_pins(constraints: Path) -> list[str]:
    """Every pin of ``constraints`` but torch's (the cluster's own build)."""
    return [pin for pin in pins(constraints) if name_of(pin) not in SKIPPED]


def write_requirements(dest: Path, chosen: list[str]) -> None:
    """``dest/requirements.txt``: the binary wheels to download (the pins not built from source)."""
    dest.mkdir(parents=True, exist_ok=True)
    binary = [pin for pin in chosen if name_of(pin) not in FROM_SOURCE]
    (dest / "requirements.txt").write_text("\n".join(binary) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-version", required=True, help="the target's Python, e.g. 3.12")
    parser.add_argument("--platform", required=True, help="the target's wheel platform, e.g. manylinux_2_28_x86_64")
    parser.add_argument(
        "--dest", type=Path, default=Path("wheelhouse"), help="the folder to fill (default: wheelhouse)"
    )
    parser.add_argument(
        "--constraints", type=Path, default=ROOT / "constraints.txt", help="the pins (default: the checkout's)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the pip commands, run nothing (they read DEST/requirements.txt, which a real run writes first)",
    )
    args = parser.parse_args(argv)
    if not args.constraints.is_file():
        print(f"error: {args.constraints}: no such constraints file", file=sys.stderr)
        return 2
    kept = kept_pins(args.constraints)
    planned = commands(args.dest, args.python_version, args.platform, args.constraints)
    if args.dry_run:
        print("\n".join(shlex.join(command) for command in planned))
        return 0
    write_requirements(args.dest, kept)
    (args.dest / "constraints.txt").write_text("\n".join(kept) + "\n", encoding="utf-8")
    for command in planned:
        print("+ " + shlex.join(command), file=sys.stderr)
        if subprocess.run(command).returncode != 0:
            print(f"error: {shlex.join(command)} failed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
