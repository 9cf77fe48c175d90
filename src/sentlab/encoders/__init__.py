"""Encoders: loading (alias / path / hub), poolers, training-only heads, save and load."""

from sentlab.encoders.loading import (
    POOLERS,
    build_encoder,
    load_encoder,
    resolve_model_path,
)

__all__ = ["POOLERS", "build_encoder", "load_encoder", "resolve_model_path"]
