"""Training methods, one module each, registered by name (see :mod:`sentlab.methods.base`)."""

from sentlab.methods import (  # noqa: E402,F401  (registers the methods)
    bertflow,
    ct,
    mlm,
    rankcse,
    rankencoder,
    rse,
    simcse,
    supervised,
    tsdae,
)
from sentlab.methods.base import METHODS, Method, get_method, register
from sentlab.training.config import config_adapter

__all__ = ["METHODS", "Method", "config_adapter", "get_method", "register"]
