"""Run ``sentlab train CONFIG`` and kill -9 this process at a named point inside the save of one
checkpoint (tests/training/test_checkpoints.py): ``python -m tests.training.crash_worker CONFIG POINT STEP``.

The points follow the order in which a checkpoint is written: the trainer's files (model weights,
optimizer and scheduler, RNG state, trainer_state.json), then the callbacks' files, then sentlab's
completion marker. A "-half" point first cuts the file just written to half its size, as a kill
while the operating system had written only part of it leaves it.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def cut_to_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def install(point: str, step: int) -> None:
    from transformers import TrainerState

    from sentlab.training import checkpoints
    from sentlab.training.engine import SentlabTrainer

    def at_step(state_or_trainer) -> bool:
        state = getattr(state_or_trainer, "state", state_or_trainer)
        return state.global_step == step

    def folder(trainer) -> Path:
        return Path(trainer.args.output_dir) / f"checkpoint-{step}"

    save_model = SentlabTrainer.save_model
    save_optimizer = SentlabTrainer._save_optimizer_and_scheduler
    save_json = TrainerState.save_to_json
    mark_on_save = checkpoints.MarkCheckpointComplete.on_save
    mark_complete = checkpoints.mark_complete

    def patched_save_model(self, output_dir=None, _internal_call=False):
        save_model(self, output_dir, _internal_call)
        if point == "weights-half" and at_step(self) and output_dir and Path(output_dir) == folder(self):
            cut_to_half(max(Path(output_dir).glob("*.safetensors"), key=lambda p: p.stat().st_size))
            die()

    def patched_save_optimizer(self, output_dir):
        if point == "before-optimizer" and at_step(self):
            die()
        save_optimizer(self, output_dir)
        if point == "optimizer-half" and at_step(self):
            cut_to_half(Path(output_dir) / "optimizer.pt")
            die()

    def patched_save_json(self, json_path):
        save_json(self, json_path)
        if point == "trainer-state-half" and self.global_step == step:
            cut_to_half(Path(json_path))
            die()

    def patched_mark_on_save(self, args, state, control, **kwargs):
        if point == "before-marker" and at_step(state):
            die()
        mark_on_save(self, args, state, control, **kwargs)
        if point == "after-marker" and at_step(state):
            die()

    def patched_mark_complete(checkpoint, global_step):
        if point == "marker-half" and global_step == step:
            (checkpoint / (checkpoints.COMPLETE_MARKER + ".partial")).write_text('{"step": 4, "fi', encoding="utf-8")
            die()
        mark_complete(checkpoint, global_step)

    SentlabTrainer.save_model = patched_save_model
    SentlabTrainer._save_optimizer_and_scheduler = patched_save_optimizer
    TrainerState.save_to_json = patched_save_json
    checkpoints.MarkCheckpointComplete.on_save = patched_mark_on_save
    checkpoints.mark_complete = patched_mark_complete


if __name__ == "__main__":
    config, point, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
    install(point, step)
    from sentlab.cli import main

    main(["train", config, "--quiet", "--no-eval"])
    sys.exit(17)  # the kill point was never reached
