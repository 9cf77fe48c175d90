"""Every method's loss, forward and backward in fp32 and in half precision, on a tiny model with the
temperatures and learning rates of its preset: the loss and gradient errors against fp32, whether
anything was not finite, and whether a gradient scaler would skip the step.

Half precision runs the way the engine runs it (:func:`sentlab.precision.networks_in_half_precision`:
the networks under autocast, the loss's arithmetic in float32) and, for sentlab's own losses, also
the way a user's script may (the whole loss inside ``torch.autocast``: the losses' float32 regions
must hold there too). fp16 steps go through ``torch.amp.GradScaler``, as the trainer's fp16 does.
Used by ``tests/losses/test_half_precision.py`` and ``benchmarks/half_precision_losses.py``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.precision import Precision, networks_in_half_precision
from sentlab.training.config import load_config
from tests.tiny_presets import CONFIGS, sentences

BATCH = 8
UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11}  # half the distance from 1 to the next number


def tolerances(dtype: str) -> tuple[float, float]:
    """(loss tolerance relative to 1 + |loss|, norm-wise relative gradient tolerance).

    Derivation, with u the unit roundoff of the half dtype: the tiny encoder (embeddings, 2 layers of
    6 matrix products, pooling) rounds its activations to the half dtype about 16 times on the way to
    a sentence vector, each rounding off by at most u relative, so a vector is off by at most ~16 u
    relative. The losses are softmax / sigmoid cross-entropies of scores built from those vectors,
    whose derivative in each score is at most 1 in size, so the loss moves by at most twice the
    scores' relative error times their scale: 32 u (1 + |L|). Gradients run the chain twice (forward
    and backward, both rounded), so 64 u, norm-wise. bf16: 0.125 / 0.25; fp16: 0.016 / 0.031.
    """
    u = UNIT_ROUNDOFF[dtype]
    return 32 * u, 64 * u


@dataclass
class LossCase:
    name: str
    preset: str  # the preset whose temperatures and learning rate the loss uses
    build: Callable[[Path], tuple[nn.Module, list[dict[str, torch.Tensor]], torch.Tensor | None]]
    own_loss: bool = True  # sentlab's own loss (its float32 regions are checked under an outer autocast too)

    @property
    def learning_rate(self) -> float:
        return load_config(CONFIGS / f"{self.preset}.yaml").train.learning_rate

    def setting(self, section: str, key: str):
        cfg = load_config(CONFIGS / f"{self.preset}.yaml")
        return getattr(getattr(cfg, section), key)


def tiny_encoder(backbone: Path, pooler: str = "mean") -> SentenceTransformer:
    """Mean pooling: a tiny random BERT's [CLS] vectors are nearly identical for every sentence, which
    puts an in-batch loss at log(batch) with a gradient near 0 that rounding noise swamps."""
    from sentlab.encoders.loading import build_encoder

    return build_encoder(str(backbone), pooler)


def features(model: SentenceTransformer, texts: list[str]) -> dict[str, torch.Tensor]:
    return dict(model.tokenize(texts))


def _simcse(case: LossCase, columns: int):
    from sentlab.losses.simcse import SimCSELoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        lines = sentences(BATCH * columns, seed=3)
        cols = [features(model, lines[i * BATCH:(i + 1) * BATCH]) for i in range(columns)]
        return SimCSELoss(model, temperature=case.setting("loss", "temperature")), cols, None
    return build


def _rankencoder(case: LossCase):
    from sentlab.losses.rankencoder import RankEncoderLoss
    from sentlab.losses.simcse import SimCSELoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        rng = np.random.default_rng(0)
        unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
        base, corpus = unit(rng.normal(size=(BATCH, 16))), unit(rng.normal(size=(64, 16)))
        r = load_config(CONFIGS / f"{case.preset}.yaml").rank
        loss = RankEncoderLoss(SimCSELoss(model, temperature=case.setting("loss", "temperature")), base, corpus,
                               lambda_train=r.lambda_train, tau_lower=r.tau_lower, tau_upper=r.tau_upper,
                               combine="weighted_sum")  # both terms reach the gradient (the hinge keeps one)
        return loss, [features(model, sentences(BATCH, seed=3))], torch.arange(BATCH)
    return build


def _rankcse(case: LossCase):
    from sentlab.losses.rankcse import RankCSELoss
    from sentlab.losses.simcse import SimCSELoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        r = load_config(CONFIGS / f"{case.preset}.yaml").rankcse
        rng = np.random.default_rng(0)
        teachers = [rng.normal(size=(BATCH, 16)).astype(np.float32) for _ in r.teachers]
        loss = RankCSELoss(SimCSELoss(model, temperature=case.setting("loss", "temperature")), teachers,
                           r.teacher_weights, beta=r.beta, gamma=r.gamma, distillation=r.distillation,
                           tau_student=r.tau_student, tau_teacher=r.tau_teacher)
        return loss, [features(model, sentences(BATCH, seed=3))], torch.arange(BATCH)
    return build


def _tsdae(case: LossCase):
    from sentlab.data.noise import NoisyPairs
    from sentlab.losses.tsdae import TSDAELoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        rows = NoisyPairs("delete", 0.6, seed=0)({"sentence": sentences(BATCH, seed=3), "label": list(range(BATCH))})
        return TSDAELoss(model), [features(model, rows["noisy"]), features(model, rows["sentence"])], None
    return build


def _ct(case: LossCase):
    from sentence_transformers.sentence_transformer.losses import ContrastiveTensionLoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        a = sentences(BATCH, seed=3)
        b = [a[0], *sentences(BATCH - 1, seed=4)]  # one identical pair, the rest different
        labels = torch.tensor([1.0] + [0.0] * (BATCH - 1))
        return ContrastiveTensionLoss(model), [features(model, a), features(model, b)], labels
    return build


def _mlm(case: LossCase):
    from sentlab.methods.mlm import MLMLoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        return MLMLoss(model), [features(model, sentences(BATCH, seed=3))], None
    return build


def _bertflow(case: LossCase):
    from sentlab.encoders.flow import GlowFlow
    from sentlab.methods.bertflow import FlowNLLLoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        for param in model.parameters():
            param.requires_grad_(False)  # BERT-flow's encoder is frozen
        model.append(GlowFlow(model.get_embedding_dimension(), 6, 32, seed=0))
        return FlowNLLLoss(model), [features(model, sentences(BATCH, seed=3))], None
    return build


def _rse(case: LossCase, cached: bool):
    from sentlab.losses.rse import CachedRSELoss, RSELoss

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        relations = ["entailment", "duplicate_question"]
        loss = (CachedRSELoss(model, relations, temperature=0.05, mini_batch_size=4) if cached
                else RSELoss(model, relations, temperature=0.05))
        lines = sentences(3 * BATCH, seed=3)
        cols = [features(model, lines[i * BATCH:(i + 1) * BATCH]) for i in range(3)]
        return loss, cols, torch.tensor([i % 2 for i in range(BATCH)])
    return build


def _supervised(case: LossCase, kind: str):
    from sentence_transformers.sentence_transformer import losses

    def build(backbone: Path):
        model = tiny_encoder(backbone)
        lines = sentences(3 * BATCH, seed=3)
        if kind == "mnrl":
            cols = [features(model, lines[i * BATCH:(i + 1) * BATCH]) for i in range(3)]
            return losses.MultipleNegativesRankingLoss(model, scale=20.0), cols, None
        cols = [features(model, lines[:BATCH]), features(model, lines[BATCH:2 * BATCH])]
        scores = torch.linspace(0, 1, BATCH)
        loss = losses.CoSENTLoss(model, scale=20.0) if kind == "cosent" else losses.CosineSimilarityLoss(model)
        return loss, cols, scores
    return build


def cases() -> list[LossCase]:
    table = [
        ("simcse-unsup", "simcse-unsup-bert-base", lambda c: _simcse(c, 1), True),
        ("simcse-sup", "simcse-sup-bert-base", lambda c: _simcse(c, 3), True),
        ("rankencoder", "rankencoder-simcse-bert-base", _rankencoder, True),
        ("rankcse-listnet", "rankcse-listnet-bert-base", _rankcse, True),
        ("rankcse-listmle", "rankcse-listmle-bert-base", _rankcse, True),
        ("tsdae", "tsdae-bert-base", _tsdae, True),
        ("ct", "ct-bert-base", _ct, False),
        ("mlm", "mlm-bert-base", _mlm, True),
        ("bert-flow", "bertflow-bert-base", _bertflow, True),
        ("rse", "rse-sts-bert-base", lambda c: _rse(c, cached=False), True),
        ("rse-gradient-cache", "rse-sts-bert-base", lambda c: _rse(c, cached=True), True),
        ("supervised-mnrl", "nli-sts-supervised-bert-base", lambda c: _supervised(c, "mnrl"), False),
        ("supervised-cosent", "stsb-supervised", lambda c: _supervised(c, "cosent"), False),
        ("supervised-cosine-mse", "stsb-supervised", lambda c: _supervised(c, "cosine-mse"), False),
    ]
    built = []
    for name, preset, maker, own in table:
        case = LossCase(name, preset, build=None, own_loss=own)  # type: ignore[arg-type]
        case.build = maker(case)
        built.append(case)
    return built


@dataclass
class Comparison:
    loss_fp32: float
    loss_half: float
    grad_relative_error: float  # ||g_half - g_fp32|| / ||g_fp32|| over every trained parameter
    finite: bool
    calibration_skips: int  # fp16: steps the gradient scaler skipped (inf / NaN, scale halved) before one went through
    skipped_after_calibration: bool  # fp16: a further step on the same inputs was skipped too

    @property
    def loss_error(self) -> float:
        return abs(self.loss_half - self.loss_fp32)


def _loss_and_gradients(loss: nn.Module, columns, labels, context, scaler=None):
    torch.manual_seed(0)  # MLM's masks are drawn in its forward: the same masks in every run
    loss.train()
    loss.zero_grad(set_to_none=True)
    with context:
        value = loss([dict(c) for c in columns], labels)
    (scaler.scale(value) if scaler is not None else value).backward()
    return value


def compare(case: LossCase, backbone: Path, dtype: str, mode: str = "engine") -> Comparison:
    """One forward and backward of ``case``'s loss in fp32 and in ``dtype`` from the same weights, then
    one optimizer step (AdamW at the preset's learning rate) in ``dtype``. ``mode``: ``engine``
    (networks under autocast, as sentlab trains) or ``autocast`` (the whole loss inside
    ``torch.autocast``, as a user's own script may run it)."""
    loss, columns, labels = case.build(backbone)
    start = copy.deepcopy(loss.state_dict())
    params = [p for p in loss.parameters() if p.requires_grad]

    value32 = _loss_and_gradients(loss, columns, labels, contextlib.nullcontext())
    grads32 = torch.cat([p.grad.flatten() for p in params if p.grad is not None])

    loss.load_state_dict(start)
    precision = Precision(dtype, "cpu")
    # fp16: the trainer's dynamic loss scaling (Accelerate's GradScaler, initial scale 2^16); a step
    # with inf / NaN gradients is skipped and the scale halved, so count those until one goes through
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16) if dtype == "fp16" else None
    optimizer = torch.optim.AdamW(params, lr=case.learning_rate)
    skips, value, grads = 0, None, None
    for _ in range(MAX_CALIBRATION_STEPS):
        value = _loss_and_gradients(loss, columns, labels, _fresh(loss, precision, mode), scaler)
        if scaler is None:
            grads = torch.cat([p.grad.flatten() for p in params if p.grad is not None])
            optimizer.step()
            break
        scaler.unscale_(optimizer)
        grads = torch.cat([p.grad.flatten() for p in params if p.grad is not None])
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() >= scale:
            break
        skips += 1
        loss.load_state_dict(start)
    skipped_after = False
    if scaler is not None:  # once calibrated, the same ordinary inputs must not be skipped
        loss.load_state_dict(start)
        _loss_and_gradients(loss, columns, labels, _fresh(loss, precision, mode), scaler)
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        skipped_after = scaler.get_scale() < scale
    finite = bool(torch.isfinite(value).all() and torch.isfinite(grads).all()
                  and all(torch.isfinite(p).all() for p in params))
    error = float((grads.float() - grads32).norm() / grads32.norm().clamp_min(1e-30))
    return Comparison(float(value32), float(value), error, finite, skips, skipped_after)


MAX_CALIBRATION_STEPS = 8


def _fresh(loss: nn.Module, precision: Precision, mode: str):
    return (networks_in_half_precision(loss, precision) if mode == "engine"
            else torch.autocast("cpu", dtype=precision.dtype))
