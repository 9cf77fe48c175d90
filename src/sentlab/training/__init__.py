"""Training: config schema and the engine (glue to the sentence-transformers trainer)."""

from sentlab.training.config import TrainConfig, load_config

__all__ = ["TrainConfig", "load_config"]
