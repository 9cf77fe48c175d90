"""``sentlab encode --backend onnx --precision int8`` against torch fp32, end to end through the command.

Feeds: records encode-int8-minilm; pages docs/contributing.md, docs/guides/inference.md,
docs/results.md.

Each setting encodes the first ``--sentences`` Wikipedia lines and the first ``--small`` lines, in
alternating rounds (so drift in the machine's speed hits every setting), each a fresh ``sentlab encode``
process; a setting's rate is (sentences - small) / (time - small's time), so the process start, the
model load and the export (cached by a warm-up run) are differenced out. The ratio is int8's rate over
torch's in the same round; the median over rounds is the figure. Feeds the inference guide's int8
line (record ``encode-int8-minilm``). Prints one JSON object.

    python -m benchmarks.perf.encode_int8 --sentences 8000 --small 100 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = {"torch fp32": ["--backend", "torch"], "onnx int8": ["--backend", "onnx", "--precision", "int8"]}


def encode_seconds(model: str, source: Path, flags: list[str], out: Path) -> float:
    """Wall seconds of one ``sentlab encode`` process (its output removed first: nothing is reused)."""
    for stale in out.parent.glob(out.name + "*"):
        stale.unlink()
    command = [sys.executable, "-m", "sentlab.cli", "encode", "--model", model, "--input", str(source)]
    command += ["--output", str(out), "--quiet", *flags]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=8000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from sentlab.paths import data_dir

    corpus = data_dir() / "wikipedia" / "wiki_sentences.txt"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = {}
        with corpus.open(encoding="utf-8") as lines:
            head = [line for _, line in zip(range(args.sentences), lines)]
        if len(head) < args.sentences:
            raise SystemExit(f"{corpus}: {len(head)} lines, fewer than --sentences {args.sentences}")
        for n in (args.sentences, args.small):
            files[n] = work / f"first-{n}.txt"
            files[n].write_text("".join(head[:n]), encoding="utf-8")
        for flags in SETTINGS.values():  # the tables and the export, made once before any timing
            for n in files:
                encode_seconds(args.model, files[n], flags, work / "warm.npy")
        rounds = []
        for _ in range(args.rounds):
            seconds = {
                name: {n: encode_seconds(args.model, files[n], flags, work / "out.npy") for n in files}
                for name, flags in SETTINGS.items()
            }
            rates = {
                name: (args.sentences - args.small) / (s[args.sentences] - s[args.small]) for name, s in seconds.items()
            }
            rounds.append({"seconds": seconds, "rates": rates, "ratio": rates["onnx int8"] / rates["torch fp32"]})
    print(
        json.dumps(
            {
                "model": args.model,
                "sentences": args.sentences,
                "small": args.small,
                "cpu_count": os.cpu_count(),
                "rounds": rounds,
                "rate_median": {name: statistics.median(r["rates"][name] for r in rounds) for name in SETTINGS},
                "ratio_median": statistics.median(r["ratio"] for r in rounds),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
