"""Rank vectors (Eq. 2-3): inner products equal scipy's Spearman, ties included, on CPU and torch paths."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import rankdata, spearmanr

from sentlab.rank.vectors import (
    _average_ranks_numpy,
    _average_ranks_torch,
    average_ranks,
    normalize_ranks,
    rank_vectors,
)


def test_average_ranks_hand_computed():
    scores = torch.tensor([[0.3, 0.1, 0.3, 0.2, 0.1, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    expected = torch.tensor([[3.5, 0.5, 3.5, 2.0, 0.5, 5.0], [2.5] * 6])
    assert torch.equal(average_ranks(scores), expected)
    assert torch.equal(_average_ranks_torch(scores), expected)


@pytest.mark.parametrize("ties", [False, True])
def test_numpy_and_torch_paths_match_scipy_rankdata(ties):
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((7, 300)).astype(np.float32)
    if ties:
        scores = np.round(scores, 1)  # many ties
    expected = rankdata(scores, axis=1) - 1
    np.testing.assert_array_equal(_average_ranks_numpy(scores), expected)
    np.testing.assert_array_equal(_average_ranks_torch(torch.from_numpy(scores)).cpu().numpy(), expected)


def test_g_gives_unit_vectors_and_constant_rows_give_zero():
    ranks = torch.tensor([[0.0, 1.0, 2.0, 3.0], [1.5, 1.5, 1.5, 1.5]])
    g = normalize_ranks(ranks)
    # Eq. 3 by hand: (r - 1.5) / (sqrt(4) * std), std = sqrt(1.25)
    np.testing.assert_allclose(g[0].cpu().numpy(), (np.arange(4) - 1.5) / (2 * np.sqrt(1.25)), rtol=1e-6)
    assert torch.equal(g[1], torch.zeros(4))


@pytest.mark.parametrize("ties", [False, True])
def test_inner_product_of_rank_vectors_is_spearman(ties):
    torch.manual_seed(0)
    corpus = torch.randn(500, 16)
    queries = torch.randn(6, 16)
    if ties:
        corpus = torch.cat([corpus, corpus[:100]])  # duplicated corpus sentences tie exactly
    u = rank_vectors(queries, corpus)
    sims = (
        (torch.nn.functional.normalize(queries, dim=-1) @ torch.nn.functional.normalize(corpus, dim=-1).T).cpu().numpy()
    )
    matrix = (u @ u.T).cpu().numpy()  # Eq. 4's targets
    for i in range(6):
        for j in range(6):
            expected = spearmanr(sims[i], sims[j])[0]
            assert u[i] @ u[j] == pytest.approx(expected, abs=2e-6)
            assert matrix[i, j] == pytest.approx(expected, abs=2e-6)
    np.testing.assert_allclose(np.diag(matrix), 1.0, atol=1e-6)


def test_rank_vector_is_g_of_the_ranks_of_the_cosines():
    torch.manual_seed(1)
    corpus = torch.randn(50, 8)
    q = torch.randn(1, 8)
    cosines = (
        (torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(corpus, dim=-1).T)[0].cpu().numpy()
    )
    ranks = rankdata(cosines) - 1
    expected = (ranks - ranks.mean()) / (np.sqrt(len(ranks)) * ranks.std())  # Eq. 3, population std
    np.testing.assert_allclose(rank_vectors(3.0 * q, corpus)[0].cpu().numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("ties", [False, True])
def test_fused_cpu_normalisation_equals_the_two_step_torch_path(ties):
    rng = np.random.default_rng(3)
    scores = rng.standard_normal((5, 200)).astype(np.float32)
    if ties:
        scores = np.round(scores, 1)
        scores[4] = 1.0  # a row with no ranking at all
    fused = torch.from_numpy(_average_ranks_numpy(scores, normalize=True))
    two_step = normalize_ranks(_average_ranks_torch(torch.from_numpy(scores)))
    torch.testing.assert_close(fused, two_step, rtol=0, atol=1e-6)
