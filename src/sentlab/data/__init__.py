"""Readers for training text and evaluation data."""

from sentlab.data.readers import read_column, read_lines, read_sentences, read_table

__all__ = ["read_column", "read_lines", "read_sentences", "read_table"]
