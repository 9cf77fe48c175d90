"""Batches of similar length for the sentence-transformers trainer (its ``batch_sampler`` hook).

A batch is padded to its longest row, so random batches of Wikipedia sentences (mean 31 tokens, up
to the 64 kept) spend about half their compute on padding. :class:`LengthGroupedBatchSampler` does
what transformers' ``LengthGroupedSampler`` does for its own trainer: shuffle the rows (seed + epoch,
so a resumed run sees the same order), cut them into chunks of 50 batches, sort each chunk by
length, batch it, and shuffle the batches, so each batch holds rows of similar length while the
order stays random. Lengths are the first text column's characters, a proxy for tokens that needs
no tokenizer.
"""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import torch
from sentence_transformers.base.sampler import DefaultBatchSampler

CHUNK_BATCHES = 50


class LengthGroupedBatchSampler(DefaultBatchSampler):
    def __init__(
        self, dataset, batch_size: int, drop_last: bool, valid_label_columns=None, generator=None, seed: int = 0
    ) -> None:
        super().__init__(
            dataset,
            batch_size=batch_size,
            drop_last=drop_last,
            valid_label_columns=valid_label_columns,
            generator=generator,
            seed=seed,
        )
        column = next(c for c, f in dataset.features.items() if getattr(f, "dtype", None) in ("string", "large_string"))
        # characters per row, counted by Arrow (no Python string per row): 4 bytes a row
        self.lengths = pc.utf8_length(dataset.data.column(column)).to_numpy().astype(np.int32)

    def batches(self) -> list[list[int]]:
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        chunk = self.batch_size * CHUNK_BATCHES
        batches = []
        for start in range(0, len(order), chunk):
            rows = sorted(order[start : start + chunk], key=self.lengths.__getitem__)
            batches += [rows[i : i + self.batch_size] for i in range(0, len(rows), self.batch_size)]
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]

    def __iter__(self):
        yield from self.batches()

    def __len__(self) -> int:
        # chunks are whole batches, so only the last one can end in a short batch
        full, rest = divmod(len(self.lengths), self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)
