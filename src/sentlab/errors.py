"""User-facing errors.

Every problem a user can cause (a missing file, a malformed line, an unknown model name, a typo in a
config key, a diverging loss) is raised as a :class:`SentlabError` subclass with a one-line message
that names the file / line / key. The command line prints that line and exits non-zero.
"""

from __future__ import annotations


def extra_hint(extra: str) -> str:
    """How to install one of sentlab's extras, as every message says it: sentlab is installed from its
    checkout (it is not on PyPI; docs/getting-started.md)."""
    return f"the {extra} extra: pip install -e '.[{extra}]' in sentlab's checkout"


class SentlabError(Exception):
    """Base class for errors that are the user's to fix; ``str(err)`` is a one-line message."""

    exit_code = 2


class DataError(SentlabError):
    """A data file is missing, empty, not UTF-8, or has a malformed row."""


class ModelLoadError(SentlabError):
    """A model name / path / pooler cannot be resolved."""


class ConfigError(SentlabError):
    """A training config has an unknown key or an invalid value."""


class TrainingDivergedError(SentlabError):
    """The training loss became NaN or infinite (at optimizer step ``step`` when known)."""

    exit_code = 3

    def __init__(self, message: str, step: int | None = None):
        super().__init__(message)
        self.step = step
