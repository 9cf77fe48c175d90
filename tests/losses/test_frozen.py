"""Frozen per-row tables (RankEncoder's base vectors, RankCSE's teachers) read for a batch: the rows
asked for, as float32 on the step's device; gathered on a GPU (no host sync), on the host on a CPU or
when the table is too large for the device's share."""

from __future__ import annotations

import numpy as np
import torch

from sentlab.losses.frozen import FrozenRows
from tests.conftest import DEVICE


def test_the_rows_asked_for_on_the_step_device(tmp_path):
    table = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    np.save(tmp_path / "t.npy", table)
    rows = torch.tensor([3, 0, 49, 3], device=DEVICE)
    for vectors in (table, np.load(tmp_path / "t.npy", mmap_mode="r"), torch.from_numpy(table)):
        frozen = FrozenRows(vectors)
        got = frozen(rows, DEVICE)
        assert got.device.type == DEVICE.type and got.dtype == torch.float32
        np.testing.assert_array_equal(got.cpu().numpy(), table[[3, 0, 49, 3]])  # a copy: exact
        # a CPU has nothing to wait for: read where the table lies; a GPU gathers on the card
        assert frozen.placement == ("host" if DEVICE.type == "cpu" else "device")


def test_a_table_larger_than_the_device_share_is_read_on_the_host():
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    frozen = FrozenRows(table, device_share=0.0)
    got = frozen(torch.tensor([5, 1], device=DEVICE), DEVICE)
    assert frozen.placement == "host" and got.tolist() == [[10.0, 11.0], [2.0, 3.0]]
