"""TSDAE (Wang, Reimers and Gurevych 2021): a denoising auto-encoder whose decoder sees only the
sentence vector (Sec. 3; loss: :class:`sentlab.losses.tsdae.TSDAELoss`, J_SDAE of Sec. 3.1 with the
cross-attention of Sec. 3.2).

Defaults are the paper's best configuration (Sec. 3.2, App. A): deletion noise with ratio 0.6,
[CLS] pooling (``model.pooler: cls`` in the presets; no MLP on top), decoder tied to the encoder;
App. B: batch 8, AdamW, lr 3e-5, 100k steps (the ``tsdae-bert-base`` preset). Every configuration
of App. A is a setting of the ``tsdae`` section (``noise``: delete / swap / mask / replace / add,
``ratio``; ``tie``) plus ``model.pooler`` (cls / mean / max). The noise is drawn afresh each time a
sentence is read, reproducibly from ``train.seed`` (:mod:`sentlab.data.noise`). The decoder and its
LM head live in the loss, so the saved model is the encoder alone (``SentenceTransformer(path)``
loads it); checkpoints keep the decoder's own weights (``loss_state.safetensors``) for ``--resume``.
"""

from __future__ import annotations

from typing import Literal

from datasets import Dataset
from pydantic import Field
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.data.noise import NoisyPairs, corpus_vocabulary
from sentlab.data.tables import iter_column, with_row_index
from sentlab.losses.tsdae import TSDAELoss
from sentlab.methods.base import Method, register, train_table
from sentlab.training.config import TrainConfig, _Section


class TSDAESection(_Section):
    """TSDAE's options; defaults are the paper's best (Sec. 3.2, App. A)."""

    noise: Literal["delete", "swap", "mask", "replace", "add"] = "delete"
    ratio: float = Field(0.6, ge=0, lt=1, description="share of words the noise selects (Table 6)")
    tie: bool = Field(True, description="decoder shares the encoder's weights (App. A)")
    decoder: str | None = Field(
        None, description="untied decoder checkpoint (with tie: false); default: a copy of the encoder"
    )
    reduction: Literal["sentence-sum", "token-mean"] = Field(
        "sentence-sum",
        description="J_SDAE's sum over a sentence's tokens (paper) or the authors' code's mean over the batch's tokens",
    )


class TSDAEConfig(TrainConfig):
    method: Literal["tsdae"]
    tsdae: TSDAESection = Field(default_factory=TSDAESection)
    not_read = {"loss": "its objective is set in the tsdae section"}

    section = "tsdae"
    section_required = False


@register
class TSDAE(Method):
    """Encode a noised sentence into s; a decoder that sees only s reconstructs the original."""

    min_batch_size = 1  # learns from each sentence on its own
    name = "tsdae"
    config_class = TSDAEConfig
    simcse_mlp = False
    no_adapter = "TSDAE's decoder is tied to the encoder by weight name, which an adapter's wrapped layers leave untied"
    no_matryoshka = "TSDAE's decoder reads the whole embedding, not its direction"
    no_gradient_cache = (
        "TSDAE's decoder reconstructs each sentence from its own embedding: the loss takes each row alone, so a "
        "smaller train.batch_size already needs less memory for the same expected gradient"
    )

    def train_dataset(self) -> Dataset:
        t = self.cfg.tsdae
        dataset = with_row_index(train_table(self.cfg))  # label: the row, which seeds its noise
        vocabulary = corpus_vocabulary(iter_column(dataset)) if t.noise in ("replace", "add") else ()
        self._transform = NoisyPairs(t.noise, t.ratio, self.cfg.train.seed, vocabulary=vocabulary)
        dataset.set_transform(self._transform)
        return dataset

    def loss(self, model: SentenceTransformer) -> nn.Module:
        t = self.cfg.tsdae
        loss = TSDAELoss(model, tie=t.tie, decoder=t.decoder, reduction=t.reduction)
        transform: NoisyPairs | None = getattr(self, "_transform", None)
        if transform is not None and model.tokenizer.mask_token:  # mask noise uses the tokenizer's own token
            transform.mask_token = model.tokenizer.mask_token
        return loss
