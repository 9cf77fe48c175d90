"""Trainer callbacks: stop on a NaN loss, log a loss's components and the step time, keep a metrics
log, checkpoint the loss's own trainable state."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import torch
from torch import nn
from transformers import TrainerCallback

from sentlab.errors import ConfigError, TrainingDivergedError
from sentlab.losses.sets import own_losses
from sentlab.paths import atomic_path, write_text_atomic

LOSS_STATE_FILE = "loss_state.safetensors"


class StopOnNonFiniteLoss(TrainerCallback):
    """Raise :class:`TrainingDivergedError` as soon as a logged loss is NaN or infinite.

    The trainer is configured with ``logging_nan_inf_filter=False`` so a NaN reaches the log; put it
    after :class:`MetricsLog`, so the NaN record is in ``metrics.jsonl``. The run folder, with the last
    checkpoint before the divergence, stays on disk.
    """

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            raise TrainingDivergedError(
                f"training loss became {loss} at step {state.global_step}; lower the learning rate or "
                "use fp32/bf16 (the run folder keeps the loss log and the last checkpoint)",
                step=state.global_step,
            )


class LossComponentsLog(TrainerCallback):
    """Add a loss's ``last_components`` (e.g. RankEncoder's l_cl and l_r of the latest step) to each
    training-loss log record, as ``<name>_last``; put it before :class:`MetricsLog`. Losses keep them
    as detached tensors and they become floats only here, at logging steps, so a step does not wait
    for the device to report them."""

    def __init__(self, loss: object):
        self.loss = loss

    def on_log(self, args, state, control, logs=None, **kwargs):
        components = {  # under Matryoshka: the smallest dims'; with a loss per set, each set's by its name
            f"{prefix}{name}": value
            for prefix, inner in own_losses(self.loss).items()
            for name, value in (getattr(inner, "last_components", None) or {}).items()
        }

        if logs is not None and "loss" in logs and components:
            logs.update({f"{name}_last": float(value) for name, value in components.items()})


class StepTime(TrainerCallback):
    """Add ``seconds_per_step`` to each training-loss log record: the wall time since the previous one
    over the steps between them; put it before :class:`MetricsLog`. Logging reads the loss back from
    the device, so the interval holds finished steps. After an evaluation or a checkpoint the clock
    restarts as the next step begins, so the interval leaves out the evaluation and every file the
    checkpoint's callbacks write (the first interval holds the start-up)."""

    def __init__(self):
        self.last: tuple[float, int] | None = None
        self.paused = False

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = (time.perf_counter(), state.global_step)

    def on_step_begin(self, args, state, control, **kwargs):
        if self.paused:
            self.last, self.paused = (time.perf_counter(), state.global_step), False

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None or "loss" not in logs or self.last is None:
            return
        now, (then, step) = time.perf_counter(), self.last
        if state.global_step > step:
            logs["seconds_per_step"] = round((now - then) / (state.global_step - step), 4)
        self.last = (now, state.global_step)

    def on_evaluate(self, args, state, control, **kwargs):
        self.paused = True

    on_save = on_evaluate


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
        write_text_atomic(self.path, "".join(f"{line}\n" for line in kept))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"step": state.global_step, **logs}) + "\n")


def loss_tensors(loss: nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor of the method's own loss (inside Gradient Cache and Matryoshka; each set's under
    its name with a loss per training set, :func:`~sentlab.losses.sets.own_losses`) by the name a
    checkpoint gives it, less the modules the loss names as read only (``read_only_modules``:
    GISTEmbed's guide model, loaded afresh when the loss is built)."""
    tensors = {}
    for prefix, inner in own_losses(loss).items():
        read_only = tuple(f"{name}." for name in getattr(inner, "read_only_modules", ()))
        for name, tensor in inner.state_dict(keep_vars=True).items():  # names whatever wraps it
            if not name.startswith(read_only):
                tensors[prefix + name] = tensor
    return tensors


def loss_only_state(loss: nn.Module, model: nn.Module) -> dict[str, torch.Tensor]:
    """The trainable state a loss holds beyond the model (:func:`loss_tensors`): TSDAE's decoder
    (cross-attention, LM head), CT's first encoder, a SoftmaxLoss classifier. Tensors shared with the
    model (tied weights) are left out; they are in the model's checkpoint already."""
    in_model = {id(t) for t in model.state_dict(keep_vars=True).values()}
    state, seen = {}, set()
    for name, tensor in loss_tensors(loss).items():
        if id(tensor) in in_model or id(tensor) in seen:
            continue
        seen.add(id(tensor))
        state[name] = tensor.detach().contiguous().cpu()
    return state


def restore_loss_state(loss: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Copy ``state`` (:func:`loss_only_state`'s names) into the loss's own tensors, in place."""
    current = loss_tensors(loss)
    with torch.no_grad():
        for name, tensor in state.items():
            current[name].copy_(tensor)


class LossStateCheckpoint(TrainerCallback):
    """Write :func:`loss_only_state` into each checkpoint folder (``loss_state.safetensors``) so that
    ``--resume`` restores the parts of a method that live in its loss; the transformers Trainer saves
    only the model. Written to a temporary name and renamed: a kill mid-write leaves no file, and
    :func:`load_loss_state` then refuses the checkpoint instead of starting the loss afresh."""

    def __init__(self, loss: nn.Module, model: nn.Module):
        self.loss, self.model = loss, model

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        tensors = loss_only_state(self.loss, self.model)
        if not tensors:
            return
        from safetensors.torch import save_file

        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        with atomic_path(folder / LOSS_STATE_FILE) as temporary:
            save_file(tensors, str(temporary))


def load_loss_state(loss: nn.Module, model: nn.Module, checkpoint: Path) -> None:
    """Restore what :class:`LossStateCheckpoint` saved; a loss with its own state and a checkpoint
    without the file (killed while saving) is a one-line error naming the folder to delete."""
    expected = loss_only_state(loss, model)
    if not expected:
        return
    path = Path(checkpoint) / LOSS_STATE_FILE
    if not path.is_file():
        raise ConfigError(
            f"{checkpoint}: checkpoint has no {LOSS_STATE_FILE} (the run was killed while saving it); "
            "delete this checkpoint folder to resume from the one before"
        )
    from safetensors.torch import load_file

    saved = load_file(str(path))
    if set(saved) != set(expected):
        raise ConfigError(f"{path}: holds other loss parameters than this run's loss (was the config changed?)")
    restore_loss_state(loss, saved)


class WallClockBudget(TrainerCallback):
    """Stop (with a checkpoint, and a dev evaluation when there is a dev task) once ``minutes`` of
    training have passed - ``train.max_minutes``, the wall-clock budget of ``sentlab adapt``. The
    time spent is saved in every checkpoint (``wall_clock.json``), so a run resumed with ``--resume``
    counts the minutes it had already spent, not only the ones after the restart."""

    FILE = "wall_clock.json"

    def __init__(self, minutes: float):
        self.budget_seconds = 60.0 * minutes
        self.spent_before = 0.0
        self.started: float | None = None

    def spent_seconds(self) -> float:
        return self.spent_before + (time.monotonic() - self.started if self.started is not None else 0.0)

    def on_train_begin(self, args, state, control, **kwargs):
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}" / self.FILE
        if state.global_step and saved.is_file():
            self.spent_before = float(json.loads(saved.read_text("utf-8"))["seconds"])
        self.started = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self._spent_anywhere(args):
            control.should_training_stop = True
            control.should_save = True
            control.should_evaluate = args.eval_strategy != "no"
        return control

    def _spent_anywhere(self, args) -> bool:
        """Whether the budget is spent on any process: all stop, save and evaluate at the same step, as
        their collectives require (each one's own clock could disagree by a step)."""
        spent = self.spent_seconds() >= self.budget_seconds
        if args.world_size <= 1:  # one process: no collective, no device sync a step
            return spent
        from accelerate.utils import reduce

        return bool(reduce(torch.tensor([float(spent)], device=args.device), reduction="sum").item() > 0)

    def on_save(self, args, state, control, **kwargs):
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():  # one writer
            (folder / self.FILE).write_text(json.dumps({"seconds": self.spent_seconds()}) + "\n", encoding="utf-8")
