"""RankEncoder re-training of E2 (Seonwoo et al. 2023, Sec. 3.4-3.5).

Targets: for the sentences of a batch, the Spearman correlations u_i . u_j of their rank vectors
computed by the frozen base encoder E1 over the corpus (Eq. 2-3). E1 contributes only vectors
computed before training (the corpus and the training sentences), so no E1 forward pass is run
during training and no second device is needed.

* Eq. 4:  l_r = 1/m^2 sum_ij (u_i . u_j - cos(E2(x_i), E2(x_j)))^2
* Eq. 6:  the same mean restricted to pairs with tau_l <= u_i . u_j <= tau_u (0.5, 0.8)
* Eq. 5:  l_total = max(lambda_train * l_r, l_cl)  (hinge, lambda_train = 0.05), or, as the
  authors' released code also offers, the weighted sum l_cl + lambda_train * l_r.

cos(E2(x_i), E2(x_j)) is taken between the two dropout views of the base objective (view 1 of x_i,
view 2 of x_j), as in the authors' code; the views come from the same forward pass that l_cl uses.
Under multi-process training the columns j run over the global batch and l_r, its pair count and
the hinge decision are global, so the loss equals the one-process loss on the whole batch.

Mixed precision: E2 runs in half precision; the cosines, the rank-vector products u_i . u_j and
Eq. 4-6 are float32 (autocast off): Eq. 6's filter compares targets with 0.5 and 0.8, and a bf16
target (8 significant bits) would move pairs across those bounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import torch
from sentence_transformers.util import all_gather, all_gather_with_grad, get_rank
from torch import Tensor, nn

from sentlab.losses.frozen import FrozenRows
from sentlab.losses.simcse import SimCSELoss, cosine_matrix
from sentlab.precision import float32_region, in_float32
from sentlab.rank.vectors import rank_vectors


@in_float32
def rank_regression_loss(
    cos: Tensor,
    targets: Tensor,
    tau_lower: float | None = None,
    tau_upper: float | None = None,
    pair_count: Tensor | None = None,
) -> Tensor:
    """Eq. 6 (Eq. 4 when both bounds are None): squared error of ``cos`` against ``targets``, averaged
    over the pairs whose target lies in [tau_lower, tau_upper]; 0 when no pair does.

    ``pair_count`` overrides the number of kept pairs (the global count under multi-process training).
    """
    keep = pair_mask(targets, tau_lower, tau_upper).to(cos.dtype)
    count = keep.sum() if pair_count is None else pair_count
    return ((targets - cos) ** 2 * keep).sum() / count.clamp_min(1)


def pair_mask(targets: Tensor, tau_lower: float | None, tau_upper: float | None) -> Tensor:
    """Eq. 6's indicator 1[tau_l <= u_i . u_j <= tau_u] (a missing bound is no bound)."""
    lower = -np.inf if tau_lower is None else tau_lower
    upper = np.inf if tau_upper is None else tau_upper
    return (targets >= lower) & (targets <= upper)


class RankEncoderLoss(nn.Module):
    """l_total of Eq. 5 over a base contrastive loss and E1's rank-vector similarities.

    Inputs: one text column (the base objective's) and a ``label`` column holding each sentence's
    row in ``base_vectors``.

    Args:
        base_loss: the base encoder's objective (SimCSE; with the ``prompt`` pooler, PromptBERT's
            template representation), whose model is E2.
        base_vectors: (n_train, d) E1 vectors of the training sentences (L2-normalised; a numpy
            memory map is fine: only the batch's rows are read).
        corpus_vectors: (n_corpus, d) E1 vectors of the corpus (L2-normalised).
        lambda_train: weight of l_r (0.05).
        tau_lower: Eq. 6's lower bound (0.5); ``None`` for no bound (Eq. 4).
        tau_upper: Eq. 6's upper bound (0.8); ``None`` for no bound.
        combine: ``hinge`` (Eq. 5) or ``weighted_sum``.

    Example::

        base = SimCSELoss(e2, temperature=0.05)
        loss = RankEncoderLoss(base, train_vectors_e1, index_e1.vectors)
    """

    def __init__(
        self,
        base_loss: SimCSELoss,
        base_vectors: np.ndarray | Tensor,
        corpus_vectors: np.ndarray | Tensor,
        lambda_train: float = 0.05,
        tau_lower: float | None = 0.5,
        tau_upper: float | None = 0.8,
        combine: Literal["hinge", "weighted_sum"] = "hinge",
    ):
        super().__init__()
        if combine not in ("hinge", "weighted_sum"):
            raise ValueError(f"combine must be 'hinge' or 'weighted_sum', not {combine!r}")
        self.base_loss = base_loss
        self.model = base_loss.model
        self.base_vectors = base_vectors
        self._base_rows = FrozenRows(base_vectors)  # gathered on the device: no host sync a step
        self.corpus_vectors = torch.as_tensor(corpus_vectors)
        self.lambda_train = lambda_train
        self.tau_lower = tau_lower
        self.tau_upper = tau_upper
        self.combine = combine
        self._corpus_on: dict[str, Tensor] = {}
        self.last_components: dict[str, Tensor] = {}

    def _corpus(self, device: torch.device) -> Tensor:
        key = str(device)
        if key not in self._corpus_on:
            self._corpus_on[key] = self.corpus_vectors.to(device, torch.float32)
        return self._corpus_on[key]

    def base_rank_vectors(self, rows: Tensor, device: torch.device) -> Tensor:
        """E1's rank vectors (Eq. 2-3) of the given training rows."""
        return rank_vectors(self._base_rows(rows, device), self._corpus(device), normalized=True)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        return self.compute_loss_from_embeddings(self.base_loss.embed(sentence_features), labels)

    def columns(self, sentence_features: Iterable[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
        """The base loss's columns (one column: two dropout views)."""
        return self.base_loss.columns(sentence_features)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """Eq. 5 on the embeddings of :meth:`columns` (the Gradient Cache's entry)."""
        if labels is None:
            raise ValueError("RankEncoderLoss needs each sentence's row in base_vectors as its label")
        l_cl = self.base_loss.contrastive(embeddings)
        view1, view2 = embeddings[0], embeddings[1]
        distributed = (
            self.base_loss.gather_across_devices
            and torch.distributed.is_available()
            and torch.distributed.is_initialized()
        )
        world = torch.distributed.get_world_size() if distributed else 1
        rows_all, view2_all = labels, view2
        if distributed:
            rows_all = all_gather(labels.to(view1.device))
            view2_all = all_gather_with_grad(view2)
        count = None
        with torch.no_grad(), float32_region(view1.device.type):
            u_all = self.base_rank_vectors(rows_all, view1.device)
            offset = get_rank() * view1.size(0) if distributed else 0
            targets = u_all[offset : offset + view1.size(0)] @ u_all.T
            if distributed:
                count = pair_mask(targets, self.tau_lower, self.tau_upper).sum().to(torch.float32)
                torch.distributed.all_reduce(count)
        cos = cosine_matrix(view1, view2_all)
        l_r_share = rank_regression_loss(cos, targets.to(cos.dtype), self.tau_lower, self.tau_upper, count)
        l_r_total, l_cl_mean = l_r_share.detach().clone(), l_cl.detach().clone()
        if distributed:
            torch.distributed.all_reduce(l_r_total)
            torch.distributed.all_reduce(l_cl_mean)
            l_cl_mean /= world
        self.last_components = {"l_cl": l_cl_mean, "l_r": l_r_total}
        weighted_rank = self.lambda_train * world * l_r_share  # mean over processes = lambda * global l_r
        if self.combine == "weighted_sum":
            return l_cl + weighted_rank
        # the authors' Python ``if`` on the two values, as a selection on the device: the same value and
        # gradient, without the host reading the comparison back every step
        return torch.where(self.lambda_train * l_r_total > l_cl_mean, weighted_rank, l_cl)

    def get_config_dict(self) -> dict[str, object]:
        return {
            "lambda_train": self.lambda_train,
            "tau_lower": self.tau_lower,
            "tau_upper": self.tau_upper,
            "combine": self.combine,
            "base_loss": type(self.base_loss).__name__,
        }

    @property
    def citation(self) -> str:
        return (
            "Seonwoo, Wang, Seo, Choudhary, Li, Li, Xu, Park, Oh. Ranking-Enhanced Unsupervised Sentence "
            "Representation Learning. ACL 2023."
        )
