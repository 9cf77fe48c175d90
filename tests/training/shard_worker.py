"""Run by ``torchrun`` from test_distributed.py: SimCSE on the memory-mapped training table
(``engine.train``), recording which training texts this process batched, in order.

``--kill-step S`` kills the second process (SIGKILL) at the end of step S, as a crash of one machine
would; ``--resume`` continues the run from its newest complete checkpoint."""

import argparse
import json
import os
import signal
from pathlib import Path

import torch.distributed as dist
from transformers import TrainerCallback

from sentlab.training import engine
from tests.conftest import tiny_config

parser = argparse.ArgumentParser()
parser.add_argument("backbone", type=Path)
parser.add_argument("corpus", type=Path)
parser.add_argument("out", type=Path)
parser.add_argument("batch_size", type=int)
parser.add_argument("--max-steps", type=int, default=-1)
parser.add_argument("--save-steps", type=int, default=None)
parser.add_argument("--kill-step", type=int, default=None)
parser.add_argument("--resume", action="store_true")
args = parser.parse_args()

checkpoints = {"save_steps": args.save_steps, "save_total_limit": 1} if args.save_steps else {}
cfg = tiny_config(
    args.backbone,
    args.corpus,
    args.out / "run",
    batch_size=args.batch_size,
    pooler="mean",
    max_steps=args.max_steps,
    epochs=1,
    **checkpoints,
)
seen: list[str] = []
rank = int(os.environ.get("RANK", "0"))


class Recording:
    """The trainer's collator, noting each row's text (its other attributes are the collator's)."""

    def __init__(self, collate):
        self.collate = collate

    def __getattr__(self, name):
        return getattr(self.collate, name)

    def __call__(self, features):
        seen.extend(row["sentence"] for row in features)
        return self.collate(features)


class KillSecondProcess(TrainerCallback):
    def on_step_end(self, args_, state, control, **kwargs):
        if state.global_step == args.kill_step and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)


init = engine.SentlabTrainer.__init__


def recording_init(self, *a, **k):
    init(self, *a, **k)
    self.data_collator = Recording(self.data_collator)
    self.add_callback(KillSecondProcess())


engine.SentlabTrainer.__init__ = recording_init
engine.train(cfg, resume=args.resume, evaluate=False)
rank = dist.get_rank() if dist.is_initialized() else rank
(args.out / f"seen{rank}.json").write_text(json.dumps(seen), encoding="utf-8")
