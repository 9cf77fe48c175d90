"""RankCSE's terms (Eq. 2, 4, 5, 6) against naive implementations on small hand-made inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from sentlab.encoders.loading import build_encoder
from sentlab.losses.rankcse import RankCSELoss, js_consistency, listmle_loss, listnet_loss
from sentlab.losses.simcse import SimCSELoss
from tests.conftest import DEVICE, features_of
from tests.losses.test_simcse import naive_info_nce


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [v / sum(e) for v in e]


def naive_js(a, b, tau):
    total = 0.0
    for row_a, row_b in zip(a, b):
        p, q = softmax([x / tau for x in row_a]), softmax([x / tau for x in row_b])
        total += sum(pi * math.log(2 * pi / (pi + qi)) + qi * math.log(2 * qi / (pi + qi)) for pi, qi in zip(p, q))
    return total / len(a)


def naive_listnet(s, t, tau_s, tau_t):
    total = 0.0
    for i, (row_s, row_t) in enumerate(zip(s, t)):
        row_s = [x for j, x in enumerate(row_s) if j != i]
        row_t = [x for j, x in enumerate(row_t) if j != i]
        target, pred = softmax([x / tau_t for x in row_t]), softmax([x / tau_s for x in row_s])
        total += -sum(ti * math.log(pi) for ti, pi in zip(target, pred))
    return total / len(s)


def plackett_luce(scores, order, tau):
    """P(order | scores): prod_k exp(s_order[k]/tau) / sum_{l>=k} exp(s_order[l]/tau)."""
    prob = 1.0
    for k in range(len(order)):
        prob *= math.exp(scores[order[k]] / tau) / sum(math.exp(scores[order[l]] / tau) for l in range(k, len(order)))
    return prob


def test_plackett_luce_probabilities_sum_to_one_and_match_listmle():
    scores = [0.9, 0.2, 0.5]
    total = sum(plackett_luce(scores, perm, 0.5) for perm in itertools.permutations(range(3)))
    assert total == pytest.approx(1.0)
    # by hand for order (0, 2, 1), tau 0.5: e^1.8/(e^1.8+e^0.4+e^1.0) * e^1.0/(e^1.0+e^0.4) * 1
    by_hand = (
        math.exp(1.8)
        / (math.exp(1.8) + math.exp(0.4) + math.exp(1.0))
        * math.exp(1.0)
        / (math.exp(1.0) + math.exp(0.4))
    )
    assert plackett_luce(scores, (0, 2, 1), 0.5) == pytest.approx(by_hand)
    teacher = torch.tensor([[0.8, 0.1, 0.3]])  # teacher order: 0, 2, 1
    assert float(listmle_loss(torch.tensor([scores]), teacher, 0.5)) == pytest.approx(-math.log(by_hand))


def test_terms_match_naive_versions():
    torch.manual_seed(0)
    s, s2, t = torch.rand(4, 4), torch.rand(4, 4), torch.rand(4, 4)
    assert float(js_consistency(s, s2, 0.05)) == pytest.approx(naive_js(s.tolist(), s2.tolist(), 0.05), rel=1e-5)
    assert float(js_consistency(s, s, 0.05)) == pytest.approx(0.0, abs=1e-6)
    assert float(listnet_loss(s, t, 0.05, 0.025)) == pytest.approx(
        naive_listnet(s.tolist(), t.tolist(), 0.05, 0.025), rel=1e-5
    )
    expected = np.mean(
        [
            -math.log(plackett_luce(s[i].tolist(), sorted(range(4), key=lambda j: -t[i, j].item()), 0.05))
            for i in range(4)
        ]
    )
    assert float(listmle_loss(s, t, 0.05)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("distillation", ["listnet", "listmle"])
@pytest.mark.parametrize("use_infonce,beta,gamma", [(True, 1.0, 1.0), (False, 0.0, 1.0), (True, 0.5, 0.0)])
def test_eq6_matches_the_sum_of_naive_terms(tiny_backbone_no_dropout, distillation, use_infonce, beta, gamma):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean", device=str(DEVICE))
    rng = np.random.default_rng(0)
    teachers = [rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)]
    loss = RankCSELoss(
        SimCSELoss(model, temperature=0.05),
        teachers,
        [1 / 3, 2 / 3],
        beta=beta,
        gamma=gamma,
        distillation=distillation,
        tau_student=0.05,
        tau_teacher=0.025,
        use_infonce=use_infonce,
    )
    sentences = ["a man plays the guitar", "a dog runs", "the child reads a book", "a cat sits", "the sky"]
    labels = torch.tensor([2, 0, 4, 1, 3], device=DEVICE)
    value = loss([features_of(model, sentences)], labels)
    with torch.no_grad():
        z = torch.nn.functional.normalize(model(features_of(model, sentences))["sentence_embedding"], dim=-1)
    s = (z @ z.T).tolist()  # no dropout: both views equal
    tn = [t[labels.cpu().numpy()] / np.linalg.norm(t[labels.cpu().numpy()], axis=1, keepdims=True) for t in teachers]
    teacher = (1 / 3 * tn[0] @ tn[0].T + 2 / 3 * tn[1] @ tn[1].T).tolist()
    expected = naive_info_nce(z, z, tau=0.05) if use_infonce else 0.0
    expected += beta * naive_js(s, [list(r) for r in zip(*s)], 0.05)
    if gamma and distillation == "listnet":
        expected += gamma * naive_listnet(s, teacher, 0.05, 0.025)
    elif gamma:
        expected += gamma * np.mean(
            [-math.log(plackett_luce(s[i], sorted(range(5), key=lambda j: -teacher[i][j]), 0.05)) for i in range(5)]
        )
    assert value.item() == pytest.approx(expected, rel=1e-4)
    assert set(loss.last_components) == {
        n for n, on in (("infonce", use_infonce), ("consistency", beta), ("rank", gamma)) if on
    }
