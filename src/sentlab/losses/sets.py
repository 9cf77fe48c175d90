"""A loss per training set (``data.sets.NAME.loss``): sentence-transformers' trainer takes a mapping of
set name to loss and gives each batch, drawn from one set, to that set's loss. :class:`SetLosses`
holds them as one module, so sentlab's callbacks (a checkpoint's loss state, the loss components, the
precision probe, the runtime record) read every set's loss, each under its set's name.

Example::

    losses = SetLosses({"nli": MultipleNegativesRankingLoss(model), "sts": CoSENTLoss(model)})
    trainer = SentenceTransformerTrainer(model, args, train_dataset=sets, loss=dict(losses))
"""

from __future__ import annotations

from torch import nn

from sentlab.losses.gradcache import innermost


class SetLosses(nn.ModuleDict):
    """Each training set's loss by the set's name. Never called itself: the trainer calls the set's
    loss. ``chunking`` holds each set's batch chunking (``train.mini_batch_size``), by name."""

    chunking: dict[str, object] | None = None

    def forward(self, *args, **kwargs):
        raise TypeError("SetLosses is a loss per training set: the trainer calls the loss of the batch's set")


def own_losses(loss: nn.Module) -> dict[str, nn.Module]:
    """The method's own loss (:func:`~sentlab.losses.gradcache.innermost`) by the prefix its state is
    named with: ``""`` for one loss, ``"NAME."`` for each set's of :class:`SetLosses`."""
    if isinstance(loss, SetLosses):
        return {f"{name}.": innermost(part) for name, part in loss.items()}
    return {"": innermost(loss)}
