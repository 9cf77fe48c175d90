"""sentlab: learn sentence embeddings with little or no labelled data, and measure them honestly.

The Python API (:mod:`sentlab.api`): :func:`train` a preset or config, :func:`load` a trained model
with its scorer, :func:`evaluate` it; the losses are in :mod:`sentlab.losses`.
"""

from __future__ import annotations

from typing import Any

from sentlab.errors import SentlabError

__version__ = "0.2.0"
__all__ = ["SentlabError", "__version__", "evaluate", "load", "train"]


def __getattr__(name: str) -> Any:
    """``sentlab.train`` / ``load`` / ``evaluate``, imported on first use (the command line starts
    without loading torch)."""
    if name in ("train", "load", "evaluate"):
        from sentlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'sentlab' has no attribute {name!r}")
