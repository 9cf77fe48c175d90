"""Training-only heads that sit on top of the pooled sentence embedding."""

from __future__ import annotations

import torch
from sentence_transformers.base.modules.module import Module
from torch import nn


class ModuleWithWeights(Module):
    """A sentence-transformers module saved as its config (``config_keys``) + safetensors weights."""

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs) -> ModuleWithWeights:
        config = cls.load_config(model_name_or_path, subfolder=subfolder)
        return cls.load_torch_weights(model_name_or_path, subfolder=subfolder, model=cls(**config))


class SimCSEMLPHead(ModuleWithWeights):
    """SimCSE's MLP over the [CLS] representation, applied in training mode only.

    Gao et al. (2021), Sec. 6.3 / the ``cls`` pooler with ``--mlp_only_train``: a dense layer with
    tanh over the pooled vector while training; at inference the pooled vector is used as is.
    It is a module of the model during training (so DDP synchronises its gradients and checkpoints
    restore it on ``--resume``), and :meth:`sentlab.methods.Method.final_model` removes it
    before the final model is saved.

    Example::

        model = SentenceTransformer(modules=[transformer, pooling, SimCSEMLPHead(768)])
    """

    config_keys: list[str] = ["embedding_dimension"]

    def __init__(self, embedding_dimension: int):
        super().__init__()
        self.embedding_dimension = embedding_dimension
        self.dense = nn.Linear(embedding_dimension, embedding_dimension)
        self.activation = nn.Tanh()

    def forward(self, features: dict[str, torch.Tensor], **kwargs) -> dict[str, torch.Tensor]:
        if self.training:
            features["sentence_embedding"] = self.activation(self.dense(features["sentence_embedding"]))
        return features

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension
