"""RankEncoder's re-training loss (Eq. 4-6) against hand-computed values and a naive loop version."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from sentlab.encoders.loading import build_encoder
from sentlab.losses.rankencoder import RankEncoderLoss, rank_regression_loss
from sentlab.losses.simcse import SimCSELoss
from tests.conftest import DEVICE, features_of
from tests.losses.test_simcse import naive_info_nce


def test_rank_regression_loss_by_hand():
    cos = torch.tensor([[1.0, 0.2], [0.4, 1.0]])
    targets = torch.tensor([[1.0, 0.6], [0.6, 1.0]])
    # Eq. 4: mean over all four pairs of (target - cos)^2 = (0 + 0.16 + 0.04 + 0) / 4
    assert float(rank_regression_loss(cos, targets)) == pytest.approx(0.05)
    # Eq. 6 with [0.5, 0.8]: only the two off-diagonal pairs are kept: (0.16 + 0.04) / 2
    assert float(rank_regression_loss(cos, targets, 0.5, 0.8)) == pytest.approx(0.1)
    # no pair in range: 0, not NaN
    assert float(rank_regression_loss(cos, targets, 0.9, 0.95)) == 0.0


def naive_rank_loss(e1_train, e1_corpus, view1, view2, lam, lower, upper, combine, tau=0.05):
    """Eq. 1, 2-3 (via scipy's Spearman), 6 and 5 written out with loops."""
    sims = [[float(np.dot(x, c) / (np.linalg.norm(x) * np.linalg.norm(c))) for c in e1_corpus] for x in e1_train]
    m = len(e1_train)
    kept, total = 0, 0.0
    for i, j in itertools.product(range(m), range(m)):
        target = spearmanr(sims[i], sims[j])[0]
        if lower <= target <= upper:
            cos = float(view1[i] @ view2[j] / (view1[i].norm() * view2[j].norm()))
            kept += 1
            total += (target - cos) ** 2
    l_r = total / kept if kept else 0.0
    l_cl = naive_info_nce(view1, view2, tau=tau)
    return max(lam * l_r, l_cl) if combine == "hinge" else l_cl + lam * l_r


@pytest.mark.parametrize("combine,lam", [("hinge", 0.05), ("hinge", 100.0), ("weighted_sum", 0.05)])
def test_loss_matches_naive_version(tiny_backbone_no_dropout, combine, lam):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", device=str(DEVICE))
    rng = np.random.default_rng(0)
    e1_train = rng.standard_normal((5, 8)).astype(np.float32)
    e1_corpus = rng.standard_normal((40, 8)).astype(np.float32)
    normalize = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    loss = RankEncoderLoss(
        SimCSELoss(model, temperature=0.05),
        normalize(e1_train),
        normalize(e1_corpus),
        lambda_train=lam,
        tau_lower=-0.2,
        tau_upper=0.9,
        combine=combine,
    )
    sentences = ["a man plays the guitar", "a dog runs", "the child reads a book", "a cat sits", "the sky"]
    features = features_of(model, sentences)
    labels = torch.tensor([3, 0, 4, 1, 2], device=DEVICE)  # each sentence's row in e1_train
    value = loss([features], labels)
    with torch.no_grad():
        view = model(features_of(model, sentences))["sentence_embedding"]  # no dropout: both views equal
    expected = naive_rank_loss(e1_train[labels.cpu().numpy()], e1_corpus, view, view, lam, -0.2, 0.9, combine)
    assert value.item() == pytest.approx(expected, rel=1e-4)
    assert set(loss.last_components) == {"l_cl", "l_r"}
    value.backward()  # gradients reach E2
    assert model[0].auto_model.embeddings.word_embeddings.weight.grad is not None


def test_loss_without_labels_is_an_error(tiny_backbone_no_dropout):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", device=str(DEVICE))
    loss = RankEncoderLoss(SimCSELoss(model), np.eye(2, dtype=np.float32), np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match="label"):
        loss([features_of(model, ["a dog"])])
