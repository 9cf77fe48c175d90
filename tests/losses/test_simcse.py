import math

import pytest
import torch

from sentlab.losses.simcse import SimCSELoss, info_nce
from tests.conftest import features_of


def naive_info_nce(anchors, positives, negatives=None, tau=0.05, hard_weight=0.0):
    """Eq. 1 written out with loops; hard negatives as in SimCSE's supervised objective."""

    def cos(u, v):
        return float(u @ v / (u.norm() * v.norm()))

    total = 0.0
    n = len(anchors)
    for i in range(n):
        logits = [cos(anchors[i], positives[j]) / tau for j in range(n)]
        if negatives is not None:
            logits += [cos(anchors[i], negatives[j]) / tau + (hard_weight if j == i else 0.0) for j in range(n)]
        total += -(logits[i] - math.log(sum(math.exp(x) for x in logits)))
    return total / n


def test_info_nce_matches_eq1_by_hand():
    # two anchors, hand-made: cos(a0,p0)=1, cos(a0,p1)=0, cos(a1,p0)=0.6, cos(a1,p1)=0.8
    a = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    p = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    tau = 0.5
    expected = (-(2.0 - math.log(math.exp(2.0) + math.exp(0.0))) - (1.6 - math.log(math.exp(1.2) + math.exp(1.6)))) / 2
    assert info_nce(a, p, temperature=tau).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("hard_weight", [0.0, 0.7])
def test_info_nce_matches_naive_with_hard_negatives(hard_weight):
    torch.manual_seed(0)
    a, p, n = torch.randn(6, 4), torch.randn(6, 4), torch.randn(6, 4)
    assert info_nce(a, p, temperature=0.05).item() == pytest.approx(naive_info_nce(a, p), rel=1e-5)
    got = info_nce(a, p, n, temperature=0.05, hard_negative_weight=hard_weight).item()
    assert got == pytest.approx(naive_info_nce(a, p, n, hard_weight=hard_weight), rel=1e-5)


def test_unsupervised_loss_uses_two_dropout_views_in_one_forward(tiny_backbone):
    from sentlab.encoders import build_encoder

    model = build_encoder(str(tiny_backbone), "cls")
    model.train()
    features = features_of(model, ["a man plays the guitar", "a dog runs in the park", "the sky is blue"])
    calls = []
    model[0].register_forward_hook(lambda mod, inp, out: calls.append(out["token_embeddings"].shape[0]))
    loss = SimCSELoss(model, temperature=0.05)([features])
    assert calls == [6]  # both views of 3 sentences in one merged forward pass
    assert loss.item() > 0 and torch.isfinite(loss)
    model.eval()  # without dropout the two views are identical: loss equals InfoNCE of identical vectors
    with torch.no_grad():
        emb = model(features_of(model, ["a man plays the guitar", "a dog runs in the park", "the sky is blue"]))
        expected = info_nce(emb["sentence_embedding"], emb["sentence_embedding"]).item()
        assert SimCSELoss(model)([features]).item() == pytest.approx(expected, rel=1e-5)
