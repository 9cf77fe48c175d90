"""Mixed precision that is applied or refused, reaches every network of a method, and is read back.

``train.mixed_precision`` (``no`` / ``fp16`` / ``bf16``) is resolved against the device the trainer
runs on (:func:`resolve_precision`):

* on a GPU, fp16 is the trainer's fp16 with loss scaling (Accelerate's ``GradScaler``) and bf16 the
  trainer's bf16;
* on a CPU, bf16 runs as bf16 autocast where the processor executes bf16 (AVX-512 BF16 or AMX, read
  from its feature flags: :func:`cpu_supports_bf16`), and is a one-line error elsewhere (no silent
  fp32 run labelled bf16); fp16 on a CPU is a one-line error (the trainer has no fp16 path there).

Accelerate autocasts only the forward of the trainer's model. A method's loss holds other networks
too (TSDAE's decoder, MLM's prediction head, CT's first encoder), so :func:`networks_in_half_precision`
puts autocast on every network of the loss, the way Accelerate does on the model: each network's
forward runs under ``torch.autocast`` and its floating outputs come back as float32. The loss's own
arithmetic (similarities, softmax, log-likelihoods) therefore runs in float32, as autocast itself
does for softmax and cross-entropy; a module that must stay in float32 on purpose says why in a
``runs_in_float32`` class attribute (BERT-flow's Glow flow) and disables autocast in its forward.

What ran is read back, not assumed: :class:`PrecisionProbe` records the dtype of every linear and
convolution output of the loss's networks in the first training step, by component, and the engine
writes that record to ``RUN/precision.json``, ``RUN/run.log`` and the results.
"""

from __future__ import annotations

import contextlib
import functools
import platform
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from sentlab.errors import ConfigError

HALF_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # Linux /proc/cpuinfo names of the instructions


@functools.cache
def cpu_supports_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU executes bf16 arithmetic natively: AVX-512 BF16 or AMX-BF16 (x86-64, from
    ``/proc/cpuinfo``), or an Arm core with the BF16 extension (``bf16`` in its features). Elsewhere
    bf16 would be emulated through fp32, so bf16 there is refused rather than mislabelled."""
    if cpuinfo.is_file():
        flags = set()
        for line in cpuinfo.read_text("utf-8", errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                flags.update(line.split(":", 1)[-1].split())
        return any(flag in flags for flag in CPU_BF16_FLAGS) or "bf16" in flags
    return platform.system() == "Darwin" and platform.machine() == "arm64"  # Apple M2 and newer run bf16


@dataclass(frozen=True)
class Precision:
    """The resolved ``train.mixed_precision`` on one device type."""

    requested: str  # "no" | "fp16" | "bf16"
    device_type: str  # "cpu" | "cuda" | ...

    @property
    def dtype(self) -> torch.dtype | None:
        return HALF_DTYPES.get(self.requested)

    @property
    def loss_scaling(self) -> bool:
        """fp16 trains with a gradient scaler (the trainer's, from Accelerate); bf16 needs none."""
        return self.requested == "fp16"

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def describe(self) -> str:
        if self.dtype is None:
            return f"fp32 on {self.device_type}"
        scaling = ", loss scaling" if self.loss_scaling else ""
        return f"{self.requested} autocast on {self.device_type}{scaling}"


def resolve_precision(requested: str, device_type: str) -> Precision:
    """``train.mixed_precision`` on ``device_type``, or a one-line :class:`ConfigError` where it cannot
    run as asked."""
    if requested not in ("no", *HALF_DTYPES):
        raise ConfigError(f"train.mixed_precision: {requested!r} is not one of no, fp16, bf16")
    if device_type == "cpu" and requested == "fp16":
        raise ConfigError(
            "train.mixed_precision: fp16 needs a GPU (a CPU has no fp16 training path); "
            "use bf16 on a CPU with AVX-512 BF16 / AMX, or no (fp32)"
        )
    if device_type == "cpu" and requested == "bf16" and not cpu_supports_bf16():
        raise ConfigError(
            "train.mixed_precision: bf16 needs a CPU with AVX-512 BF16 or AMX (this one has neither, "
            "so bf16 would be emulated in fp32); set train.mixed_precision: no"
        )
    if device_type == "cuda" and requested == "bf16" and not torch.cuda.is_bf16_supported(including_emulation=False):
        raise ConfigError("train.mixed_precision: bf16 needs an Ampere or newer NVIDIA GPU; use fp16 or no")
    return Precision(requested, device_type)


# -- autocast on every network of a loss ------------------------------------------------------------


def float32_outputs(value: Any) -> Any:
    """``value`` with every half-precision tensor in it (dicts, lists, tuples, model outputs) as float32."""
    if isinstance(value, torch.Tensor):
        return _upcast(value)
    if isinstance(value, dict):  # also transformers' ModelOutput (an OrderedDict)
        for key in list(value.keys()):
            value[key] = float32_outputs(value[key])
        return value
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(float32_outputs(v) for v in value)
    return value


def loss_networks(loss: nn.Module) -> dict[str, nn.Module]:
    """The networks of a loss that run under autocast, by their path in the loss: every
    sentence-transformers model and every transformers model in it, plus what the loss names in its
    ``half_precision_modules`` (modules it calls directly, e.g. MLM's prediction head)."""
    from sentence_transformers import SentenceTransformer
    from transformers import PreTrainedModel

    networks = {
        name: module
        for name, module in loss.named_modules()
        if isinstance(module, (SentenceTransformer, PreTrainedModel))
    }
    for name in getattr(loss, "half_precision_modules", ()):
        try:
            networks[name] = loss.get_submodule(name)
        except AttributeError:  # e.g. MLM's head.cls, which only BERT-style heads have
            pass
    return networks


@contextlib.contextmanager
def networks_in_half_precision(loss: nn.Module, precision: Precision) -> Iterator[None]:
    """Within the block, each network of ``loss`` (:func:`loss_networks`) runs its forward under
    ``precision``'s autocast and returns float32; the forwards are restored afterwards (the final
    model is evaluated in fp32). Nothing changes for fp32."""
    if precision.dtype is None:
        yield
        return
    before: dict[int, tuple[nn.Module, Callable | None]] = {}
    try:
        for module in loss_networks(loss).values():
            if id(module) in before:
                continue
            before[id(module)] = (module, module.__dict__.get("forward"))
            module.forward = _autocast_forward(module.forward, precision)
        yield
    finally:  # each forward as it was before the block (Accelerate's autocast patch on the model goes too)
        for module, forward in before.values():
            module.__dict__.pop("forward", None)
            if forward is not None:
                module.forward = forward


def _autocast_forward(forward: Callable, precision: Precision) -> Callable:
    @functools.wraps(forward)
    def run(*args, **kwargs):
        with precision.autocast():
            out = forward(*args, **kwargs)
        return float32_outputs(out)

    return run


def float32_region(device_type: str) -> contextlib.AbstractContextManager:
    """Autocast switched off: for a module that must compute in float32 under mixed precision."""
    return torch.autocast(device_type, enabled=False)


# -- reading back what ran ---------------------------------------------------------------------------


@dataclass
class PrecisionProbe:
    """Records the output dtype of every ``nn.Linear`` / ``nn.Conv*`` of a loss's networks during one
    forward pass, by component (the network's path, and inside a sentence-transformers model the
    module's index and class), so the run can say which parts ran in half precision."""

    loss: nn.Module
    seen: dict[str, set[str]] = field(default_factory=dict)
    on_purpose: dict[str, str] = field(default_factory=dict)
    _handles: list = field(default_factory=list)

    def __enter__(self) -> PrecisionProbe:
        for component, module in self.components().items():
            reason = getattr(type(module), "runs_in_float32", None)
            if reason:
                self.on_purpose[component] = reason
            for leaf in module.modules():
                if isinstance(leaf, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                    self._handles.append(leaf.register_forward_hook(functools.partial(self._record, component)))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def components(self) -> dict[str, nn.Module]:
        """Component path -> module: a sentence-transformers model's modules one by one, each other
        network whole (a module belongs to the first component that reaches it)."""
        from sentence_transformers import SentenceTransformer

        found: dict[str, nn.Module] = {}
        claimed: set[int] = set()
        for name, network in loss_networks(self.loss).items():
            parts = (
                [(f"{name}.{i}", child) for i, child in enumerate(network)]
                if isinstance(network, SentenceTransformer)
                else [(name, network)]
            )
            for path, module in parts:
                if id(module) in claimed:
                    continue
                found[f"{path} ({type(module).__name__})"] = module
                claimed |= {id(m) for m in module.modules()}
        return found

    def _record(self, component: str, module: nn.Module, inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor) and output.is_floating_point():
            self.seen.setdefault(component, set()).add(str(output.dtype).removeprefix("torch."))

    def record(
        self, precision: Precision, loss_value: torch.Tensor | None = None, grad_scaler: bool | None = None
    ) -> dict[str, Any]:
        """What ran: the request, the device, each component's dtypes, the float32-on-purpose ones
        with their reasons, and the components that ran in float32 although half precision was asked."""
        components = {name: sorted(dtypes) for name, dtypes in self.seen.items()}
        unexpected = (
            []
            if precision.dtype is None
            else [
                name
                for name, dtypes in components.items()
                if name not in self.on_purpose and str(precision.dtype).removeprefix("torch.") not in dtypes
            ]
        )
        return {
            "requested": precision.requested,
            "device": precision.device_type,
            "ran": precision.describe(),
            "components": components,
            "float32_on_purpose": {name: reason for name, reason in self.on_purpose.items() if name in components},
            "float32_unexpectedly": unexpected,
            "loss_dtype": str(loss_value.dtype).removeprefix("torch.") if loss_value is not None else None,
            "grad_scaler": grad_scaler,
        }


def summary(record: dict[str, Any]) -> str:
    """One line for the run log."""
    by_dtype: dict[str, list[str]] = {}
    for name, dtypes in record["components"].items():
        by_dtype.setdefault("/".join(dtypes), []).append(name)
    parts = "; ".join(f"{dtype}: {', '.join(names)}" for dtype, names in by_dtype.items()) or "no layer ran"
    line = f"precision read back at the first step: {record['ran']} ({parts})"
    if record["float32_on_purpose"]:
        line += f"; float32 on purpose: {', '.join(record['float32_on_purpose'])}"
    if record["float32_unexpectedly"]:
        line += (
            f"; WARNING, float32 although {record['requested']} was asked: {', '.join(record['float32_unexpectedly'])}"
        )
    return line


def in_float32(fn: Callable) -> Callable:
    """Run ``fn`` with autocast off and its half-precision tensor arguments as float32 (float32 and
    float64 stay as they are): a loss's arithmetic (similarity matrices over a temperature, softmax,
    log-likelihoods) stays at least float32 even when the caller wraps the whole loss in
    ``torch.autocast``, as autocast keeps softmax and cross-entropy."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        device_type = tensors[0].device.type if tensors else "cpu"
        with float32_region(device_type):
            return fn(*(_upcast(a) for a in args), **{k: _upcast(v) for k, v in kwargs.items()})

    return run


def _upcast(value: Any) -> Any:
    """A half-precision tensor as float32; anything else unchanged."""
    return value.float() if isinstance(value, torch.Tensor) and value.dtype in HALF_DTYPES.values() else value
