"""The device sentlab trains and encodes on, decided in one place.

The trainer of sentence-transformers (Accelerate underneath) takes the accelerator when there is one,
and ``SentenceTransformer(...)`` loads a model onto it; :func:`training_device` names that same device,
so everything sentlab builds beside a model (a loss's own networks, index tensors, frozen tables) can
be put where the model is. ``CUDA_VISIBLE_DEVICES=""`` makes a GPU machine train on its CPU.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

__all__ = [
    "activation_bytes",
    "chunk_that_fits",
    "device_memory_bytes",
    "runs_on_host",
    "training_device",
    "training_device_type",
]


def runs_on_host(device: torch.device | str) -> bool:
    """Whether ``device`` is the host's own memory (a CPU). The paths that read a tensor with numpy
    (frozen rows read where they lie, RankEncoder's ranks by numpy) run only there: on an accelerator
    they would make the host wait for the device every step, so the step keeps to torch operations."""
    return torch.device(device).type == "cpu"


def training_device_type() -> str:
    """``cuda``, ``xpu``, ``mps`` or ``cpu``: the device type the trainer trains on."""
    if torch.cuda.is_available():
        return "cuda"
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def training_device() -> torch.device:
    """The device the trainer trains on (its first one under ``torchrun``: each process has its own)."""
    kind = training_device_type()
    if kind == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(kind)


@functools.cache
def _host_memory_bytes() -> int:
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def device_memory_bytes(device: torch.device | str) -> tuple[int, int]:
    """(free, total) bytes of ``device``'s memory: the card's for CUDA (``torch.cuda.mem_get_info``),
    the machine's available and physical memory for the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return int(free), int(total)
    if device.type == "cpu":
        available = _host_memory_bytes()
        try:
            with open("/proc/meminfo", encoding="ascii") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        available = int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
        return available, _host_memory_bytes()
    raise ValueError(f"the memory of a {device.type} device is not known to sentlab")


def activation_bytes(config: Any, sequences: int, length: int, half: bool) -> int:
    """Memory the activations of a Transformer encoder's training step keep for the backward pass:
    Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", Sec. 4.1),
    ``s b h (34 + 5 a s / h)`` bytes a layer in 16-bit precision, for ``b`` sequences of ``s`` tokens,
    hidden size ``h`` and ``a`` attention heads; twice that in float32."""
    h, a, layers = config.hidden_size, config.num_attention_heads, config.num_hidden_layers
    per_layer = length * sequences * h * (34 + 5 * a * length / h)
    return int(per_layer * layers * (1 if half else 2))


def chunk_that_fits(
    config: Any, rows: int, columns: int, length: int, half: bool, free_bytes: int, parameters: int
) -> tuple[int | None, str]:
    """The Gradient Cache chunk for a batch of ``rows`` x ``columns`` sequences: None (the whole batch
    in one pass) when its activations (:func:`activation_bytes`) and the optimizer's state (AdamW:
    gradients and two moments, float32, 12 bytes a parameter) fit in 80 % of ``free_bytes``, else the
    most rows whose activations fit: all of them (Gradient Cache embeds one column of a chunk at a time,
    so a chunk of every row holds ``rows`` sequences, not ``rows x columns``), else the largest power
    of two (at least 1); and why, in words."""
    budget = 0.8 * free_bytes - 12 * parameters
    whole = activation_bytes(config, rows * columns, length, half)
    gib = 2.0**30
    if whole <= budget:
        return None, f"the whole batch ({whole / gib:.1f} GiB of activations, {budget / gib:.1f} GiB usable)"
    chunk = 1
    while chunk * 2 <= rows and activation_bytes(config, chunk * 2, length, half) <= budget:
        chunk *= 2
    if chunk < rows and activation_bytes(config, rows, length, half) <= budget:
        chunk = rows  # a batch that is not a power of two, one column of it at a time
    return chunk, (
        f"chunks of {chunk} rows (the whole batch needs {whole / gib:.1f} GiB of activations, "
        f"{max(budget, 0) / gib:.1f} GiB usable)"
    )
