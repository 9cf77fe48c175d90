"""BERT-flow (Li et al. 2020) as the TSDAE paper runs it (Sec. 5.5, App. B): the encoder stays
frozen, a Glow flow (:class:`sentlab.encoders.flow.GlowFlow`) on its mean-pooled vectors of the
target sentences is trained by maximum likelihood, and the embedding is the flow's output z.

The loss is the negative log-likelihood of Sec. 5.5's Eq. 2 per sentence, averaged over the batch
(nats per vector). App. B: batch 8, AdamW, lr 1e-6, weight decay 0.01, 100k steps
(the ``bertflow-bert-base`` preset). The saved model is the encoder + pooling + the flow module.

Glow's ActNorm layers initialise themselves from data (zero mean, unit variance). normflows does that
on the first training batch; with batch 8 of near-identical sentences that fits 8 vectors exactly,
every later batch is hundreds of nats less likely. Here they are initialised before training from the
vectors of the first ``flow.init_sentences`` training sentences (0: normflows' first-batch
initialisation). That alone does not make the BERT-flow code's lr 1e-3 safe: on unit-normalised
all-MiniLM-L6-v2 vectors some flows still reached a non-finite loss at 1e-3 and none at 1e-4
(``benchmarks/studies/bertflow_stability.py``, record ``bertflow-stability-minilm``), so ``sentlab adapt``
and the CPU preset train the flow at 1e-4.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.encoders.flow import GlowFlow
from sentlab.losses.flow import FlowNLLLoss
from sentlab.methods.base import Method, read_train_sentences, register
from sentlab.training.config import TrainConfig, _Section


class FlowSection(_Section):
    steps: int = Field(6, gt=0, description="Glow blocks (BERT-flow: 2 levels x depth 3)")
    hidden_channels: int = Field(32, gt=0, description="width of each coupling's conv net (BERT-flow: 32)")
    init_sentences: int = Field(
        1024,
        ge=0,
        description="initialise ActNorm from the vectors of the first N training "
        "sentences (0: from the first batch, as normflows does)",
    )


class BertFlowConfig(TrainConfig):
    method: Literal["bert-flow"]
    flow: FlowSection = Field(default_factory=FlowSection)
    not_read = {"loss": "its objective is set in the flow section"}

    section = "flow"
    section_required = False


@register
class BertFlow(Method):
    """A normalising flow over a frozen encoder's pooled vectors."""

    min_batch_size = 1  # learns from each sentence on its own
    name = "bert-flow"
    config_class = BertFlowConfig
    simcse_mlp = False
    no_adapter = "BERT-flow keeps the encoder frozen: there is nothing for an adapter to train"
    no_matryoshka = "BERT-flow fits a flow to the frozen encoder's whole embedding"
    no_gradient_cache = "BERT-flow fits a flow to each sentence's frozen embedding alone; the encoder is not trained"

    def build_model(self) -> SentenceTransformer:
        model = super().build_model()
        for module in model.modules():
            if isinstance(module, nn.Dropout):
                module.p = 0.0  # the frozen encoder gives the flow its inference-time vectors
        for param in model.parameters():
            param.requires_grad_(False)  # the encoder is unchanged (Sec. 5.5)
        f = self.cfg.flow
        flow = GlowFlow(model.get_embedding_dimension(), f.steps, f.hidden_channels, seed=self.cfg.train.seed)
        if f.init_sentences:
            sentences = read_train_sentences(self.cfg, first=f.init_sentences)
            flow.initialise(
                model.encode(sentences, batch_size=64, convert_to_tensor=True, show_progress_bar=False).cpu()
            )
        model.append(flow.to(model.device))  # where the encoder is, not where a new module starts
        return model

    def loss(self, model: SentenceTransformer) -> nn.Module:
        return FlowNLLLoss(model)
