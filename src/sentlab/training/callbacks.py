"""Trainer callbacks: stop on a NaN loss, log a loss's components, keep a metrics log."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from transformers import TrainerCallback

from sentlab.errors import TrainingDivergedError


class StopOnNonFiniteLoss(TrainerCallback):
    """Raise :class:`TrainingDivergedError` as soon as a logged loss is NaN or infinite.

    The trainer is configured with ``logging_nan_inf_filter=False`` so a NaN reaches the log; the
    last checkpoint (before the divergence) stays on disk.
    """

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            raise TrainingDivergedError(
                f"training loss became {loss} at step {state.global_step}; lower the learning rate or "
                "use fp32/bf16 (last checkpoint kept)"
            )


class LossComponentsLog(TrainerCallback):
    """Add a loss's ``last_components`` (e.g. RankEncoder's l_cl and l_r of the latest step) to each
    training-loss log record, as ``<name>_last``; put it before :class:`MetricsLog`."""

    def __init__(self, loss: object):
        self.loss = loss

    def on_log(self, args, state, control, logs=None, **kwargs):
        components = getattr(self.loss, "last_components", None)
        if logs is not None and "loss" in logs and components:
            logs.update({f"{name}_last": value for name, value in components.items()})


class MetricsLog(TrainerCallback):
    """Append every log record (loss, learning rate, dev scores) as one JSON line.

    On ``--resume`` the records past the checkpoint's step (written before the crash, and about to be
    logged again) are dropped first, so every step appears once.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_train_begin(self, args, state, control, **kwargs):
        if not (state.is_world_process_zero and self.path.is_file()):
            return
        kept = []
        for line in self.path.read_text("utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by the crash
                continue
            if record.get("step", 0) <= state.global_step:
                kept.append(line)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
        os.replace(partial, self.path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"step": state.global_step, **logs}) + "\n")
