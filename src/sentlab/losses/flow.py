"""BERT-flow's training objective (Li et al. 2020; the TSDAE paper's Sec. 5.5 baseline): the negative
log-likelihood of the frozen encoder's vectors under a Glow flow (:class:`sentlab.encoders.flow.GlowFlow`)."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer
from torch import Tensor, nn


class FlowNLLLoss(nn.Module):
    """-log p(u) of the flow's input per sentence (Li et al. 2020, Eq. 2), averaged over the batch.

    Inputs: one column of sentences. The model is the frozen encoder with a
    :class:`~sentlab.encoders.flow.GlowFlow` appended; only the flow's parameters train.

    Example::

        from sentlab.encoders.flow import GlowFlow
        from sentlab.losses import FlowNLLLoss

        for parameter in model.parameters():
            parameter.requires_grad_(False)
        model.append(GlowFlow(model.get_embedding_dimension(), steps=6, hidden_channels=32))
        loss = FlowNLLLoss(model)
    """

    def __init__(self, model: SentenceTransformer):
        super().__init__()
        self.model = model

    @property
    def citation(self) -> str:
        return "Li, Zhou, He, Wang, Yang, Li. On the Sentence Embeddings from Pre-trained Language Models. EMNLP 2020."

    def forward(self, sentence_features: list[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        return -self.model(sentence_features[0])["flow_log_likelihood"].mean()
