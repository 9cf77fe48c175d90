"""Rank vectors of RankEncoder (Seonwoo et al. 2023, Eq. 2-3 and App. A.1).

For an input x and a corpus C = [x_1..x_n] with (L2-normalised) base vectors V, the rank vector
lists, for every corpus sentence, its rank by cosine similarity to x (Eq. 2), normalised by g
(Eq. 3):

    g(r) = (r - mean(r)) / (sqrt(n) * std(r))      (population std)

so that ``g(r_a) . g(r_b)`` is the Pearson correlation of the two rank lists, i.e. Spearman's rank
correlation of the two similarity lists (App. A.1, Eq. 8-9). The normalised vectors have unit norm.

Ties: tied similarities get the average of the ranks they span (scipy's ``rankdata(method="average")``,
which ``scipy.stats.spearmanr`` uses), so the inner product equals ``spearmanr`` exactly, ties or
not. The authors' code ranks ties by ``argsort`` order instead; both agree when there are no ties,
which is the normal case for float cosines (ties come from duplicate corpus sentences).

Ranking is the cost of a rank vector (an n log n sort per input). On an accelerator the rows are
sorted by torch on the device; on the CPU by numpy's SIMD argsort, one row per thread (several
times faster than torch's CPU sort for 100k-long rows; ``benchmarks/perf/rankencoder_scoring.py``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import Tensor

from sentlab import devices


def average_ranks(scores: Tensor) -> Tensor:
    """Ranks (0-based, float32) of each row's entries in ascending order; ties get their mean rank."""
    if scores.dim() != 2:
        raise ValueError(f"expected a 2-D tensor of scores, got shape {tuple(scores.shape)}")
    if devices.runs_on_host(scores.device):
        return torch.from_numpy(_average_ranks_numpy(scores.detach().float().cpu().numpy()))
    return _average_ranks_torch(scores)


def _average_ranks_numpy(scores: np.ndarray, normalize: bool = False) -> np.ndarray:
    """Average ranks per row; with ``normalize``, Eq. 3 applied in the same pass.

    A row costs one argsort and one scatter; ties (float32 similarities to a 100k corpus collide a few
    hundred times per row) only touch the tied positions.
    """
    b, n = scores.shape
    ranks = np.empty((b, n), dtype=np.float32)
    positions = np.arange(n, dtype=np.float64)
    centre = (n - 1) / 2  # the mean of average ranks, ties or not
    base_norm = float(np.sqrt(((positions - centre) ** 2).sum()))
    untied = ((positions - centre) / base_norm).astype(np.float32) if normalize else positions.astype(np.float32)

    def rank_row(i: int) -> None:
        row = scores[i]
        order = np.argsort(row)
        sorted_row = row[order]
        tied = np.flatnonzero(sorted_row[1:] == sorted_row[:-1])  # k: sorted[k] == sorted[k + 1]
        if tied.size == 0:
            ranks[i, order] = untied
            return
        members = np.union1d(tied, tied + 1)  # sorted positions that belong to a run of equal values
        continues = np.isin(members - 1, tied)  # m continues the run of m - 1
        group = np.cumsum(~continues) - 1
        average = (np.bincount(group, weights=members) / np.bincount(group))[group]
        if not normalize:
            values = untied.copy()
            values[members] = average
        else:
            norm_sq = base_norm**2 - ((members - centre) ** 2).sum() + ((average - centre) ** 2).sum()
            if norm_sq <= 1e-12 * base_norm**2:  # every score equal: no ranking
                ranks[i] = 0.0
                return
            norm = np.sqrt(norm_sq)
            values = untied * np.float32(base_norm / norm)
            values[members] = (average - centre) / norm
        ranks[i, order] = values

    workers = max(1, min(b, torch.get_num_threads()))
    if workers == 1:
        for i in range(b):
            rank_row(i)
    else:
        with ThreadPoolExecutor(workers) as pool:  # numpy's sort releases the GIL
            list(pool.map(rank_row, range(b)))
    return ranks


def _average_ranks_torch(scores: Tensor) -> Tensor:
    n = scores.size(1)
    sorted_scores, order = scores.sort(dim=1)
    positions = torch.arange(n, device=scores.device, dtype=torch.float32).expand_as(sorted_scores)
    differs = sorted_scores[:, 1:] != sorted_scores[:, :-1]
    edge = torch.ones_like(differs[:, :1])
    starts = torch.cat([edge, differs], dim=1)  # first position of a run of equal scores
    ends = torch.cat([differs, edge], dim=1)  # last position of a run
    first = torch.where(starts, positions, torch.zeros_like(positions)).cummax(dim=1).values
    last = torch.where(ends, positions, torch.full_like(positions, n)).flip(1).cummin(dim=1).values.flip(1)
    ranks = torch.empty_like(positions)
    ranks.scatter_(1, order, (first + last) / 2)
    return ranks


def normalize_ranks(ranks: Tensor) -> Tensor:
    """Eq. 3: centre each row and scale it to unit norm (= divide by sqrt(n) * population std).

    A row whose entries are all equal has no ranking; it becomes the zero vector.
    """
    centred = ranks - ranks.mean(dim=1, keepdim=True)
    norm = centred.norm(dim=1, keepdim=True)
    return torch.where(norm > 0, centred / norm.clamp_min(1e-30), torch.zeros_like(centred))


def rank_vectors(queries: Tensor, corpus: Tensor, normalized: bool = False) -> Tensor:
    """Eq. 2: normalised rank vectors (rows) of ``queries`` against ``corpus`` (n x d).

    Args:
        queries: (b, d) base-encoder vectors of the inputs.
        corpus: (n, d) base-encoder vectors of the corpus.
        normalized: both are already L2-normalised (skips the normalisation).
    """
    if not normalized:
        queries = torch.nn.functional.normalize(queries.float(), dim=-1)
        corpus = torch.nn.functional.normalize(corpus.float(), dim=-1)
    similarities = queries.float() @ corpus.float().T
    if devices.runs_on_host(similarities.device):
        return torch.from_numpy(_average_ranks_numpy(similarities.cpu().numpy(), normalize=True))
    return normalize_ranks(_average_ranks_torch(similarities))
