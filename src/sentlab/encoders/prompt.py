"""PromptBERT's template pooler (Jiang et al. 2022), a base encoder of RankEncoder (Sec. 4.1).

The sentence is placed in a template such as ``This sentence : "{sentence}" means [MASK] .`` and
the last-layer hidden state of the [MASK] token is the sentence embedding. The sentence is cut (at
a token boundary) so that the template and its [MASK] always fit the maximum sequence length.
Template denoising (subtracting the template's own representation) is not applied.

These are sentlab module classes, so a plain ``SentenceTransformer(path, trust_remote_code=True)``
loads such a model when sentlab is installed (nothing is downloaded); ``sentlab`` loads it directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from sentence_transformers.base.modules.module import Module
from sentence_transformers.sentence_transformer.modules import Transformer

from sentlab.errors import ModelLoadError

SENTENCE_SLOT = "{sentence}"
MASK_SLOT = "[MASK]"


class PromptTransformer(Transformer):
    """A Transformer module that fills a template around each input text before tokenising."""

    config_keys: list[str] = [*Transformer.config_keys, "template"]

    def __init__(
        self, model_name_or_path: str, *, template: str = 'This sentence : "{sentence}" means [MASK] .', **kwargs: Any
    ) -> None:
        super().__init__(model_name_or_path, **kwargs)
        if template.count(SENTENCE_SLOT) != 1 or template.count(MASK_SLOT) != 1:
            raise ModelLoadError(f"prompt template must contain {SENTENCE_SLOT} and {MASK_SLOT} once: {template!r}")
        if self.tokenizer is None or self.tokenizer.mask_token is None:
            raise ModelLoadError(f"{model_name_or_path}: the prompt pooler needs a tokenizer with a mask token")
        self.template = template

    def fill(self, sentence: str, max_length: int | None = None) -> str:
        tokenizer = self.tokenizer
        filled = self.template.replace(MASK_SLOT, tokenizer.mask_token)
        limit = max_length or self.max_seq_length
        if limit:
            overhead = len(tokenizer(filled.replace(SENTENCE_SLOT, ""))["input_ids"])
            budget = max(limit - overhead, 1)
            encoded = tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
            if len(encoded["input_ids"]) > budget:
                sentence = sentence[: encoded["offset_mapping"][budget - 1][1]]
        return filled.replace(SENTENCE_SLOT, sentence)

    def preprocess(self, inputs: Sequence[Any], prompt: str | None = None, processing_kwargs=None, **kwargs):
        max_length = kwargs.get("max_length")
        texts = [self.fill(text, max_length) if isinstance(text, str) else text for text in inputs]
        return super().preprocess(texts, prompt=prompt, processing_kwargs=processing_kwargs, **kwargs)


class MaskTokenPooling(Module):
    """The last-layer state of the first [MASK] token of each input is its sentence embedding."""

    config_keys: list[str] = ["embedding_dimension", "mask_token_id"]

    def __init__(self, embedding_dimension: int, mask_token_id: int):
        super().__init__()
        self.embedding_dimension = embedding_dimension
        self.mask_token_id = mask_token_id

    def forward(self, features: dict[str, torch.Tensor], **kwargs) -> dict[str, torch.Tensor]:
        is_mask = features["input_ids"] == self.mask_token_id
        if not bool(is_mask.any(dim=1).all()):
            raise ValueError("an input has no [MASK] token: was it truncated before the template was filled?")
        position = is_mask.int().argmax(dim=1)
        rows = torch.arange(position.size(0), device=position.device)
        features["sentence_embedding"] = features["token_embeddings"][rows, position]
        return features

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
