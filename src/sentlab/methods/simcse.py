"""SimCSE (Gao et al. 2021), unsupervised and supervised: InfoNCE over dropout views or NLI triplets.

The loss is :class:`sentlab.losses.simcse.SimCSELoss` (Eq. 1; supervised: Eq. 5 with hard
negatives). With the ``cls`` pooler SimCSE puts an MLP (Linear + tanh) over [CLS]. The official
unsupervised recipe trains with it and evaluates without it (``--mlp_only_train``); the official
supervised script keeps it at inference. sentlab follows each: ``model.mlp_only_train`` defaults to
true for ``simcse-unsup`` and false for ``simcse-sup``, where the MLP is saved as a
sentence-transformers ``Dense`` module with tanh (the same layer), so plain sentence-transformers
loads it.
"""

from __future__ import annotations

from typing import Literal

from datasets import Dataset
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.methods.base import Method, column_roles, data_columns, register
from sentlab.training.config import TrainConfig


class SimCSEUnsupConfig(TrainConfig):
    method: Literal["simcse-unsup"]

    not_read = {
        "loss.hard_negative_weight": "it reads one text column; hard negatives are simcse-sup's or supervised's third column"
    }


class SimCSESupConfig(TrainConfig):
    method: Literal["simcse-sup"]

    idle_when = {**TrainConfig.idle_when, "loss.hard_negative_weight": "when data.columns names no negative column"}

    def unread(self) -> dict[str, str]:
        columns = self.data.columns
        pairs = len(columns) == 2 if isinstance(columns, list) else bool(columns) and "negative" not in columns
        negative = {"loss.hard_negative_weight": "data.columns names no hard-negative column"}
        return {**super().unread(), **(negative if pairs else {})}


@register
class SimCSEUnsup(Method):
    """Unsupervised SimCSE: each sentence is encoded twice; dropout makes the two views differ."""

    name = "simcse-unsup"
    in_batch_negatives = True
    no_adapter = None  # the encoder it saves is what the loss trains
    no_matryoshka = None  # a loss of cosines: the first K dimensions re-normalised are scored alike
    no_gradient_cache = None  # the loss compares the batch's rows: train.mini_batch_size applies
    config_class = SimCSEUnsupConfig

    def loss(self, model: SentenceTransformer) -> nn.Module:
        return self.simcse_loss(model)


@register
class SimCSESup(Method):
    """Supervised SimCSE: (anchor, positive[, hard negative]) rows, e.g. NLI entailment / contradiction."""

    name = "simcse-sup"
    config_class = SimCSESupConfig
    default_mlp_only_train = False  # the official supervised script keeps the MLP at inference
    in_batch_negatives = True
    no_adapter = None  # the encoder it saves is what the loss trains
    no_matryoshka = None  # a loss of cosines: the first K dimensions re-normalised are scored alike
    no_gradient_cache = None  # the loss compares the batch's rows: train.mini_batch_size applies
    batch_columns = 3  # anchor, positive, negative (at most)

    def train_dataset(self) -> Dataset:
        roles = ("anchor", "positive", "negative")
        columns = column_roles(self.cfg.data.columns or ["sent0", "sent1", "hard_neg"], roles, 2, "supervised SimCSE")
        names = list(roles[: len(columns)])
        return data_columns(self.cfg, columns, names)

    def loss(self, model: SentenceTransformer) -> nn.Module:
        return self.simcse_loss(model)
