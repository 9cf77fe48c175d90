"""RSE's relational contrastive loss (Wang and Li, Sec. 3.1 Eq. 1 and Sec. 3.3 Eq. 2).

For a batch of triples (s_i, r_k, s_j, s_j⁻)::

    L_i = -log  exp(sim(h_i + r_k, h_j) / τ) / Σ_m [ exp(sim(h_i + r_k, h_m) / τ) + exp(sim(h_i + r_k, h_m⁻) / τ) ]

with sim the cosine, h = the encoder's sentence embedding (RSE: [CLS] + MLP), r_k a learned vector per
relation (randomly initialised; App. D trains it with its own learning rate, 1e-2), the candidates
every in-batch tail h_m and every in-relation negative h_m⁻ (Eq. 2; without negatives, Eq. 1). It is
SimCSE's InfoNCE (:func:`sentlab.losses.simcse.info_nce`, which also gathers the candidates across
processes under DDP) with the anchors translated by their relation's vector.

Inputs: columns (head, tail[, negative]) and ``label`` = the relation's index. Example::

    loss = RSELoss(model, relations=["entailment", "duplicate_question"], temperature=0.05)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import Tensor, nn

from sentlab.losses.simcse import info_nce


class RSELoss(nn.Module):
    def __init__(self, model: SentenceTransformer, relations: Sequence[str], temperature: float = 0.05,
                 gather_across_devices: bool = True, init_std: float = 0.02):
        super().__init__()
        self.model = model
        self.relations = list(relations)
        self.temperature = temperature
        self.gather_across_devices = gather_across_devices
        dim = model.get_embedding_dimension()
        self.relation_vectors = nn.Parameter(torch.randn(len(self.relations), dim) * init_std)

    def anchors(self, heads: Tensor, relation_ids: Tensor) -> Tensor:
        """h_i + r_k for each row."""
        return heads + self.relation_vectors[relation_ids.long()].to(heads.dtype)

    def forward(self, sentence_features: list[dict[str, Tensor]], labels: Tensor) -> Tensor:
        embeddings = embed_columns(self.model, list(sentence_features), separate_first=False)
        heads, tails = embeddings[0], embeddings[1]
        negatives = embeddings[2] if len(embeddings) > 2 else None
        return info_nce(self.anchors(heads, labels.to(heads.device)), tails, negatives, self.temperature,
                        gather=self.gather_across_devices)
