"""Crash-safe checkpoints: a checkpoint counts only once it is complete.

The transformers Trainer writes a checkpoint file by file into ``checkpoint-N`` (weights, optimizer,
scheduler, RNG state, ``trainer_state.json``), then the callbacks add their own files (the loss's
state, the wall-clock budget). A process killed anywhere in between leaves a folder that looks like a
checkpoint and is not one. sentlab therefore:

* marks a checkpoint complete *last* (:class:`MarkCheckpointComplete`, the final ``on_save``
  callback): ``sentlab_checkpoint.json`` lists every file with its size, and is written under a
  temporary name and renamed, so it exists whole or not at all;
* deletes old checkpoints (``train.save_total_limit``) only after the new one is marked complete,
  with transformers' own ``rotate_checkpoints`` (the trainer is given no limit; it would rotate
  before the callbacks have written their files, and a kill then could leave no whole checkpoint);
* on ``--resume`` takes the newest checkpoint whose marker is present, whose files all have their
  recorded sizes and whose safetensors files are whole (:func:`newest_complete_checkpoint`); the
  others are reported with the reason and removed, and the steps after the kept one are trained again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_utils import rotate_checkpoints

from sentlab.encoders.weights import safetensors_problem
from sentlab.paths import write_text_atomic

COMPLETE_MARKER = "sentlab_checkpoint.json"
CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_folders(folder: Path) -> list[Path]:
    """The ``checkpoint-N`` folders of a run's checkpoints folder, by step."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := CHECKPOINT_NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def mark_complete(checkpoint: Path, step: int) -> None:
    """Record every file of ``checkpoint`` with its size, atomically, as its last file."""
    files = {
        str(p.relative_to(checkpoint)): p.stat().st_size
        for p in sorted(checkpoint.rglob("*"))
        if p.is_file() and p.name != COMPLETE_MARKER and not p.name.endswith(".partial")
    }
    write_text_atomic(checkpoint / COMPLETE_MARKER, json.dumps({"step": step, "files": files}, indent=1))


def checkpoint_problem(checkpoint: Path) -> str | None:
    """Why ``checkpoint`` cannot be resumed from, or None when it is complete."""
    try:
        record = json.loads((checkpoint / COMPLETE_MARKER).read_text("utf-8"))
        files = dict(record["files"])
    except FileNotFoundError:
        return "not marked complete (the run was stopped while saving it)"
    except (OSError, ValueError, KeyError, TypeError):
        return f"its {COMPLETE_MARKER} is unreadable"
    for name, size in files.items():
        path = checkpoint / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size:,} bytes, {size:,} when it was saved"
        if path.suffix == ".safetensors" and (problem := safetensors_problem(path)):
            return f"{name}: {problem}"
    return None


def newest_complete_checkpoint(folder: Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """(the newest complete checkpoint or None, [(checkpoint newer than it, why it is skipped)])."""
    skipped = []
    for checkpoint in reversed(checkpoint_folders(folder)):
        problem = checkpoint_problem(checkpoint)
        if problem is None:
            return checkpoint, skipped
        skipped.append((checkpoint, problem))
    return None, skipped


class MarkCheckpointComplete(TrainerCallback):
    """The last ``on_save``: mark the new checkpoint complete, then delete the oldest ones beyond
    ``save_total_limit`` (never the newest, nor the best one when the best is kept)."""

    def __init__(self, save_total_limit: int | None):
        self.save_total_limit = save_total_limit

    def on_save(self, args, state, control, **kwargs):
        from accelerate import PartialState

        # every process has written its own files into the checkpoint (its RNG state) before the first
        # takes their sizes: a file still being written would be marked at a wrong size (one process: no-op)
        PartialState().wait_for_everyone()
        if not state.is_world_process_zero:
            return
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if not checkpoint.is_dir():
            return
        mark_complete(checkpoint, state.global_step)
        rotate_checkpoints(
            output_dir=args.output_dir,
            save_total_limit=self.save_total_limit,
            best_model_checkpoint=state.best_model_checkpoint,
            use_mtime=False,
        )
