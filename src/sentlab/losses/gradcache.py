"""Gradient Cache for any loss over the whole batch's embeddings (Gao, Zhang, Han, Callan 2021,
"Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup").

A contrastive loss compares every row of a batch with every other, so the batch cannot be split
into independent pieces: gradient accumulation over pieces of 64 rows trains on batches of 64, with
63 negatives a row, not on the batch of 512 the paper used. Gradient Cache keeps the whole batch's
loss and bounds the memory by one chunk of rows:

1. every chunk of ``mini_batch_size`` rows is embedded without a graph, f(s_i);
2. the loss of the whole batch is computed from those embeddings and back-propagated to them only,
   giving u_i = dL/df(s_i), cached;
3. each chunk is embedded again with its graph and back-propagated with its cached u_i:
   dL/dθ = Σ_i u_i · df(s_i)/dθ, the whole batch's gradient.

Dropout draws the same masks in step 3 as in step 1 (the random state of each chunk is recorded and
replayed), so the gradient is the gradient of the loss step 1 computed. The mechanics are
sentence-transformers' :class:`~sentence_transformers.base.losses.gradcache.CachedLossMixin` (its
cached losses use it; the backward hook scales every chunk by what reaches the returned loss, so fp16
loss scaling reaches them all); :class:`GradientCache` adds what sentlab's losses need:

* any loss that computes its value from the embeddings of its columns,
  ``compute_loss_from_embeddings(embeddings, labels)`` (sentlab's in-batch losses and
  sentence-transformers' own), and names the columns it embeds with ``columns(features)`` when they
  are not the batch's (unsupervised SimCSE embeds its one column twice: two dropout views);
* the loss's own parameters (RSE's relation vectors): their gradient from step 2 is fed back through
  the returned loss as a zero-valued term, so loss scaling and the trainer's gradient accumulation
  reach them exactly as they reach the encoder.

Under DDP the loss gathers the other processes' embeddings inside step 2 (``info_nce`` gathers with
gradients), so each process's cached u_i hold the global batch's gradient, as without chunks.

Example::

    from sentlab.losses import GradientCache, SimCSELoss

    loss = GradientCache(SimCSELoss(model, temperature=0.05), mini_batch_size=32)
    trainer = SentenceTransformerTrainer(model=model, train_dataset=sentences, loss=loss)
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from sentence_transformers.base.losses.gradcache import CachedLossMixin
from torch import Tensor, nn


def loss_columns(loss: nn.Module, sentence_features: Iterable[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
    """The feature dicts ``loss`` embeds, one per column: its ``columns(features)`` when it has one,
    else the batch's columns as they are (sentence-transformers' losses)."""
    features = list(sentence_features)
    columns = getattr(loss, "columns", None)
    return columns(features) if columns is not None else features


class _FromEmbeddings(nn.Module):
    """``loss.compute_loss_from_embeddings`` as a module's forward (for ``torch.func.functional_call``)."""

    def __init__(self, loss: nn.Module):
        super().__init__()
        self.loss = loss

    def forward(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        return self.loss.compute_loss_from_embeddings(embeddings, labels)


class GradientCache(CachedLossMixin, nn.Module):
    """``loss`` computed on the whole batch, its graph kept for ``mini_batch_size`` rows at a time.

    Args:
        loss: a loss with ``model`` and ``compute_loss_from_embeddings(embeddings, labels)``.
        mini_batch_size: rows embedded at a time (a batch of fewer rows is one chunk).

    Inputs and outputs: those of ``loss``; the value is the same, and so are the gradients (up to
    float rounding: the chunks' matrix products sum in another order).

    Example::

        from sentlab.losses import GradientCache, RSELoss

        loss = GradientCache(RSELoss(model, relations=["entailment"]), mini_batch_size=32)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=rows, loss=loss)
    """

    def __init__(self, loss: nn.Module, mini_batch_size: int):
        super().__init__()
        if not hasattr(loss, "compute_loss_from_embeddings"):
            raise ValueError(f"{type(loss).__name__} does not compute its value from embeddings: no Gradient Cache")
        if mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be at least 1, not {mini_batch_size}")
        self.loss = loss
        # sentence-transformers' batch-triplet losses call the model sentence_embedder
        self.model = loss.model if hasattr(loss, "model") else loss.sentence_embedder
        self.mini_batch_size = int(mini_batch_size)
        self._own_grads: list[tuple[nn.Parameter, Tensor]] = []

    def own_parameters(self) -> dict[str, nn.Parameter]:
        """The trainable parameters of the loss that are not the model's (RSE's relation vectors), by
        their name in the loss."""
        in_model = {id(p) for p in self.model.parameters()}
        return {n: p for n, p in self.loss.named_parameters() if p.requires_grad and id(p) not in in_model}

    @property
    def last_components(self) -> dict[str, Tensor]:
        """The wrapped loss's terms of the last step (RankCSE's, RankEncoder's), for the log."""
        return getattr(self.loss, "last_components", {})

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        embeddings = [torch.cat(column) for column in reps]
        if not with_backward:
            return self.loss.compute_loss_from_embeddings(embeddings, labels)
        own = self.own_parameters()
        if own and self._own_grads:
            raise ValueError(
                "GradientCache: the loss was computed twice in one step (MatryoshkaLoss around it?), which a loss "
                "with parameters of its own cannot take: their gradient would be the last call's alone"
            )
        # the own parameters as detached copies: their gradient is taken here once, and reaches them (and
        # their hooks, e.g. RSE's averaging over processes) once, through the link in forward()
        copies = {n: p.detach().requires_grad_() for n, p in own.items()}
        if copies:
            value = torch.func.functional_call(
                _FromEmbeddings(self.loss), {f"loss.{n}": c for n, c in copies.items()}, (embeddings, labels)
            )
        else:
            value = self.loss.compute_loss_from_embeddings(embeddings, labels)
        leaves = [rep for column in reps for rep in column]
        grads = torch.autograd.grad(value, leaves + list(copies.values()), allow_unused=True)
        for leaf, grad in zip(leaves, grads):
            leaf.grad = grad
        self._own_grads = [(p, g) for p, g in zip(own.values(), grads[len(leaves) :]) if g is not None]
        return value.detach()

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        value = self.forward_cached(loss_columns(self.loss, sentence_features), labels)
        own, self._own_grads = self._own_grads, []
        if not own:
            return value
        # zero-valued, with d/dp = the cached gradient for each own parameter p, scaled by whatever
        # reaches the returned loss (fp16's loss scale, the trainer's accumulation)
        link = sum((p * g.to(p.dtype)).sum() for p, g in own)
        return value + (link - link.detach())

    def get_config_dict(self) -> dict[str, object]:
        inner = getattr(self.loss, "get_config_dict", dict)()
        return {**inner, "mini_batch_size": self.mini_batch_size}

    @property
    def citation(self) -> str:
        return (
            "Gao, Zhang, Han, Callan. Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup. "
            "RepL4NLP 2021."
        )


def innermost(loss: nn.Module) -> nn.Module:
    """The method's own loss inside Gradient Cache and sentence-transformers' ``MatryoshkaLoss``: what
    a checkpoint's loss state, the log's loss components and the dev evaluators are read from, so they
    do not depend on how the batch was chunked or truncated."""
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

    while isinstance(loss, (GradientCache, MatryoshkaLoss)):
        loss = loss.loss
    return loss
