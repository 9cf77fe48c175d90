"""Progress for long steps: one line per stage on stderr, and whether progress bars are shown.

The command line turns both off with ``--quiet``; library callers get them by default.
"""

from __future__ import annotations

import sys

_state = {"quiet": False}


def set_quiet(quiet: bool) -> None:
    _state["quiet"] = quiet


def bars() -> bool:
    """Show progress bars?"""
    return not _state["quiet"]


def say(message: str) -> None:
    """One progress line on stderr (stdout stays for results)."""
    if not _state["quiet"]:
        print(message, file=sys.stderr, flush=True)
