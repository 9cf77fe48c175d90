"""Masked-language-model training on the target sentences, the TSDAE paper's MLM baseline (Sec. 5.2).

BERT's original objective (Devlin et al. 2019): 15 % of the tokens are chosen; of those 80 % become
[MASK], 10 % a random token, 10 % stay; cross-entropy on the chosen ones. The masking is
transformers' ``DataCollatorForLanguageModeling.torch_mask_tokens`` applied to each tokenised
batch (so it is drawn afresh every step); the LM head is transformers' masked-LM class of the
encoder's architecture, its body tied to the encoder (:mod:`sentlab.losses.lm_heads`). The
sentence embedding is the mean of the output token states (``model.pooler: mean``). Paper
preset: 100k steps, batch 8, lr 5e-5 (``configs/mlm-bert-base.yaml``). The head is training-only;
the saved model is the encoder with mean pooling.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn
from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling

from sentlab.errors import ConfigError
from sentlab.losses.lm_heads import head_model, share_body
from sentlab.methods.base import Method, register
from sentlab.training.config import TrainConfig, _Section


class MLMSection(_Section):
    probability: float = Field(0.15, gt=0, lt=1, description="share of tokens chosen for prediction (BERT: 0.15)")


class MLMConfig(TrainConfig):
    method: Literal["mlm"]
    mlm: MLMSection = Field(default_factory=MLMSection)

    section = "mlm"
    section_required = False


class MLMLoss(nn.Module):
    """Masked-LM cross-entropy on one column of sentences; the head's body is the encoder (tied)."""

    def __init__(self, model: SentenceTransformer, probability: float = 0.15):
        super().__init__()
        self.encoder = model
        encoder_hf = model[0].auto_model
        self.head = head_model(encoder_hf, AutoModelForMaskedLM, role="masked-LM head")
        share_body(encoder_hf, self.head.base_model, tie=True)
        self.head.tie_weights()
        if model.tokenizer.mask_token is None:
            raise ConfigError(f"{type(encoder_hf).__name__}: the tokenizer has no mask token, so MLM cannot train it")
        self.masking = DataCollatorForLanguageModeling(model.tokenizer, mlm_probability=probability)

    def forward(self, sentence_features: list[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = sentence_features[0]
        ids = features["input_ids"]
        # the collator draws its masks on the CPU; the ids go back to the model's device
        inputs, targets = self.masking.torch_mask_tokens(ids.detach().cpu().clone())
        return self.head(input_ids=inputs.to(ids.device), attention_mask=features["attention_mask"],
                         labels=targets.to(ids.device)).loss


@register
class MLM(Method):
    """Masked-language-model training (the body of the model is trained; mean pooling at inference)."""

    min_batch_size = 1  # learns from each sentence on its own
    name = "mlm"
    config_class = MLMConfig
    simcse_mlp = False

    def loss(self, model: SentenceTransformer) -> nn.Module:
        return MLMLoss(model, self.cfg.mlm.probability)
