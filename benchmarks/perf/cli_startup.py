"""Start-up cost of the command line: wall and CPU seconds of `sentlab --version`, `sentlab --help` and
`sentlab train --help`, each run in a fresh interpreter, and the seconds until `sentlab train` prints
its first progress line. Prints one JSON object.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

    python -m benchmarks.perf.cli_startup [--repeats 3] [--src OTHER/src]   # --src: time another checkout
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sentlab.presets import PRESETS_DIR


def timed(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sentlab.cli", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def first_progress_line(config: Path, env: dict[str, str]) -> float:
    """Seconds from the start of `sentlab train CONFIG` to its first line on stderr (then it is stopped)."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "sentlab.cli", "train", str(config), "--set", f"train.output_dir={folder}/run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        process.stderr.readline()
        seconds = time.perf_counter() - start
        process.kill()
        process.wait()
    return round(seconds, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--src", default=None, help="put this src folder first on PYTHONPATH (another checkout)")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if args.src:
        env["PYTHONPATH"] = str(Path(args.src).resolve())
    runs = {
        name: [timed(argv, env) for _ in range(args.repeats)]
        for name, argv in (("--version", ["--version"]), ("--help", ["--help"]), ("train --help", ["train", "--help"]))
    }
    config = PRESETS_DIR / "simcse-unsup-minilm-cpu.yaml"
    print(
        json.dumps(
            {
                "src": args.src or "installed",
                "repeats": args.repeats,
                "runs": runs,
                "train_first_line_s": first_progress_line(config, env),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
