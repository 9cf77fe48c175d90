"""Frozen per-row vectors read for a batch without making the step wait for the device.

RankEncoder's base rank vectors and RankCSE's teacher vectors are tables with one row per training
sentence, computed before training (in memory or memory-mapped ``.npy``); each batch carries its rows'
indices as labels. The trainer moves the labels to the training device, so reading the table with
them on the host (``rows.cpu()``) would be a device-to-host copy that waits for every queued kernel:
one synchronisation a step. :class:`FrozenRows` instead copies the table to the device once, when it
takes at most ``device_share`` of the device's free memory, and gathers rows there. A larger table is
gathered on the host, one synchronisation a step, and ``placement`` says which ran. On a CPU there is
nothing to wait for, so the table is read where it lies, and a memory-mapped table stays on disk.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from sentlab import devices

DEVICE_SHARE = 0.1  # of the device's free memory, at most, for one frozen table


class FrozenRows:
    """Rows of a frozen ``[n, d]`` table as float32 on the step's device; ``placement`` is
    ``"host"`` or ``"device"`` once a batch was read."""

    def __init__(self, vectors, device_share: float = DEVICE_SHARE):
        # a tensor on a device (``encode(..., convert_to_tensor=True)``) is read on the host like an array
        self.vectors = vectors.detach().cpu() if isinstance(vectors, Tensor) else vectors
        self.device_share = device_share
        self._on_device: dict[str, Tensor] = {}
        self.placement: str | None = None

    def _device_table(self, device: torch.device) -> Tensor | None:
        key = str(device)
        if key not in self._on_device:
            size = int(np.prod(np.shape(self.vectors))) * 4
            try:
                free, _ = devices.device_memory_bytes(device)
            except ValueError:  # a device whose memory sentlab cannot read: the host path
                return None
            if size > self.device_share * free:
                return None
            self._on_device[key] = torch.as_tensor(np.asarray(self.vectors), dtype=torch.float32).to(device)
        return self._on_device[key]

    def __call__(self, rows: Tensor, device: torch.device) -> Tensor:
        device = torch.device(device)
        table = None if devices.runs_on_host(device) else self._device_table(device)
        if table is not None:
            self.placement = "device"
            return table[rows.to(device)]
        self.placement = "host"
        index = rows.detach().cpu().numpy()
        return torch.as_tensor(np.asarray(self.vectors[index]), dtype=torch.float32).to(device)
