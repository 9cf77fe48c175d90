"""Length-grouped batches: every row once per epoch, similar lengths in a batch, the same order for the
same seed and epoch (a resumed run), another order for another epoch."""

from __future__ import annotations

import random

import pytest
import torch
from datasets import Dataset

from sentlab.training.samplers import LengthGroupedBatchSampler


def test_batches_cover_every_row_once_and_group_lengths():
    rng = random.Random(0)
    texts = ["x" * rng.randint(1, 200) for _ in range(1003)]
    dataset = Dataset.from_dict({"sentence": texts})
    sampler = LengthGroupedBatchSampler(dataset, batch_size=10, drop_last=False, seed=3)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 101
    assert sorted(i for b in batches for i in b) == list(range(1003))
    spread = sum(max(len(texts[i]) for i in b) - min(len(texts[i]) for i in b) for b in batches) / len(batches)
    assert spread < 20  # random batches of these lengths span ~160 characters on average
    assert list(LengthGroupedBatchSampler(dataset, 10, False, seed=3)) == batches  # resumable
    sampler.set_epoch(1)
    assert list(sampler) != batches
    dropped = LengthGroupedBatchSampler(dataset, batch_size=10, drop_last=True, seed=3)
    assert len(list(dropped)) == len(dropped) == 100 and all(len(b) == 10 for b in dropped)


@pytest.mark.parametrize("drop_last", [False, True])
def test_the_shuffled_batches_are_the_trainers_default_batches_without_the_list(drop_last):
    """ShuffledBatchSampler gives the batches of sentence-transformers' default (a BatchSampler over
    a RandomSampler with the trainer's seeded generator), epoch after epoch, from an int32 permutation."""
    from datasets import Dataset
    from sentence_transformers.base.sampler import DefaultBatchSampler
    from torch.utils.data import RandomSampler

    from sentlab.training.samplers import ShuffledBatchSampler

    rows = Dataset.from_dict({"sentence": [f"s{i}" for i in range(1003)]})
    ours = ShuffledBatchSampler(rows, batch_size=16, drop_last=drop_last, generator=torch.Generator().manual_seed(7))
    default = DefaultBatchSampler(
        RandomSampler(rows, generator=torch.Generator().manual_seed(7)), batch_size=16, drop_last=drop_last
    )
    for _ in range(2):  # the generator advances between epochs in both
        assert list(ours) == list(default)
    assert len(ours) == len(default)
