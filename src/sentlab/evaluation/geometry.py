"""Alignment and uniformity (Wang & Isola 2020; RankCSE App. A.4, Eq. 7-8)."""

from __future__ import annotations

import numpy as np
import torch


def _normalize(x: np.ndarray) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    return t / t.norm(dim=1, keepdim=True).clamp_min(1e-12)


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> float:
    """Eq. 7: E ||f(x) - f(x+)||^alpha over positive pairs (rows of ``x`` and ``y``), normalised vectors."""
    return float((_normalize(x) - _normalize(y)).norm(dim=1).pow(alpha).mean())


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """Eq. 8: log E exp(-t ||f(x) - f(y)||^2) over all pairs of distinct rows of ``x``, normalised."""
    distances = torch.pdist(_normalize(x), p=2).pow(2)
    return float(torch.logsumexp(-t * distances, dim=0) - np.log(distances.numel()))
