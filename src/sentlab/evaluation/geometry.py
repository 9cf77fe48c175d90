"""Alignment and uniformity (Wang & Isola 2020; RankCSE App. A.4, Eq. 7-8)."""

from __future__ import annotations

import numpy as np
import torch


def _normalize(x: np.ndarray, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x), dtype=dtype)
    return t / t.norm(dim=1, keepdim=True).clamp_min(1e-12)


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> float:
    """Eq. 7: E ||f(x) - f(x+)||^alpha over positive pairs (rows of ``x`` and ``y``), normalised vectors."""
    return float((_normalize(x) - _normalize(y)).norm(dim=1).pow(alpha).mean())


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """Eq. 8: log E exp(-t ||f(x) - f(y)||^2) over all pairs of distinct rows of ``x``, normalised.

    Squared distances of unit vectors come from the Gram matrix (2 - 2 x.y), one matrix product, so
    long vectors (RankEncoder's rank vectors have one entry per corpus sentence) stay cheap; those
    are multiplied in float32.
    """
    x = np.asarray(x)
    unit = _normalize(x, torch.float64 if x.shape[1] <= 4096 else torch.float32)
    rows, cols = torch.triu_indices(len(unit), len(unit), offset=1)
    distances = (2 - 2 * (unit @ unit.T)[rows, cols]).clamp_min(0).double()
    return float(torch.logsumexp(-t * distances, dim=0) - np.log(distances.numel()))
