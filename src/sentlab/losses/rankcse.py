"""RankCSE (Liu et al. 2023): InfoNCE + ranking consistency + listwise ranking distillation.

With f(x_i), f(x_i)' the two dropout views and d the cosine:

* Eq. 1: InfoNCE with temperature tau_1 (SimCSE's, :func:`sentlab.losses.simcse.info_nce`).
* Eq. 2: ranking consistency, the Jensen-Shannon term between the top-one distributions
  softmax(S(x_i)/tau_1) and softmax(S(x_i)'/tau_1) of S(x_i) = {d(f(x_i), f(x_j)')}_j and
  S(x_i)' = {d(f(x_i)', f(x_j))}_j, as printed: p.log(2p/(p+q)) + q.log(2q/(p+q)) (twice the
  textbook JS; beta absorbs the factor).
* Eq. 4: ListNet, -softmax(S^T(x_i)/tau_3) . log softmax(S(x_i)/tau_2), with the positive pair's
  score (j = i) left out of both distributions (footnote 1).
* Eq. 5: ListMLE, -log P(pi^T_i | S(x_i), tau_2): the Plackett-Luce likelihood of the teacher's
  order of the list under the student's scores / tau_2 (the list includes j = i; footnote 1 is
  about Eq. 4).
* Eq. 6: L = L_InfoNCE + beta L_consistency + gamma L_rank; each term can be switched off (Table 4).

The teachers' lists S^T(x_i) = sum_k alpha_k d(t_k(x_i), t_k(x_j)) come from frozen teachers' vectors
of the training sentences, computed once before training (each row's index is its ``label``).
Sums over the batch are means here, as for InfoNCE. Under multi-process training the lists run over
each process's own batch.

Mixed precision: the encoder runs in half precision; the score matrices and Eq. 1-5 are float32
(autocast off): with tau_2 = 0.0125 a bf16 cosine's rounding (up to 2^-9) moves a logit by 0.3, and
exp(cos / tau) reaches e^80, past fp16's largest value (65504 ~ e^11).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentlab.losses.frozen import FrozenRows
from sentlab.losses.simcse import SimCSELoss, cosine_matrix
from sentlab.precision import float32_region, in_float32


@in_float32
def js_consistency(scores: Tensor, scores_other: Tensor, temperature: float) -> Tensor:
    """Eq. 2 (mean over rows) between the top-one distributions of two score matrices."""
    log_p = F.log_softmax(scores / temperature, dim=-1)
    log_q = F.log_softmax(scores_other / temperature, dim=-1)
    log_m = torch.logsumexp(torch.stack([log_p, log_q]), dim=0) - np.log(2.0)  # log((p + q) / 2)
    p, q = log_p.exp(), log_q.exp()
    return ((p * (log_p - log_m)).sum(-1) + (q * (log_q - log_m)).sum(-1)).mean()


def _drop_diagonal(matrix: Tensor) -> Tensor:
    n = matrix.size(0)
    keep = ~torch.eye(n, matrix.size(1), dtype=torch.bool, device=matrix.device)
    return matrix[keep].view(n, matrix.size(1) - 1)


@in_float32
def listnet_loss(
    student: Tensor, teacher: Tensor, tau_student: float, tau_teacher: float, exclude_positive: bool = True
) -> Tensor:
    """Eq. 4 (mean over rows); ``exclude_positive`` drops column j = i from both lists (footnote 1)."""
    if exclude_positive:
        student, teacher = _drop_diagonal(student), _drop_diagonal(teacher)
    target = F.softmax(teacher / tau_teacher, dim=-1)
    return -(target * F.log_softmax(student / tau_student, dim=-1)).sum(-1).mean()


@in_float32
def listmle_loss(student: Tensor, teacher: Tensor, tau_student: float, exclude_positive: bool = False) -> Tensor:
    """Eq. 5 (mean over rows): -log of the Plackett-Luce probability of the teacher's descending order
    under the student's scores / tau: prod_k exp(s_pi(k)) / sum_{l >= k} exp(s_pi(l))."""
    if exclude_positive:
        student, teacher = _drop_diagonal(student), _drop_diagonal(teacher)
    order = teacher.argsort(dim=-1, descending=True, stable=True)
    ordered = student.gather(-1, order) / tau_student
    tail_logsumexp = ordered.flip(-1).logcumsumexp(-1).flip(-1)  # log sum_{l >= k} exp(s_pi(l))
    return (tail_logsumexp - ordered).sum(-1).mean()


class RankCSELoss(nn.Module):
    """Eq. 6 over a SimCSE model and frozen teachers' vectors of the training sentences.

    Inputs: one text column and a ``label`` column with each sentence's row in the teacher vectors.

    Args:
        base_loss: SimCSE's loss (model, tau_1 as its temperature).
        teacher_vectors: one (n_train, d_k) array per teacher (rows L2-normalised or not).
        teacher_weights: alpha_k, summing to 1 (RankCSE: alpha = 1/3 for two teachers -> [1/3, 2/3]).
        beta: weight of Eq. 2 (ranking consistency); 0 switches it off.
        gamma: weight of Eq. 3 (ranking distillation); 0 switches it off.
        distillation: ``listnet`` or ``listmle``.
        tau_student: tau_2.
        tau_teacher: tau_3 (ListNet only).
        use_infonce: keep Eq. 1 (False for the ablations of Table 4).

    Example::

        loss = RankCSELoss(SimCSELoss(student, temperature=0.05), [teacher_vecs], [1.0],
                           distillation="listnet", tau_student=0.05, tau_teacher=0.025)
    """

    def __init__(
        self,
        base_loss: SimCSELoss,
        teacher_vectors: Sequence[np.ndarray | Tensor],
        teacher_weights: Sequence[float] | None = None,
        beta: float = 1.0,
        gamma: float = 1.0,
        distillation: Literal["listnet", "listmle"] = "listnet",
        tau_student: float = 0.05,
        tau_teacher: float = 0.05,
        use_infonce: bool = True,
    ):
        super().__init__()
        if distillation not in ("listnet", "listmle"):
            raise ValueError(f"distillation must be 'listnet' or 'listmle', not {distillation!r}")
        weights = (
            list(teacher_weights)
            if teacher_weights is not None
            else [1.0 / len(teacher_vectors)] * len(teacher_vectors)
        )
        if len(weights) != len(teacher_vectors):
            raise ValueError("one weight per teacher")
        if gamma and not teacher_vectors:
            raise ValueError("ranking distillation (gamma > 0) needs at least one teacher")
        self.base_loss = base_loss
        self.model = base_loss.model
        self.teacher_vectors = list(teacher_vectors)
        self._teacher_rows = [FrozenRows(v) for v in self.teacher_vectors]  # gathered on the device
        self.teacher_weights = weights
        self.beta, self.gamma = beta, gamma
        self.distillation = distillation
        self.tau_student, self.tau_teacher = tau_student, tau_teacher
        self.use_infonce = use_infonce
        self.last_components: dict[str, Tensor] = {}

    def teacher_scores(self, rows: Tensor, device: torch.device) -> Tensor:
        """S^T for the batch: the weighted sum of each teacher's cosine matrix."""
        total = None
        with float32_region(device.type):
            for weight, teacher in zip(self.teacher_weights, self._teacher_rows):
                t = teacher(rows, device)
                total = weight * cosine_matrix(t, t) if total is None else total + weight * cosine_matrix(t, t)
        return total

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        return self.compute_loss_from_embeddings(self.base_loss.embed(sentence_features), labels)

    def columns(self, sentence_features: Iterable[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
        """The base loss's columns (one column: two dropout views)."""
        return self.base_loss.columns(sentence_features)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """Eq. 6 on the embeddings of :meth:`columns` (the Gradient Cache's entry)."""
        scores = cosine_matrix(embeddings[0], embeddings[1])  # S(x_i) as rows
        terms: dict[str, Tensor] = {}
        if self.use_infonce:
            terms["infonce"] = self.base_loss.contrastive(embeddings)
        if self.beta:
            terms["consistency"] = self.beta * js_consistency(scores, scores.T, self.base_loss.temperature)
        if self.gamma:
            if labels is None:
                raise ValueError("ranking distillation needs each sentence's row in the teacher vectors as its label")
            with torch.no_grad():
                teacher = self.teacher_scores(labels, scores.device)
            if self.distillation == "listnet":
                rank = listnet_loss(scores, teacher, self.tau_student, self.tau_teacher)
            else:
                rank = listmle_loss(scores, teacher, self.tau_student)
            terms["rank"] = self.gamma * rank
        if not terms:
            raise ValueError("all terms of Eq. 6 are switched off")
        self.last_components = {name: value.detach() for name, value in terms.items()}
        return torch.stack(list(terms.values())).sum()

    def get_config_dict(self) -> dict[str, object]:
        return {
            "teacher_weights": self.teacher_weights,
            "beta": self.beta,
            "gamma": self.gamma,
            "distillation": self.distillation,
            "tau_student": self.tau_student,
            "tau_teacher": self.tau_teacher,
            "use_infonce": self.use_infonce,
        }

    @property
    def citation(self) -> str:
        return (
            "Liu, Xu, Wang, Ye, Zhao. RankCSE: Unsupervised Sentence Representations Learning via "
            "Learning to Rank. ACL 2023."
        )
