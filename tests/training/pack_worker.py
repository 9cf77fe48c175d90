"""Run by ``torchrun`` from test_distributed.py: one step of packed MLM pre-training on the memory-mapped
table, noting for this process whether the packed table's cache file was already there when it
packed (built by another process) and how many such files there were afterwards."""

import json
import os
import sys
import time
from pathlib import Path

from sentlab.methods import mlm, validate_config
from sentlab.training import engine
from tests.methods.test_mlm_pretraining import rawlm_config

corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
tree = rawlm_config(corpus, corpus, out / "run", max_steps=1, batch_size=2).to_tree()
tree["mlm"].update({"pack": True, "group_by_length": False, "heldout": None})
tree["model"]["max_seq_length"] = 16
rank = int(os.environ.get("RANK", "0"))
seen = {}
real = mlm.pack_blocks


def watched(dataset, tokenizer, length):
    folder = Path(dataset.cache_files[0]["filename"]).parent
    seen["before"] = sorted(p.name for p in folder.glob("cache-*.arrow"))
    if rank == 0:  # a slow tokenisation: without an order the other process would be packing meanwhile
        time.sleep(3)
    blocks = real(dataset, tokenizer, length)
    seen["after"] = sorted(p.name for p in folder.glob("cache-*.arrow"))
    return blocks


mlm.pack_blocks = watched
engine.train(validate_config(tree), evaluate=False)
(out / f"packed{rank}.json").write_text(json.dumps(seen), encoding="utf-8")
