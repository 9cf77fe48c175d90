"""Pre-training text packed into full-length token blocks, as BERT's pre-training and transformers'
``run_mlm`` (``group_texts``) read it, instead of one padded sentence a row.

Each sentence is tokenised with its special tokens (``[CLS] … [SEP]`` for BERT), the token streams
of consecutive sentences are concatenated, and the stream is cut into blocks of exactly
``block_length`` tokens: no padding, every position a real token, and no sentence truncated (one that
crosses a block boundary continues in the next block). As in ``group_texts``, the stream is cut per
``batch_size`` sentences and the tail of each batch shorter than a block is dropped: less than one
block per ``batch_size`` sentences (0.02 % of the Wikipedia tokens at the default 10,000).

The blocks are a ``datasets`` table (one ``input_ids`` column of int32), built with
``Dataset.map``: it streams through a memory-mapped table batch by batch and writes its output to
Arrow, so packing never holds the text in memory as Python objects. :class:`BlockCollator` stacks a
batch of blocks into the ``{column}_input_ids`` / ``{column}_attention_mask`` features the
sentence-transformers trainer hands a loss.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset, Features, Sequence, Value

from sentlab.progress import say

BLOCK_FEATURES = Features({"input_ids": Sequence(Value("int32"))})


def pack_blocks(
    dataset: Dataset, tokenizer, block_length: int, column: str = "sentence", batch_size: int = 10_000
) -> Dataset:
    """The ``column`` texts of ``dataset`` as blocks of ``block_length`` token ids (``input_ids``)."""
    if block_length < 2:
        raise ValueError(f"a block needs at least 2 tokens, got {block_length}")

    def group(batch: dict[str, list[Any]]) -> dict[str, list[list[int]]]:
        ids = tokenizer(
            batch[column],
            add_special_tokens=True,
            truncation=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,  # the stream is cut into blocks: no sentence is truncated
        )["input_ids"]
        stream = list(chain.from_iterable(ids))
        usable = len(stream) - len(stream) % block_length
        return {"input_ids": [stream[i : i + block_length] for i in range(0, usable, block_length)]}

    folder = Path(dataset.cache_files[0]["filename"]).parent if dataset.cache_files else None
    in_memory = folder is not None and not os.access(folder, os.W_OK)
    if in_memory:  # a read-only cache: the blocks cannot be cached beside the table
        say(f"{folder}: not writable; the packed blocks are kept in memory instead of cached beside the table")
    return dataset.map(
        group,
        batched=True,
        batch_size=batch_size,
        remove_columns=dataset.column_names,
        features=BLOCK_FEATURES,
        desc=f"packing into blocks of {block_length} tokens",
        keep_in_memory=in_memory,
    )


@dataclass
class BlockCollator:
    """A batch of packed blocks as the trainer's features of one column: the blocks' ids and an
    all-ones attention mask (every position is a token)."""

    column: str = "sentence"
    valid_label_columns: list[str] = field(default_factory=list)  # the trainer's sampler reads it: no labels

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        ids = torch.tensor([row["input_ids"] for row in rows], dtype=torch.long)
        return {f"{self.column}_input_ids": ids, f"{self.column}_attention_mask": torch.ones_like(ids)}
