"""Training: the config schema (:mod:`sentlab.training.config`, below the methods that extend it) and
the engine (:mod:`sentlab.training.engine`, the glue to the sentence-transformers trainer, above them).

``sentlab.training.load_config`` and ``TrainConfig`` are the config module's, with every method
registered first (so a tree names any method); imported on first use, as the methods import the
config module below them.
"""

__all__ = ["TrainConfig", "load_config"]


def __getattr__(name: str):
    if name in __all__:
        import sentlab.methods  # noqa: F401 (registers every method's config)
        from sentlab.training import config

        return getattr(config, name)
    raise AttributeError(f"module 'sentlab.training' has no attribute {name!r}")
