"""Every method's loss, forward and backward in fp32 and in half precision, on a tiny model with the
temperatures and learning rates of its preset: the loss and gradient errors against fp32, whether
anything was not finite, and whether a gradient scaler would skip the step.

Half precision runs the way the engine runs it (:func:`sentlab.precision.networks_in_half_precision`:
the networks under autocast, the loss's arithmetic in float32) and, for sentlab's own losses, also
the way a user's script may (the whole loss inside ``torch.autocast``: the losses' float32 regions
must hold there too). fp16 steps go through ``torch.amp.GradScaler``, as the trainer's fp16 does.
Used by ``tests/losses/test_half_precision.py`` and ``benchmarks/studies/half_precision_losses.py``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.encoders.backends import pin_float32_math
from sentlab.methods import load_config
from sentlab.precision import Precision, networks_in_half_precision
from sentlab.training.config import TrainConfig
from tests.conftest import DEVICE, features_of
from tests.tiny_presets import CONFIGS, sentences

BATCH = 8
UNIT_ROUNDOFF = {"bf16": 2.0**-8, "fp16": 2.0**-11}  # half the distance from 1 to the next number


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


Built = tuple[nn.Module, list[dict[str, torch.Tensor]], torch.Tensor | None]  # loss, columns, labels


@dataclass
class LossCase:
    name: str
    preset: str  # the preset whose temperatures and learning rate the loss uses
    build: Callable[[TrainConfig, Path], Built]  # (the preset's config, the tiny backbone)
    own_loss: bool = True  # sentlab's own loss (its float32 regions are checked under an outer autocast too)

    @functools.cached_property
    def config(self) -> TrainConfig:
        return load_config(CONFIGS / f"{self.preset}.yaml")


def tiny_encoder(backbone: Path, pooler: str = "mean") -> SentenceTransformer:
    """Mean pooling: a tiny random BERT's [CLS] vectors are nearly identical for every sentence, which
    puts an in-batch loss at log(batch) with a gradient near 0 that rounding noise swamps."""
    from sentlab.encoders.loading import build_encoder

    return build_encoder(str(backbone), pooler, device=str(DEVICE))


def features(model: SentenceTransformer, texts: list[str]) -> dict[str, torch.Tensor]:
    return features_of(model, texts)


def columns_of(model: SentenceTransformer, count: int) -> list[dict[str, torch.Tensor]]:
    """``count`` columns of BATCH different sentences."""
    lines = sentences(BATCH * count, seed=3)
    return [features(model, lines[i * BATCH : (i + 1) * BATCH]) for i in range(count)]


def _unit_rows(rng: np.random.Generator, rows: int) -> np.ndarray:
    x = rng.normal(size=(rows, 16))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _simcse(columns: int, cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.losses.simcse import SimCSELoss

    model = tiny_encoder(backbone)
    return SimCSELoss(model, temperature=cfg.loss.temperature), columns_of(model, columns), None


def _rankencoder(cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.losses.rankencoder import RankEncoderLoss
    from sentlab.losses.simcse import SimCSELoss

    model, r, rng = tiny_encoder(backbone), cfg.rank, np.random.default_rng(0)
    loss = RankEncoderLoss(
        SimCSELoss(model, temperature=cfg.loss.temperature),
        _unit_rows(rng, BATCH),
        _unit_rows(rng, 64),
        lambda_train=r.lambda_train,
        tau_lower=r.tau_lower,
        tau_upper=r.tau_upper,
        combine="weighted_sum",
    )  # both terms reach the gradient
    return loss, columns_of(model, 1), torch.arange(BATCH, device=DEVICE)


def _rankcse(cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.losses.rankcse import RankCSELoss
    from sentlab.losses.simcse import SimCSELoss

    model, r, rng = tiny_encoder(backbone), cfg.rankcse, np.random.default_rng(0)
    teachers = [rng.normal(size=(BATCH, 16)).astype(np.float32) for _ in r.teachers]
    loss = RankCSELoss(
        SimCSELoss(model, temperature=cfg.loss.temperature),
        teachers,
        r.teacher_weights,
        beta=r.beta,
        gamma=r.gamma,
        distillation=r.distillation,
        tau_student=r.tau_student,
        tau_teacher=r.tau_teacher,
    )
    return loss, columns_of(model, 1), torch.arange(BATCH, device=DEVICE)


def _tsdae(cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.data.noise import NoisyPairs
    from sentlab.losses.tsdae import TSDAELoss

    model, t = tiny_encoder(backbone), cfg.tsdae
    rows = NoisyPairs(t.noise, t.ratio, seed=0)({"sentence": sentences(BATCH, seed=3), "label": list(range(BATCH))})
    return TSDAELoss(model), [features(model, rows["noisy"]), features(model, rows["sentence"])], None


def _ct(cfg: TrainConfig, backbone: Path) -> Built:
    from sentence_transformers.sentence_transformer.losses import ContrastiveTensionLoss

    model = tiny_encoder(backbone)
    a = sentences(BATCH, seed=3)
    b = [a[0], *sentences(BATCH - 1, seed=4)]  # one identical pair, the rest different
    labels = torch.tensor([1.0] + [0.0] * (BATCH - 1), device=DEVICE)
    return ContrastiveTensionLoss(model), [features(model, a), features(model, b)], labels


def _mlm(cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.methods.mlm import MLMLoss

    model = tiny_encoder(backbone)
    return MLMLoss(model, cfg.mlm.probability), columns_of(model, 1), None


def _bertflow(cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.encoders.flow import GlowFlow
    from sentlab.methods.bertflow import FlowNLLLoss

    model = tiny_encoder(backbone)
    for param in model.parameters():
        param.requires_grad_(False)  # BERT-flow's encoder is frozen
    model.append(GlowFlow(model.get_embedding_dimension(), cfg.flow.steps, cfg.flow.hidden_channels, seed=0).to(DEVICE))
    return FlowNLLLoss(model), columns_of(model, 1), None


def _rse(cached: bool, cfg: TrainConfig, backbone: Path) -> Built:
    from sentlab.losses.gradcache import GradientCache
    from sentlab.losses.rse import RSELoss

    model, relations = tiny_encoder(backbone), ["entailment", "duplicate_question"]
    loss = RSELoss(model, relations, temperature=cfg.loss.temperature)
    loss = GradientCache(loss, mini_batch_size=4) if cached else loss
    return loss, columns_of(model, 3), torch.tensor([i % 2 for i in range(BATCH)], device=DEVICE)


def _supervised(kind: str, cfg: TrainConfig, backbone: Path) -> Built:
    from sentence_transformers.sentence_transformer import losses

    model = tiny_encoder(backbone)
    if kind == "mnrl":
        return (
            losses.MultipleNegativesRankingLoss(model, scale=1.0 / cfg.loss.temperature),
            columns_of(model, 3),
            None,
        )
    loss = (
        losses.CoSENTLoss(model, scale=1.0 / cfg.loss.temperature)
        if kind == "cosent"
        else losses.CosineSimilarityLoss(model)
    )
    return loss, columns_of(model, 2), torch.linspace(0, 1, BATCH, device=DEVICE)


def cases() -> list[LossCase]:
    return [
        LossCase("simcse-unsup", "simcse-unsup-bert-base", functools.partial(_simcse, 1)),
        LossCase("simcse-sup", "simcse-sup-bert-base", functools.partial(_simcse, 3)),
        LossCase("rankencoder", "rankencoder-simcse-bert-base", _rankencoder),
        LossCase("rankcse-listnet", "rankcse-listnet-bert-base", _rankcse),
        LossCase("rankcse-listmle", "rankcse-listmle-bert-base", _rankcse),
        LossCase("tsdae", "tsdae-bert-base", _tsdae),
        LossCase("ct", "ct-bert-base", _ct, own_loss=False),
        LossCase("mlm", "mlm-bert-base", _mlm),
        LossCase("bert-flow", "bertflow-bert-base", _bertflow),
        LossCase("rse", "rse-sts-bert-base", functools.partial(_rse, False)),
        LossCase("rse-gradient-cache", "rse-sts-bert-base", functools.partial(_rse, True)),
        LossCase("supervised-mnrl", "nli-sts-supervised-bert-base", functools.partial(_supervised, "mnrl"), False),
        LossCase("supervised-cosent", "stsb-supervised", functools.partial(_supervised, "cosent"), False),
        LossCase("supervised-cosine-mse", "stsb-supervised", functools.partial(_supervised, "cosine-mse"), False),
    ]


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
    """One forward and backward of ``case``'s loss in fp32 and in ``dtype`` from the same weights, each
    half-precision one followed by an optimizer step (AdamW at the preset's learning rate). ``mode``:
    ``engine`` (networks under autocast, as sentlab trains) or ``autocast`` (the whole loss inside
    ``torch.autocast``, as a user's own script may run it). fp16 runs through dynamic loss scaling as
    the trainer's does (a GradScaler starting at 2^16 skips a step with inf / NaN gradients and halves
    its scale): the steps skipped before one goes through are counted, then one more step on the same
    inputs must not be skipped."""
    pin_float32_math()  # the reference is IEEE float32 on every device (no TF32)
    loss, columns, labels = case.build(case.config, backbone)
    start = copy.deepcopy(loss.state_dict())
    params = [p for p in loss.parameters() if p.requires_grad]
    value32 = _loss_and_gradients(loss, columns, labels, contextlib.nullcontext())
    grads32 = _gradient(params)

    precision = Precision(dtype, DEVICE.type)
    scaler = torch.amp.GradScaler(DEVICE.type, init_scale=2.0**16) if dtype == "fp16" else None
    optimizer = torch.optim.AdamW(params, lr=case.config.train.learning_rate)

    def half_step() -> tuple[torch.Tensor, torch.Tensor, bool]:
        """(loss, unscaled gradients, whether the step was skipped), from the start weights."""
        loss.load_state_dict(start)
        context = (
            networks_in_half_precision(loss, precision)
            if mode == "engine"
            else torch.autocast(DEVICE.type, dtype=precision.dtype)
        )
        value = _loss_and_gradients(loss, columns, labels, context, scaler)
        if scaler is None:
            grads = _gradient(params)
            optimizer.step()
            return value, grads, False
        scaler.unscale_(optimizer)
        grads, scale = _gradient(params), scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        return value, grads, scaler.get_scale() < scale

    value, grads, skipped = half_step()
    skips = 0
    while skipped and skips < MAX_CALIBRATION_STEPS:
        skips += 1
        value, grads, skipped = half_step()
    skipped_after = scaler is not None and half_step()[2]
    finite = bool(
        torch.isfinite(value).all() and torch.isfinite(grads).all() and all(torch.isfinite(p).all() for p in params)
    )
    error = float((grads.float() - grads32).norm() / grads32.norm().clamp_min(1e-30))
    return Comparison(float(value32), float(value), error, finite, skips, skipped_after)


MAX_CALIBRATION_STEPS = 8


def _gradient(params: list[nn.Parameter]) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in params if p.grad is not None])
