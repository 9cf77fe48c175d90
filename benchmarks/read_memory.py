"""Memory and time of reading a training text the way training reads it today
(``sentlab.data.readers.read_sentences``): peak resident memory of the process against the file's
size. Prints one JSON object.

    python benchmarks/read_memory.py                      # the Wikipedia text of the data folder
    python benchmarks/read_memory.py --text my_text.txt
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from sentlab.data.readers import read_sentences
    from sentlab.paths import data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=None, help="default: wikipedia/wiki_sentences.txt")
    args = parser.parse_args()
    text = args.text or data_dir() / "wikipedia" / "wiki_sentences.txt"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    started = time.perf_counter()
    lines = read_sentences(text)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    size = text.stat().st_size
    print(
        json.dumps(
            {
                "text": str(text),
                "file_mb": round(size / 1e6, 1),
                "lines": len(lines),
                "read_s": round(seconds, 2),
                "peak_rss_mb": round(peak / 1e6, 1),
                "rss_growth_mb": round((peak - before) / 1e6, 1),
                "growth_per_file_byte": round((peak - before) / size, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
