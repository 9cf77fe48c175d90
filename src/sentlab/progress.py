"""Progress for long steps: one line per stage on stderr, and whether progress bars are shown.

The command line turns both off with ``--quiet``; library callers get them by default.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_state: dict = {"quiet": False, "log": None}


def set_quiet(quiet: bool) -> None:
    _state["quiet"] = quiet


def bars() -> bool:
    """Show progress bars?"""
    return not _state["quiet"]


def say(message: str) -> None:
    """One progress line on stderr (stdout stays for results); inside :func:`run_log`, also a
    timestamped line of the run's log file, quiet or not."""
    if not _state["quiet"]:
        print(message, file=sys.stderr, flush=True)
    if _state["log"] is not None:
        with _state["log"].open("a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")


@contextmanager
def run_log(path: Path) -> Iterator[None]:
    """While active, every :func:`say` line is appended to ``path`` (a training run's ``run.log``)."""
    previous, _state["log"] = _state["log"], Path(path)
    try:
        yield
    finally:
        _state["log"] = previous
