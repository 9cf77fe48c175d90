"""Evaluations: STS (SentEval / SimCSE protocol), geometry (alignment, uniformity).

The names below are imported on first use (PEP 562), so that importing a light submodule such as
``sentlab.evaluation.results`` (the command line's parser does) does not import torch and
sentence-transformers.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EvalReport": "results",
    "TaskResult": "results",
    "CosineScorer": "scoring",
    "PairScorer": "scoring",
    "evaluate_sts": "sts",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sentlab.evaluation' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sentlab.evaluation.{_EXPORTS[name]}"), name)
