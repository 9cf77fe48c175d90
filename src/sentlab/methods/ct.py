"""Contrastive Tension, CT (Carlsson et al. 2021), as the TSDAE paper trains it (Sec. 5.3, App. B).

Two encoders start from the same weights; the first embeds sentence a, the second sentence b, and
a binary cross-entropy on the dot product (the paper's Eq. of Sec. 5.3)::

    L = -[ y log σ(f_θ1(a)ᵀ f_θ2(b)) + (1 - y) log(1 - σ(f_θ1(a)ᵀ f_θ2(b))) ],  y = [a is b]

is summed over each batch. Rows come as one identical pair to K = 7 different pairs (``ct.k``);
a "different" pair whose two sentences happen to be the same text is labelled 1. The loss is
sentence-transformers' ``ContrastiveTensionLoss`` (it holds the first encoder as ``model1``, a copy,
and the model being trained as ``model2``): it matches the equation, with the labels given
explicitly. The second encoder is the one saved (App. B); checkpoints keep the first one
(``loss_state.safetensors``). Mean pooling (``model.pooler: mean`` in the presets), RMSprop and the
segmented learning rate of App. B: 1e-5 / 8e-6 / 6e-6 / 4e-6 / 2e-6 for steps 1-500 / -1000 /
-1500 / -2000 / after (``ct.lr_segments``).

``ct.in_batch: true`` is CT with in-batch negatives (sentence-transformers'
``ContrastiveTensionLossInBatchNegatives``: one sentence column, the other rows of the batch are
the negatives, cross-entropy over scaled cosines).

The pairs are drawn once from ``train.seed`` when the dataset is built.
"""

from __future__ import annotations

import random
from typing import Literal

import numpy as np
from datasets import Dataset
from pydantic import Field, field_validator, model_validator
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import (
    ContrastiveTensionLoss,
    ContrastiveTensionLossInBatchNegatives,
)
from torch import nn

from sentlab.errors import DataError
from sentlab.methods.base import Method, register, train_table
from sentlab.training.config import TrainConfig, _Section, scale_of

SEGMENTS_SET_EVERY_STEP = (
    "ct.lr_segments sets every step's learning rate (App. B); set ct.lr_segments: null for train.learning_rate "
    "with the trainer's schedule"
)
PAPER_SEGMENTS = [[500, 1e-5], [1000, 8e-6], [1500, 6e-6], [2000, 4e-6], [None, 2e-6]]


class CTSection(_Section):
    """CT's options; defaults are App. B's."""

    k: int = Field(7, gt=0, description="different pairs per identical pair")
    in_batch: bool = Field(False, description="CT with in-batch negatives instead of labelled pairs")
    optimizer: Literal["rmsprop", "adamw"] = "rmsprop"
    lr_segments: list[list[float | None]] | None = Field(
        default_factory=lambda: [list(s) for s in PAPER_SEGMENTS],
        description="[last step of the segment (null: to the end), learning rate] pairs; null: train.learning_rate "
        "with the trainer's schedule",
    )

    @field_validator("lr_segments")
    @classmethod
    def _segments(cls, value: list[list[float | None]] | None) -> list[list[float | None]] | None:
        if value is None:
            return value
        ends = [end for end, _ in value]
        if any(len(s) != 2 for s in value) or ends[-1] is not None or None in ends[:-1]:
            raise ValueError("lr_segments: [[end_step, lr], ..., [null, lr]] with only the last end null")
        if ends[:-1] != sorted(ends[:-1]) or any(lr is None or lr <= 0 for _, lr in value):
            raise ValueError("lr_segments: end steps must increase and learning rates be positive")
        return value


class CTConfig(TrainConfig):
    method: Literal["ct"]
    ct: CTSection = Field(default_factory=CTSection)
    not_read = {"loss.hard_negative_weight": "its negatives are the other pairs (ct.k) or the batch (ct.in_batch)"}
    idle_when = {
        **TrainConfig.idle_when,
        "loss.temperature": "without ct.in_batch",
        "train.warmup_ratio": "with ct.lr_segments",
    }

    @model_validator(mode="after")
    def _one_schedule(self) -> CTConfig:
        """App. B's segments set every step's learning rate: the trainer's schedule would not run."""
        if self.ct.lr_segments is not None:
            for key in ("lr_scheduler_type", "lr_scheduler_kwargs"):
                if key in self.train.trainer_args:
                    raise ValueError(f"train.trainer_args.{key}: {SEGMENTS_SET_EVERY_STEP}")
        if self.ct.optimizer == "rmsprop":
            for key in ("adam_beta1", "adam_beta2", "adam_epsilon"):
                if key in self.train.trainer_args:
                    raise ValueError(f"train.trainer_args.{key}: ct.optimizer rmsprop has no Adam settings")
        return self

    def unread(self) -> dict[str, str]:
        idle = super().unread()
        if self.ct.lr_segments is not None:
            idle["train.warmup_ratio"] = SEGMENTS_SET_EVERY_STEP
        if not self.ct.in_batch:
            idle["loss.temperature"] = (
                "CT with labelled pairs scores by a plain dot product, with no scale (ct.in_batch: true has one; "
                "0.2.0's ct.scale is loss.temperature now)"
            )
        return idle

    section = "ct"
    section_required = False


def ct_pair_rows(n: int, k: int, seed: int) -> tuple[list[int], list[int]]:
    """The rows of CT's pairs over ``n`` sentences: each block is one identical pair then ``k`` pairs
    with a random other sentence (Sec. 5.3), as two lists of row numbers."""
    if n < 2:
        raise DataError(f"CT needs at least 2 training sentences, got {n}")
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    second = [i if row % (k + 1) == 0 else rng.randrange(n) for row, i in enumerate(order)]
    return order, second


def ct_pairs(sentences: list[str], k: int, seed: int) -> dict[str, list]:
    """Rows of (a, b, label) of :func:`ct_pair_rows`; label 1.0 exactly when the two texts are identical."""
    first, second = ct_pair_rows(len(sentences), k, seed)
    a, b = [sentences[i] for i in first], [sentences[j] for j in second]
    return {"sentence_a": a, "sentence_b": b, "label": [float(x == y) for x, y in zip(a, b)]}


class PairTexts:
    """A dataset transform: rows of (row a, row b) numbers to CT's (sentence_a, sentence_b, label), the
    texts read from the memory-mapped training table at batch time."""

    def __init__(self, table: Dataset):
        self.table = table

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        a = self.table[list(batch["row_a"])]["sentence"]
        b = self.table[list(batch["row_b"])]["sentence"]
        return {"sentence_a": a, "sentence_b": b, "label": [float(x == y) for x, y in zip(a, b)]}


@register
class CT(Method):
    """Contrastive Tension: two encoders, identical vs different pairs, BCE on their dot product."""

    name = "ct"
    config_class = CTConfig
    simcse_mlp = False
    no_adapter = "CT trains a second copy of the encoder beside the saved one"
    no_matryoshka = "CT's loss is a dot product of two encoders' embeddings, not of directions"
    no_gradient_cache = "CT's loss runs two encoders, and Gradient Cache chunks the model alone"

    @property
    def in_batch_negatives(self) -> bool:
        return self.cfg.ct.in_batch

    def train_dataset(self) -> Dataset:
        table = train_table(self.cfg)
        if self.cfg.ct.in_batch:
            return table
        first, second = ct_pair_rows(len(table), self.cfg.ct.k, self.cfg.train.seed)
        pairs = Dataset.from_dict({"row_a": np.asarray(first, np.int64), "row_b": np.asarray(second, np.int64)})
        pairs.set_transform(PairTexts(table))
        return pairs

    def loss(self, model: SentenceTransformer) -> nn.Module:
        if self.cfg.ct.in_batch:
            return ContrastiveTensionLossInBatchNegatives(model, scale=scale_of(self.cfg.loss.temperature))
        return ContrastiveTensionLoss(model)

    def training_arguments(self) -> dict[str, object]:
        return {"optim": "rmsprop" if self.cfg.ct.optimizer == "rmsprop" else "adamw_torch"}

    def lr_multiplier(self, step: int) -> float | None:
        segments = self.cfg.ct.lr_segments
        if segments is None:
            return None
        for end, lr in segments:
            if end is None or step < end:
                return lr / self.cfg.train.learning_rate
        raise AssertionError("the last segment has no end")
