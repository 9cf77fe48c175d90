"""Training methods, one module each, registered by name (see :mod:`sentlab.methods.base`); configs are
read here (:func:`load_config`, :func:`validate_config`), where every method is registered first."""

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
from sentlab.methods.loading import installed_methods, load_config, validate_config

__all__ = ["METHODS", "Method", "get_method", "installed_methods", "load_config", "register", "validate_config"]
