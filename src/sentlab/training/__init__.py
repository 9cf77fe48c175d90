"""Training: the config schema (:mod:`sentlab.training.config`, below the methods that extend it) and
the engine (:mod:`sentlab.training.engine`, the glue to the sentence-transformers trainer, above them).

``sentlab.training.load_config`` and ``TrainConfig`` are the config module's (whose registry of
methods fills itself on first use); imported on first use, so that importing the package does not
import the schema.
"""

__all__ = ["TrainConfig", "load_config"]


def __getattr__(name: str):
    if name in __all__:
        from sentlab.training import config

        return getattr(config, name)
    raise AttributeError(f"module 'sentlab.training' has no attribute {name!r}")
