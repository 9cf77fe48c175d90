"""How a training step runs, beside its precision: ``torch.compile`` of the networks, the fused
optimizer, the data loader's workers and pinned memory. Each setting is resolved against the device
(applied, or refused in one line where it cannot run) and what ran is read back at the first step
(the second in a compiled run, whose first runs eagerly while its precision is read back) into ``RUN/runtime.json``, the run log and ``results.json`` (``settings.training_runtime``).

``train.compile: true`` compiles the forward of every transformers body a loss runs, for the
training steps only (parameter names, checkpoints and the saved model are unchanged): the encoder's,
TSDAE's decoder, MLM's head body, CT's second encoder, plus the modules a loss calls directly
(``half_precision_modules``, e.g. MLM's prediction layer). ``train.fused_optimizer`` (``auto``: on
CUDA and CPU) trains with ``torch.optim.AdamW(fused=True)`` (the trainer's ``adamw_torch_fused``): one
kernel for every parameter's update instead of a loop over tensors. Pinned memory for the data
loader is on where batches travel to a GPU (``train.dataloader_workers`` sets its worker processes).
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from sentlab.errors import ConfigError

ADAMW = ("adamw_torch", "adamw_torch_fused")


def check_compile(device_type: str) -> None:
    """Refuse ``train.compile`` in one line where ``torch.compile`` cannot run on ``device_type``."""
    import torch._dynamo

    if not torch._dynamo.is_dynamo_supported():
        raise ConfigError("train.compile: torch.compile does not support this Python; set train.compile: false")
    if device_type == "cpu" and not any(shutil.which(c) for c in ("g++", "c++", "clang++")):
        raise ConfigError(
            "train.compile: torch.compile on a CPU needs a C++ compiler (g++ or clang++); install one or set "
            "train.compile: false"
        )
    if device_type == "cuda" and importlib.util.find_spec("triton") is None:
        raise ConfigError(
            "train.compile: torch.compile on a GPU needs triton (it comes with torch's CUDA wheels); "
            "set train.compile: false"
        )
    if device_type not in ("cpu", "cuda"):
        raise ConfigError(f"train.compile: not supported by sentlab on {device_type}; set train.compile: false")


def fused_optimizer(requested: bool | str, optimizer: str, device_type: str) -> bool:
    """Whether AdamW runs fused: ``auto`` wherever torch has a fused AdamW (CUDA and CPU) and the method
    trains with AdamW; ``true`` refused in one line for a method with another optimizer (CT's RMSprop)
    or a device torch has no fused AdamW for."""
    if requested == "auto":
        return device_type in ("cpu", "cuda") and optimizer in ADAMW
    if not requested:
        return False
    if optimizer not in ADAMW:
        raise ConfigError(
            f"train.fused_optimizer: the method trains with {optimizer}, which has no fused form here; "
            "set train.fused_optimizer: auto or false"
        )
    if device_type not in ("cpu", "cuda"):
        raise ConfigError(f"train.fused_optimizer: torch has no fused AdamW on {device_type}; set it to auto or false")
    return True


def compiled_networks(loss: nn.Module) -> dict[str, nn.Module]:
    """The modules ``train.compile`` compiles: each transformers body of the loss that holds no other
    (an LM head's body, not the head around it), and the modules the loss calls directly."""
    from transformers import PreTrainedModel

    models = {name: m for name, m in loss.named_modules() if isinstance(m, PreTrainedModel)}
    candidates = [
        (name, m) for name, m in models.items() if not any(o != name and o.startswith(f"{name}.") for o in models)
    ]
    for name in getattr(loss, "half_precision_modules", ()):
        try:
            candidates.append((name, loss.get_submodule(name)))
        except AttributeError:  # e.g. MLM's head.cls, which only BERT-style heads have
            continue
    unique: dict[str, nn.Module] = {}
    for name, module in candidates:  # a network shared by two paths (CT with one encoder) compiles once
        if all(module is not kept for kept in unique.values()):
            unique[name] = module
    return unique


@contextlib.contextmanager
def networks_compiled(loss: nn.Module, enabled: bool = True) -> Iterator[list[str]]:
    """Within the block, each of :func:`compiled_networks` runs a ``torch.compile`` of its forward
    (sentence-transformers calls a body's ``forward`` itself, so the forward is what is compiled);
    the forwards are restored afterwards, so the saved and evaluated model is the plain one. Yields
    the compiled networks' names (none when not ``enabled``)."""
    if not enabled:
        yield []
        return
    networks = compiled_networks(loss)
    before: list[tuple[nn.Module, Any]] = []
    try:
        for module in networks.values():
            before.append((module, module.__dict__.get("forward")))
            module.forward = torch.compile(module.forward)
        yield list(networks)
    finally:
        for module, previous in before:
            if previous is None:
                module.__dict__.pop("forward", None)
            else:
                module.forward = previous


def compiled_graphs() -> int:
    """How many graphs ``torch.compile`` has built in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def optimizer_record(optimizer: Any) -> dict[str, Any]:
    """The optimizer that ran: its class and whether it is fused / foreach (read from the optimizer)."""
    inner = getattr(optimizer, "optimizer", optimizer)  # Accelerate wraps it
    defaults = getattr(inner, "defaults", {})
    return {
        "class": type(inner).__name__,
        "fused": bool(defaults.get("fused")),
        "foreach": defaults.get("foreach"),
    }


def chunking_record(loss: nn.Module) -> dict[str, Any] | None:
    """How the loss splits a batch, as its method recorded it (``loss.chunking``: Gradient Cache, ``train.mini_batch_size``,
    ``{"mini_batch_size": rows or None for the whole batch, "source": "set" | "auto"}``; with a loss per
    training set, ``{"sets": {name: that or None}}``), or None."""
    recorded = getattr(loss, "chunking", None)
    return dict(recorded) if recorded is not None else None


def frozen_placements(loss: nn.Module) -> dict[str, str | None]:
    """Where each frozen table of ``loss`` was read at the step just run (``device``: copied once and
    gathered there; ``host``: gathered on the host, one wait a step on an accelerator), by its path."""
    from sentlab.losses.frozen import FrozenRows

    found: dict[str, str | None] = {}
    for name, module in loss.named_modules():
        for attribute, value in vars(module).items():
            tables = value if isinstance(value, (list, tuple)) else [value]
            for k, table in enumerate(tables):
                if isinstance(table, FrozenRows):
                    path = ".".join(p for p in (name, attribute) if p) + (f"[{k}]" if value is tables else "")
                    found[path] = table.placement
    return found


def runtime_record(
    device: torch.device,
    compile_requested: bool,
    compiled: list[str],
    graphs: int | None,
    optimizer: Any,
    workers: int,
    pin_memory: bool,
    chunking: dict[str, Any] | None,
    frozen: dict[str, str | None] | None = None,
    batch_sampler: str | None = None,
) -> dict[str, Any]:
    """What ran at the first step: the device, compile (networks and graphs built), the optimizer, the
    data loader's workers, pinned memory and batch sampler, and the batch chunking (Gradient Cache) of the loss.
    ``graphs`` is None for a compiled run that ended before a compiled step (its first step runs
    eagerly while the precision is read back)."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    return {
        "device": str(device),
        "device_name": name,
        "compile": {"requested": compile_requested, "networks": compiled, "graphs": graphs},
        "optimizer": optimizer_record(optimizer),
        "dataloader": {"workers": int(workers), "pin_memory": bool(pin_memory), "batch_sampler": batch_sampler},
        "chunking": chunking,
        "frozen_tables": frozen or {},
    }


def runtime_summary(record: dict[str, Any]) -> str:
    """One line for the run log."""
    compile_ = record["compile"]
    if compile_["requested"]:
        built = (
            "no compiled step ran: the run ended at its eager first step"
            if compile_["graphs"] is None
            else f"{compile_['graphs']} graph(s) built"
        )
        compiled = f"compile on ({len(compile_['networks'])} network(s), {built})"
    else:
        compiled = "compile off"
    optimizer = record["optimizer"]
    opt = f"{optimizer['class']}{' fused' if optimizer['fused'] else ''}"
    loader = record["dataloader"]
    line = (
        f"runtime read back: {record['device']}"
        f"{' (' + record['device_name'] + ')' if record['device_name'] else ''}, {compiled}, optimizer {opt}, "
        f"{loader['workers']} data-loader worker(s), pinned memory {'on' if loader['pin_memory'] else 'off'}"
    )
    if loader.get("batch_sampler"):
        line += f", batches from {loader['batch_sampler']}"
    chunking = record["chunking"]
    parts = chunking.get("sets", {}) if chunking else {}  # a loss per training set: each set's, by its name
    for name, part in parts.items() if parts else [("", chunking)]:
        if part:
            size, where = part["mini_batch_size"], f"{name}: " if name else ""
            line += (
                f", {where}{f'Gradient Cache in chunks of {size} rows' if size else 'whole batch'} ({part['source']})"
            )
    for name, placement in record.get("frozen_tables", {}).items():
        line += f", frozen table {name} read on the {placement}"
    if compile_["requested"] and compile_["graphs"] == 0:
        line += "; WARNING, train.compile was asked but no graph was compiled"
    return line
