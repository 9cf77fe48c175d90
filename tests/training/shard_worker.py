"""Run by ``torchrun`` from test_distributed.py: one epoch of SimCSE on the memory-mapped training
table, recording which training texts this process batched."""

import json
import sys
from pathlib import Path

import torch.distributed as dist

from sentlab.training import engine
from tests.conftest import tiny_config

backbone, corpus, out, batch_size = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
cfg = tiny_config(backbone, corpus, out / "run", batch_size=batch_size, pooler="mean", max_steps=-1, epochs=1)
trainer = engine.build_trainer(cfg, engine.RunPaths(out / "run"))
seen: list[str] = []


class Recording:
    """The trainer's collator, noting each row's text (its other attributes are the collator's)."""

    def __init__(self, collate):
        self.collate = collate

    def __getattr__(self, name):
        return getattr(self.collate, name)

    def __call__(self, features):
        seen.extend(row["sentence"] for row in features)
        return self.collate(features)


trainer.data_collator = Recording(trainer.data_collator)
trainer.train()
rank = dist.get_rank() if dist.is_initialized() else 0
(out / f"seen{rank}.json").write_text(json.dumps(seen), encoding="utf-8")
