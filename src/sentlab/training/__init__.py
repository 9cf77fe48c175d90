"""Training: the config schema (:mod:`sentlab.training.config`, below the methods that extend it) and
the engine (:mod:`sentlab.training.engine`, the glue to the sentence-transformers trainer, above them).

``sentlab.training.load_config`` is :func:`sentlab.methods.load_config` (which registers every method
before it reads a config) and ``TrainConfig`` the config module's; imported on first use, so that
importing the package imports neither.
"""

__all__ = ["TrainConfig", "load_config"]


def __getattr__(name: str):
    if name == "load_config":
        from sentlab.methods import load_config

        return load_config
    if name == "TrainConfig":
        from sentlab.training.config import TrainConfig

        return TrainConfig
    raise AttributeError(f"module 'sentlab.training' has no attribute {name!r}")
