"""Run by ``torchrun`` from test_distributed.py: one SimCSE (or RankEncoder) step, then dump this rank's
weights (RSE: and relation vectors) and loss."""

import json
import os
import sys
from pathlib import Path

import torch.distributed as dist
from safetensors.torch import save_file

from sentlab.methods import validate_config
from sentlab.training import engine
from tests.conftest import tiny_config

backbone, corpus, out, batch_size = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
method = sys.argv[5] if len(sys.argv) > 5 else "simcse-unsup"
cfg = tiny_config(backbone, corpus, out / "run", max_steps=1, batch_size=batch_size, learning_rate=1e-2, pooler="mean")
if method == "rankencoder":  # E1 = the same tiny model, corpus = the training sentences; both loss terms count
    tree = cfg.to_tree()
    tree["method"] = "rankencoder"
    tree["rank"] = {
        "base_encoder": str(backbone),
        "corpus": str(corpus),
        "tau_lower": None,
        "tau_upper": None,
        "lambda_train": 1.0,
        "combine": "weighted_sum",
    }
    cfg = validate_config(tree)
if method.startswith("rse"):  # two relations: paraphrase pairs (tab-separated) and the corpus as same_sent
    pairs = out / "pairs.tsv"
    out.mkdir(parents=True, exist_ok=True)
    lines = corpus.read_text(encoding="utf-8").split("\n")
    from filelock import FileLock

    # written once, by whichever process comes first: a second write would change the file (its status-
    # change time) while the first process reads it, which sentlab rightly refuses
    with FileLock(str(out / "pairs.lock")):
        if not pairs.is_file():
            partial = out / f"pairs.{os.getpid()}.partial"
            partial.write_text("".join(f"{s}\t{s.split()[-1]} {s}\n" for s in lines if s), encoding="utf-8")
            os.replace(partial, pairs)
    tree = cfg.to_tree()
    tree["method"] = "rse"
    tree["data"] = {}  # RSE reads rse.sources (and refuses data.train and data.columns)
    tree["model"]["pooler"] = "cls"
    tree["rse"] = {
        "sources": [
            {"relation": "paraphrase", "path": str(pairs), "format": "paranmt", "cap": 4},
            {"relation": "same_sent", "path": str(corpus), "format": "text", "cap": 4},
        ],
    }
    tree["train"]["mini_batch_size"] = 3 if method == "rse-cached" else None
    cfg = validate_config(tree)
paths = engine.RunPaths(out / "run")
trainer = engine.build_trainer(cfg, paths)
if method.startswith("rse"):  # SGD: the step is lr x gradient, so the comparison reads the gradients themselves
    trainer.args.optim = "sgd"
    initial = {k: v.detach().clone().contiguous().cpu() for k, v in trainer.model.state_dict().items()}
    initial["relation_vectors"] = (
        getattr(trainer.loss, "loss", trainer.loss).relation_vectors.detach().clone().contiguous().cpu()
    )
    save_file(initial, str(out / "initial.safetensors"))
trainer.train()
rank = dist.get_rank() if dist.is_initialized() else 0
world = dist.get_world_size() if dist.is_initialized() else 1
state = {k: v.detach().contiguous().cpu() for k, v in trainer.model.state_dict().items()}
if method.startswith("rse"):  # the loss's own parameters: DDP does not sync them, the loss's hook does
    state["relation_vectors"] = getattr(trainer.loss, "loss", trainer.loss).relation_vectors.detach().contiguous().cpu()
save_file(state, str(out / f"rank{rank}.safetensors"))
loss = next(r["loss"] for r in trainer.state.log_history if "loss" in r)
(out / f"rank{rank}.json").write_text(
    json.dumps({"loss": loss, "world": world, "wrapper": type(trainer.model_wrapped).__name__})
)
