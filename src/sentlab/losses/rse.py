"""RSE's relational contrastive loss (Wang and Li, Sec. 3.1 Eq. 1 and Sec. 3.3 Eq. 2).

For a batch of triples (s_i, r_k, s_j, s_j⁻)::

    L_i = -log  exp(sim(h_i + r_k, h_j) / τ) / Σ_m [ exp(sim(h_i + r_k, h_m) / τ) + exp(sim(h_i + r_k, h_m⁻) / τ) ]

with sim the cosine, h = the encoder's sentence embedding (RSE: [CLS] + MLP), r_k a learned vector per
relation (randomly initialised; App. D trains it with its own learning rate, 1e-2), the candidates
every in-batch tail h_m and every in-relation negative h_m⁻ (Eq. 2; without negatives, Eq. 1). It is
SimCSE's InfoNCE (:func:`sentlab.losses.simcse.info_nce`, which also gathers the candidates across
processes under DDP) with the anchors translated by their relation's vector.

Under DDP the relation vectors are the loss's parameters, not the model's, so DDP does not average
their gradients: a hook averages them over the processes, which makes a step on P processes equal
one step on the global batch (each process's loss covers its own anchors against every candidate).

Sec. 3.3's batch of 512 with Gradient Cache: :class:`sentlab.losses.gradcache.GradientCache` around
this loss (``train.mini_batch_size``), which feeds the relation vectors' gradient back through the
returned loss, so gradient accumulation and fp16 loss scaling reach it as they reach the encoder.

Inputs: columns (head, tail[, negative]) and ``label`` = the relation's index. Example::

    loss = RSELoss(model, relations=["entailment", "duplicate_question"], temperature=0.05)
    big_batch = GradientCache(RSELoss(model, relations=["entailment"]), mini_batch_size=32)

``learn_relations=False`` fixes every r_k at 0: plain supervised SimCSE on the same rows (the
"All-Above" baseline of Table 1 when the sources are merged).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import Tensor, nn

from sentlab.losses.gradcache import GradientCache
from sentlab.losses.simcse import info_nce


def _average_over_processes(grad: Tensor) -> Tensor:
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        grad = grad.clone()
        dist.all_reduce(grad)
        grad /= dist.get_world_size()
    return grad


class RSELoss(nn.Module):
    """Eq. 2 (Eq. 1 without negatives): InfoNCE with each anchor translated by its relation's vector.

    Inputs: columns (head, tail[, negative]) and ``label`` = the relation's index in ``relations``.
    The relation vectors are the loss's parameters; sentence-transformers' trainer optimises them
    with the model (App. D gives them their own learning rate, ``learning_rate_mapping``).

    Args:
        model: the encoder being trained.
        relations: the relation names, in label order.
        temperature: tau (0.05).
        learn_relations: ``False`` fixes every r_k at 0 (the All-Above baseline).

    Example::

        from datasets import Dataset
        from sentlab.losses import RSELoss

        rows = Dataset.from_dict({"head": ["A man plays."], "tail": ["Someone plays."], "label": [0]})
        loss = RSELoss(model, relations=["entailment"], temperature=0.05)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=rows, loss=loss)
    """

    def __init__(
        self,
        model: SentenceTransformer,
        relations: Sequence[str],
        temperature: float = 0.05,
        gather_across_devices: bool = True,
        init_std: float = 0.02,
        learn_relations: bool = True,
    ):
        super().__init__()
        self.model = model
        self.relations = list(relations)
        self.temperature = temperature
        self.gather_across_devices = gather_across_devices
        # drawn on the CPU (the same start on every device), then put where the model is
        vectors = (torch.randn(len(self.relations), model.get_embedding_dimension()) * init_std).to(model.device)
        if learn_relations:
            self.relation_vectors = nn.Parameter(vectors)
            self.relation_vectors.register_hook(_average_over_processes)
        else:
            self.register_buffer("relation_vectors", torch.zeros_like(vectors))

    def anchors(self, heads: Tensor, relation_ids: Tensor, vectors: Tensor | None = None) -> Tensor:
        """h_i + r_k for each row."""
        vectors = self.relation_vectors if vectors is None else vectors
        return heads + vectors[relation_ids.long().to(heads.device)].to(heads.dtype)

    def relational_nce(self, embeddings: Sequence[Tensor], labels: Tensor, vectors: Tensor | None = None) -> Tensor:
        heads, tails = embeddings[0], embeddings[1]
        negatives = embeddings[2] if len(embeddings) > 2 else None
        return info_nce(
            self.anchors(heads, labels, vectors), tails, negatives, self.temperature, gather=self.gather_across_devices
        )

    @property
    def citation(self) -> str:
        return "Wang, Li. Relational Sentence Embedding for Flexible Semantic Matching. 2022."

    def forward(self, sentence_features: list[dict[str, Tensor]], labels: Tensor) -> Tensor:
        embeddings = embed_columns(self.model, list(sentence_features), separate_first=False)
        return self.relational_nce(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor) -> Tensor:
        """Eq. 2 on the embeddings of the batch's columns (the Gradient Cache's entry)."""
        return self.relational_nce(embeddings, labels)


class CachedRSELoss(RSELoss):
    """Deprecated since 0.2.0, removed in 0.3.0: :class:`RSELoss` under Gradient Cache, as 0.1.0 had it
    (an ``RSELoss``, its relation vectors and state under their own names), computed by
    ``GradientCache(self, mini_batch_size)``, the same loss and gradients; use
    ``GradientCache(RSELoss(...), mini_batch_size)``. Building one prints a one-line notice."""

    def __init__(
        self,
        model: SentenceTransformer,
        relations: Sequence[str],
        temperature: float = 0.05,
        gather_across_devices: bool = True,
        init_std: float = 0.02,
        learn_relations: bool = True,
        mini_batch_size: int = 32,
    ):
        import sys
        import warnings

        message = (
            "sentlab.losses.CachedRSELoss is deprecated: use GradientCache(RSELoss(...), mini_batch_size); "
            "it will be removed in sentlab 0.3.0"
        )
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        print(f"sentlab: {message}", file=sys.stderr)
        super().__init__(model, relations, temperature, gather_across_devices, init_std, learn_relations)
        self.mini_batch_size = int(mini_batch_size)
        # not a submodule (the cache holds this loss): no cycle in modules(), state_dict() or parameters()
        object.__setattr__(self, "_cache", GradientCache(self, self.mini_batch_size))

    def forward(self, sentence_features, labels: Tensor | None = None) -> Tensor:
        return self._cache(sentence_features, labels)
