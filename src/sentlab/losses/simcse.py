"""SimCSE's contrastive objective (Gao et al. 2021), unsupervised and supervised.

RankEncoder (Seonwoo et al. 2023) Eq. 1 / RankCSE Eq. 1 (InfoNCE):

    l_i = -log  exp(cos(v_i, v_i+) / tau)  /  sum_j exp(cos(v_i, v_j+) / tau)

averaged over the batch (the authors' code averages; the papers write a sum). Supervised SimCSE
(Gao et al. Eq. 5) adds each anchor's hard negative v_j- to the candidates; SimCSE's
``hard_negative_weight`` is added to the logit of an anchor's own hard negative (default 0).
With several processes the candidates of every process are gathered with gradients, so the loss and
its gradients equal those of one process holding the whole global batch.

Mixed precision: the encoder runs in half precision, Eq. 1 in float32 (:func:`info_nce` and
:func:`cosine_matrix` switch autocast off): a cosine rounded to bf16 (8 significant bits) and divided
by tau = 0.05 moves a logit by up to 0.08, which is not the paper's loss.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.util import all_gather_with_grad, get_rank
from torch import Tensor, nn

from sentlab.precision import in_float32


@in_float32
def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """cos(a_i, b_j) for every row pair, in float32."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


@in_float32
def info_nce(
    anchors: Tensor,
    positives: Tensor,
    negatives: Tensor | None = None,
    temperature: float = 0.05,
    hard_negative_weight: float = 0.0,
    gather: bool = True,
) -> Tensor:
    """Mean InfoNCE of local ``anchors`` against (gathered) ``positives`` [+ ``negatives``], in float32."""
    batch = anchors.size(0)
    offset = 0
    if gather and torch.distributed.is_available() and torch.distributed.is_initialized():
        positives = all_gather_with_grad(positives)
        negatives = all_gather_with_grad(negatives) if negatives is not None else None
        offset = get_rank() * batch if positives.size(0) != batch else 0
    logits = cosine_matrix(anchors, positives) / temperature
    targets = torch.arange(offset, offset + batch, device=anchors.device)
    if negatives is not None:
        negative_logits = cosine_matrix(anchors, negatives) / temperature
        if hard_negative_weight:
            negative_logits = negative_logits + hard_negative_weight * F.one_hot(targets, negatives.size(0))
        logits = torch.cat([logits, negative_logits], dim=1)
    return F.cross_entropy(logits, targets)


class SimCSELoss(nn.Module):
    """SimCSE loss over a sentence-transformers model.

    Inputs (dataset columns, in order):

    * one column ``(sentence)``: unsupervised SimCSE - each sentence is encoded twice in one merged
      forward pass, and dropout makes the two views differ;
    * ``(anchor, positive)``: pairs;
    * ``(anchor, positive, negative)``: supervised SimCSE with NLI hard negatives.

    Args:
        model: the encoder being trained (with a :class:`~sentlab.encoders.heads.SimCSEMLPHead`
            if the pooler is ``cls``).
        temperature: tau of Eq. 1 (0.05 in SimCSE).
        hard_negative_weight: added to the logit of an anchor's own hard negative.
        gather_across_devices: gather candidates over processes (with gradients) under DDP.

    Example::

        loss = SimCSELoss(model, temperature=0.05)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=sentences, loss=loss)
    """

    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = 0.05,
        hard_negative_weight: float = 0.0,
        gather_across_devices: bool = True,
    ):
        super().__init__()
        if temperature <= 0:
            raise ValueError("temperature must be positive")
        self.model = model
        self.temperature = temperature
        self.hard_negative_weight = hard_negative_weight
        self.gather_across_devices = gather_across_devices

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        return self.contrastive(self.embed(sentence_features))

    def columns(self, sentence_features: Iterable[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
        """The columns to embed: one column twice (two dropout views), else the batch's columns."""
        features = list(sentence_features)
        return [features[0], dict(features[0])] if len(features) == 1 else features

    def embed(self, sentence_features: Iterable[dict[str, Tensor]]) -> list[Tensor]:
        """Embeddings of each of :meth:`columns` (one merged forward pass)."""
        return embed_columns(self.model, self.columns(sentence_features), separate_first=False)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """Eq. 1 on the embeddings of :meth:`columns` (the Gradient Cache's entry)."""
        return self.contrastive(embeddings)

    def contrastive(self, embeddings: list[Tensor]) -> Tensor:
        """Eq. 1 on the embeddings of :meth:`embed`."""
        negatives = embeddings[2] if len(embeddings) > 2 else None
        return info_nce(
            embeddings[0],
            embeddings[1],
            negatives,
            self.temperature,
            self.hard_negative_weight,
            self.gather_across_devices,
        )

    def get_config_dict(self) -> dict[str, float | bool]:
        return {
            "temperature": self.temperature,
            "hard_negative_weight": self.hard_negative_weight,
            "gather_across_devices": self.gather_across_devices,
        }

    @property
    def citation(self) -> str:
        return "Gao, Yao, Chen. SimCSE: Simple Contrastive Learning of Sentence Embeddings. EMNLP 2021."
