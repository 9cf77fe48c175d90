"""One loss per training set (``data.sets`` with a set's own ``loss``): sentence-transformers' trainer
computes each batch's loss with its set's (a batch is drawn from one set at a time, and carries its
set's name as ``dataset_name``)."""

from __future__ import annotations

import torch
from torch import nn


class LossPerSet(nn.ModuleDict):
    """The losses of the training sets by name, as one module: :meth:`select` names the set of the batch
    to come (the trainer does, from its ``dataset_name``), and :meth:`forward` computes its loss.

    Example::

        loss = LossPerSet({"qa": MultipleNegativesRankingLoss(model), "sts": CoSENTLoss(model)})
        loss.select("sts")
        value = loss(features, labels)
    """

    def __init__(self, losses: dict[str, nn.Module]):
        super().__init__(losses)
        self.active: str | None = None

    def select(self, name: str | None) -> None:
        if name is not None and name not in self:
            raise KeyError(f"no loss for the training set {name!r} (sets: {', '.join(self.keys())})")
        self.active = name

    @property
    def model(self):
        """The model the losses embed with (the first one's; the trainer puts its wrapped model into each)."""
        return next(iter(self.values())).model

    def forward(self, features, labels) -> torch.Tensor:
        if self.active is None:
            raise RuntimeError("LossPerSet: no training set selected for this batch")
        return self[self.active](features, labels)
