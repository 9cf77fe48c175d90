"""RSE's training cost: the step time of RSE against supervised SimCSE at the same batch,
and the peak memory of one batch of 512 with and without Gradient Cache.

Feeds: records rse-step-cost-minilm; pages docs/methods/rse.md, docs/results.md.

* step time: the same rows of the CPU preset's triples (head, tail, in-relation negative), the same
  model and AdamW; RSE's loss (Eq. 2, relation vectors with their own group) against SimCSE's
  supervised loss on the same three columns. Median of ``--steps`` timed steps after one warm-up.
* peak memory: one step of batch ``--memory-batch`` in a fresh process per setting (plain
  :class:`~sentlab.losses.rse.RSELoss`, :class:`~sentlab.losses.gradcache.GradientCache` around it with
  ``--mini-batch``); on CUDA ``torch.cuda.max_memory_allocated``, on CPU the growth of the process's
  peak resident set size over the loaded model.

Prints one JSON object.

    python -m benchmarks.perf.rse_step_cost --batch 64 --steps 5 --memory-batch 512 --mini-batch 64
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

from benchmarks.common import last_json


def rows(batch: int, config: str) -> tuple[list[list[str]], list[int]]:
    from pathlib import Path

    from sentlab.methods import get_method, load_config
    from sentlab.training.engine import RunPaths

    cfg = load_config(config, [])
    dataset = get_method(cfg.method)(cfg, RunPaths(Path("/tmp/rse-step-cost"))).train_dataset().shuffle(seed=0)
    batch_rows = dataset[:batch]
    return [batch_rows["head"], batch_rows["tail"], batch_rows["negative"]], batch_rows["label"]


def build(kind: str, mini_batch: int, model_name: str):
    import torch

    from sentlab.encoders import load_encoder
    from sentlab.losses.gradcache import GradientCache
    from sentlab.losses.rse import RSELoss
    from sentlab.losses.simcse import SimCSELoss

    model = load_encoder(model_name, pooler="mean", max_seq_length=32).train()  # max length 32 (App. D)
    relations = ["entailment", "duplicate_question", "same_caption", "same_sent"]
    if kind == "simcse":
        loss = SimCSELoss(model, temperature=0.05)
    elif kind == "rse-cached":
        loss = GradientCache(RSELoss(model, relations), mini_batch_size=mini_batch)
    else:
        loss = RSELoss(model, relations)
    loss = loss.to(model.device)
    extra = [getattr(loss, "loss", loss).relation_vectors] if kind != "simcse" else []
    optimizer = torch.optim.AdamW(
        [{"params": model.parameters(), "lr": 5e-5}, {"params": extra, "lr": 1e-2}], weight_decay=0.0
    )
    return model, loss, optimizer


def step(model, loss, optimizer, columns, labels) -> float:
    import torch

    features = [
        {k: v.to(model.device) if hasattr(v, "to") else v for k, v in model.preprocess(c).items()} for c in columns
    ]
    optimizer.zero_grad()
    value = loss(features, torch.tensor(labels, device=model.device))
    value.backward()
    optimizer.step()
    return float(value.detach())


def time_steps(kind: str, args) -> dict:
    import torch

    columns, labels = rows(args.batch, args.config)
    model, loss, optimizer = build(kind, args.mini_batch, args.model)
    step(model, loss, optimizer, columns, labels)  # warm-up
    times = []
    for _ in range(args.steps):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(model, loss, optimizer, columns, labels)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "times_s": [round(t, 3) for t in times]}


def memory_child(kind: str, args) -> None:
    import torch

    columns, labels = rows(args.memory_batch, args.config)
    model, loss, optimizer = build(kind, args.mini_batch, args.model)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
        base_cuda = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    value = step(model, loss, optimizer, columns, labels)
    out = {
        "kind": kind,
        "batch": args.memory_batch,
        "loss": value,
        "seconds": round(time.perf_counter() - t0, 1),
        "device": str(model.device),
    }
    if torch.cuda.is_available():
        out["peak_cuda_mib"] = round((torch.cuda.max_memory_allocated() - base_cuda) / 2**20, 1)
    out["peak_rss_growth_mib"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss) / 1024, 1)
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="rse-minilm-cpu", help="where the triples come from")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--memory-batch", type=int, default=512)
    parser.add_argument("--mini-batch", type=int, default=64)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()

    from sentlab.progress import set_quiet

    set_quiet(True)
    if args.child:
        memory_child(args.child, args)
        return
    summary: dict = {"batch": args.batch, "model": args.model, "step_time": {}}
    for kind in ("simcse", "rse"):
        summary["step_time"][kind] = time_steps(kind, args)
    summary["step_time"]["rse_over_simcse"] = round(
        summary["step_time"]["rse"]["median_s"] / summary["step_time"]["simcse"]["median_s"], 3
    )
    if not args.skip_memory:
        summary["memory"] = {}
        for kind in ("rse", "rse-cached"):
            child = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    __spec__.name,
                    "--child",
                    kind,
                    "--config",
                    args.config,
                    "--model",
                    args.model,
                    "--memory-batch",
                    str(args.memory_batch),
                    "--mini-batch",
                    str(args.mini_batch),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            summary["memory"][kind] = last_json(child.stdout)
        summary["memory"]["mini_batch"] = args.mini_batch
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
