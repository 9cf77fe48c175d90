"""Gradient Cache's cost: peak memory and step time of unsupervised SimCSE against the chunk size.

Feeds: records gradient-cache-cpu, gradient-cache-plan-16gib; pages docs/contributing.md,
docs/guides/big-batches.md, docs/results.md.

For each batch size and each chunk (``whole``: the batch in one piece, no Gradient Cache; else
``train.mini_batch_size`` rows at a time through :class:`~sentlab.losses.gradcache.GradientCache`), a
fresh process builds the model (``--model``: a sentence-transformers folder or alias; the default is
a randomly initialised BERT-base with MiniLM's vocabulary, the weights do not change the cost), takes
``--warmup`` untimed and ``--steps`` timed AdamW steps on the first lines of the Wikipedia sentences
(max length 32, two dropout views a row, the SimCSE recipe), and reads back:

* ``step_s``: the median timed step (the device synchronised before and after);
* ``peak_mib``: on CUDA ``torch.cuda.max_memory_allocated`` over what the loaded model takes; on a CPU
  the growth of the process's peak resident set over the same point (both include AdamW's state,
  made at the first step).

A setting whose activations (:func:`sentlab.devices.activation_bytes`) exceed 80 % of the device's
free memory is not run: it is listed under ``skipped`` with that estimate. Prints one JSON object.

``--plan GIB`` runs nothing: for every GPU preset whose method takes Gradient Cache, what
``train.mini_batch_size: auto`` chooses on a card with GIB free (:func:`sentlab.devices.chunk_that_fits`,
the preset's batch, columns, length and precision; BERT-base's or RoBERTa-base's shape from
transformers' default configs, with their parameter counts).

    python -m benchmarks.perf.gradient_cache --batches 64 512 --chunks whole 64 16
    python -m benchmarks.perf.gradient_cache --plan 16
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import last_json


def random_bert_base(folder: Path) -> Path:
    """BERT-base's shape with random weights and MiniLM's (bert-base-uncased's) vocabulary."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sentlab.encoders.loading import resolve_model_path

    if (folder / "config.json").is_file():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    partial = folder.with_name(folder.name + f".{os.getpid()}.partial")
    tokenizer.save_pretrained(partial)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size)).save_pretrained(partial)
    partial.rename(folder)
    return folder


def sentences(rows: int) -> list[str]:
    from sentlab.paths import data_dir

    lines = []
    with open(data_dir() / "wikipedia" / "wiki_sentences.txt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                lines.append(line.strip())
            if len(lines) == rows:
                break
    return lines


def child(args) -> None:
    """One setting in this process: its step time and peak memory, one JSON line."""
    import torch

    from sentlab.encoders import build_encoder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.losses import GradientCache, SimCSELoss

    pin_float32_math()  # fp32 is IEEE fp32 (no TF32) on every device
    torch.manual_seed(0)
    model = build_encoder(args.model, "cls")
    model.max_seq_length = 32
    model.train()
    loss = SimCSELoss(model, temperature=0.05)
    if args.chunk != "whole":
        loss = GradientCache(loss, mini_batch_size=int(args.chunk))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    texts = sentences(args.batch)
    features = [{k: v.to(model.device) for k, v in model.preprocess(texts).items() if hasattr(v, "to")}]
    cuda = model.device.type == "cuda"

    def step() -> float:
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss(features, None).backward()
        optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - start

    if cuda:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = [step() for _ in range(args.warmup + args.steps)][args.warmup :]
    out = {"step_s": round(statistics.median(times), 3), "times_s": [round(t, 3) for t in times]}
    if cuda:
        out["peak_mib"] = round((torch.cuda.max_memory_allocated() - base) / 2**20, 1)
    else:
        out["peak_mib"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss) / 1024, 1)
    out["device"] = str(model.device)
    print(json.dumps(out))


def estimate(model: str, batch: int, chunk: str) -> tuple[float, float]:
    """(GiB of activations the setting keeps, GiB the device has free)."""
    import torch
    from transformers import AutoConfig

    from sentlab import devices
    from sentlab.encoders.loading import resolve_model_path

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = AutoConfig.from_pretrained(resolve_model_path(model))
    rows = batch if chunk == "whole" else min(batch, int(chunk))
    sequences = rows * (2 if chunk == "whole" else 1)  # the whole batch runs both views in one pass
    free, _ = devices.device_memory_bytes(device)
    return devices.activation_bytes(config, sequences, 32, half=False) / 2**30, free / 2**30


def plan(gib: float) -> dict:
    """What ``train.mini_batch_size: auto`` chooses for each GPU preset on a card with ``gib`` free."""
    from transformers import BertConfig, RobertaConfig

    from sentlab import devices
    from sentlab.methods import get_method, load_config
    from sentlab.presets import list_presets

    shapes = {"bert": (BertConfig(), 109_482_240), "roberta": (RobertaConfig(), 124_645_632)}
    chosen = {}
    for preset in list_presets():
        method = get_method(preset.method)
        if preset.hardware != "gpu" or method.no_gradient_cache is not None:
            continue
        name, cfg = preset.name, load_config(preset.path)
        if "train.mini_batch_size" in cfg.unread():  # e.g. supervised with cosine-mse: each row alone
            continue
        config, parameters = shapes["roberta" if "roberta" in cfg.model.name else "bert"]
        columns = method(cfg, None).batch_columns  # an instance: supervised's depends on its format and loss
        size, why = devices.chunk_that_fits(
            config,
            rows=cfg.train.batch_size,
            columns=columns,
            length=cfg.model.max_seq_length,
            half=cfg.train.mixed_precision != "no",
            free_bytes=int(gib * 2**30),
            parameters=parameters,
        )
        chosen[name] = {
            "method": cfg.method,
            "batch": cfg.train.batch_size,
            "precision": cfg.train.mixed_precision,
            "mini_batch_size": size,
            "why": why,
        }
    return {"free_gib": gib, "presets": chosen}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default=None, help="default: a random-weight BERT-base (runs/bench/bert-base-random)"
    )
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--chunks", nargs="+", default=["whole", "64", "16"])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--plan", type=float, default=None, metavar="GIB", help="what auto chooses on GIB free")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--chunk", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.plan is not None:
        print(json.dumps(plan(args.plan)))
        return
    model = args.model or str(random_bert_base(Path("runs/bench/bert-base-random").resolve()))
    results: dict = {"model": args.model or "random-weight BERT-base", "max_seq_length": 32, "settings": {}}
    skipped = {}
    for batch in args.batches:
        for chunk in args.chunks:
            if chunk != "whole" and int(chunk) >= batch:
                continue  # one chunk of the whole batch: the whole batch plus a second pass
            name = f"batch_{batch}_{chunk}"
            needs, free = estimate(model, batch, chunk)
            if needs > 0.8 * free:
                skipped[name] = f"needs about {needs:.1f} GiB of activations, {free:.1f} GiB free"
                print(f"{name}: skipped ({skipped[name]})", file=sys.stderr)
                continue
            command = [
                sys.executable,
                "-m",
                __spec__.name,
                "--child",
                "--model",
                model,
                "--batch",
                str(batch),
                "--chunk",
                chunk,
            ]
            command += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{name} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            results["settings"][name] = last_json(done.stdout)
            print(f"{name}: {results['settings'][name]}", file=sys.stderr)
    for name, setting in results["settings"].items():
        whole = results["settings"].get(name.rsplit("_", 1)[0] + "_whole")
        if whole and setting is not whole:
            setting["step_over_whole"] = round(setting["step_s"] / whole["step_s"], 3)
            setting["memory_over_whole"] = round(setting["peak_mib"] / whole["peak_mib"], 3)
    results["skipped"] = skipped
    print(json.dumps(results))


if __name__ == "__main__":
    main()
