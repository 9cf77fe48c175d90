"""Losses: one short module per method."""

from sentlab.losses.simcse import SimCSELoss, info_nce

__all__ = ["SimCSELoss", "info_nce"]
