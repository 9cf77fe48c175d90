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


class ShuffledBatchSampler(DefaultBatchSampler):
    """The trainer's default batches (``DefaultBatchSampler`` over a ``RandomSampler``: the same seeded
    permutation, the same batches) without its list of one Python int per row: the permutation is one
    int32 tensor (4 bytes a row, where the list takes about 40), cut into batches as they are drawn, so
    an epoch over 40 million rows holds 160 MB instead of 1.5 GB."""

    def __iter__(self):
        n = len(self.sampler)
        dtype = torch.int32 if n < 2**31 else torch.int64
        order = torch.randperm(n, generator=self.generator, dtype=dtype)
        end = n - n % self.batch_size if self.drop_last else n
        for start in range(0, end, self.batch_size):
            yield order[start : start + self.batch_size].tolist()
        del order
        # RandomSampler draws a second permutation at the end of its epoch (for num_samples % n rows,
        # none here); drawing it too keeps the generator, and so every later epoch, in step with it
        torch.randperm(n, generator=self.generator, dtype=dtype)


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
