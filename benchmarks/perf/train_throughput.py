"""SimCSE training-step time side by side on whatever device there is: sentlab's engine (plain and with
``train.compile``), sentence-transformers' own trainer (MultipleNegativesRankingLoss on (s, s) pairs,
its scale 20 = 1 / tau), a plain PyTorch loop and the same loop compiled with ``torch.compile``.

Feeds: no record (its figures are quoted by hand); pages docs/contributing.md, docs/guides/gpu.md,
docs/results.md.

Every contestant runs the same computation: one model (``--model``, default all-MiniLM-L6-v2), batch 64
of Wikipedia sentences at max length 32, two dropout views in one forward, InfoNCE with tau = 0.05,
AdamW (fused wherever torch has it, as sentlab's default), gradient clipping at 1.0; in the precision
``--precision`` (fp32: IEEE float32, no TF32). The timed window is one optimisation step (forward,
loss, backward, clipping, optimizer step), tokenisation before it; on a GPU each step ends with a
synchronisation, so the time is the device's. The median over the steps after ``--warmup`` (the
compiled ones build their graphs then). Peak memory: on a CPU the process's peak RSS (it only grows),
on a GPU the peak allocated CUDA memory. Prints JSON with every ratio to the compiled plain loop and to
the plain loop (targets: sentlab with compile <= 1.10 x the compiled plain loop; sentlab <= 1.10 x the
plain loop).

    python -m benchmarks.perf.train_throughput [--steps 12] [--warmup 4] [--model minilm] [--precision fp32]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import resource
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from transformers import TrainerCallback

from sentlab.data.readers import read_sentences
from sentlab.devices import training_device
from sentlab.encoders import load_encoder
from sentlab.encoders.backends import pin_float32_math
from sentlab.methods import validate_config
from sentlab.paths import data_dir
from sentlab.training import engine


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain_loop(
    model_name: str, sentences: list[str], steps: int, batch: int, max_len: int, precision: str, compiled: bool
) -> list[float]:
    device = training_device()
    model = load_encoder(model_name, device=str(device))
    model.train()
    transformer = model[0].auto_model
    forward = torch.compile(transformer) if compiled else transformer
    tokenizer = model.tokenizer
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, fused=device.type in ("cpu", "cuda"))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    labels = torch.arange(batch, device=device)
    times = []
    for step in range(steps):
        chunk = sentences[step * batch : (step + 1) * batch]
        # tokenised outside the timed window, as the trainer's collator does it before on_step_begin
        enc = tokenizer(chunk + chunk, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        enc = {k: v.to(device, non_blocking=True) for k, v in enc.items()}
        _sync(device)
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            hidden = forward(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        emb = F.normalize((hidden.float() * mask).sum(1) / mask.sum(1), dim=-1)
        z1, z2 = emb[:batch], emb[batch:]
        loss = F.cross_entropy(z1 @ z2.T / 0.05, labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the trainers clip too
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        _sync(device)
        times.append(time.perf_counter() - start)
    return times


class StepTimer(TrainerCallback):
    def __init__(self):
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        _sync(args.device)
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        _sync(args.device)
        self.times.append(time.perf_counter() - self._start)


def sentlab_loop(
    model_name: str, corpus: str, steps: int, batch: int, max_len: int, precision: str, compiled: bool
) -> list[float]:
    with tempfile.TemporaryDirectory() as out:
        cfg = validate_config(
            {
                "method": "simcse-unsup",
                "model": {"name": model_name, "max_seq_length": max_len},
                "data": {"train": corpus, "limit": steps * batch},
                "train": {
                    "output_dir": out,
                    "batch_size": batch,
                    "max_steps": steps,
                    "save_steps": 10_000,
                    "logging_steps": 10_000,
                    "progress_bar": False,
                    "mixed_precision": precision if precision != "fp32" else "no",
                    "compile": compiled,
                },
                "eval": {"dev_task": "none", "final_tasks": []},
            }
        )
        timer = StepTimer()
        original = engine.build_trainer

        def build_with_timer(*args, **kwargs):
            trainer = original(*args, **kwargs)
            trainer.add_callback(timer)
            return trainer

        engine.build_trainer = build_with_timer  # the engine's own path: compile and precision as it runs them
        try:
            engine.train(cfg, evaluate=False)
        finally:
            engine.build_trainer = original
        return timer.times


def st_trainer_loop(
    model_name: str, sentences: list[str], steps: int, batch: int, max_len: int, precision: str
) -> list[float]:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = load_encoder(model_name, device=str(training_device()))
    model.max_seq_length = max_len
    data = Dataset.from_dict({"anchor": sentences[: steps * batch], "positive": sentences[: steps * batch]})
    with tempfile.TemporaryDirectory() as out:
        args = SentenceTransformerTrainingArguments(
            output_dir=out,
            per_device_train_batch_size=batch,
            max_steps=steps,
            learning_rate=3e-5,
            save_strategy="no",
            logging_steps=10_000,
            report_to="none",
            disable_tqdm=True,
            fp16=precision == "fp16",
            bf16=precision == "bf16",
            optim="adamw_torch_fused",
            use_cpu=training_device().type == "cpu",
        )
        timer = StepTimer()
        trainer = SentenceTransformerTrainer(
            model=model,
            args=args,
            train_dataset=data,
            loss=MultipleNegativesRankingLoss(model, scale=20.0),
            callbacks=[timer],
        )
        trainer.train()
    return timer.times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=4, help="steps left out of the median")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--model", default="minilm", help="a model name, alias or folder sentlab loads")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=list(CONTESTANTS), help="contestants to leave out (e.g. compiled)"
    )
    args = parser.parse_args()
    pin_float32_math()  # fp32 is IEEE float32 for every contestant
    corpus = str(data_dir() / "wikipedia" / "wiki_sentences.txt")
    sentences = read_sentences(corpus, limit=args.steps * args.batch_size)
    shape = (args.model, sentences, args.steps, args.batch_size, args.max_seq_length, args.precision)
    runs = {
        "plain": lambda: plain_loop(*shape, compiled=False),
        "plain_compiled": lambda: plain_loop(*shape, compiled=True),
        "sentence_transformers": lambda: st_trainer_loop(*shape),
        "sentlab": lambda: sentlab_loop(args.model, corpus, *shape[2:], compiled=False),
        "sentlab_compiled": lambda: sentlab_loop(args.model, corpus, *shape[2:], compiled=True),
    }
    median = {}
    for name, run in runs.items():
        if name in args.skip:
            continue
        torch.manual_seed(0)
        with contextlib.redirect_stdout(sys.stderr):  # the trainers' log lines: stdout holds the JSON alone
            median[name] = statistics.median(run()[args.warmup :])
    device = training_device()
    results = {
        "benchmark": "simcse_train_step",
        "model": args.model,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "precision": args.precision,
        "steps_timed": args.steps - args.warmup,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "step_s_median": median,
        "ratio_to_plain": {k: v / median["plain"] for k, v in median.items()} if "plain" in median else None,
        "ratio_to_plain_compiled": (
            {k: v / median["plain_compiled"] for k, v in median.items()} if "plain_compiled" in median else None
        ),
        "targets": {"sentlab / plain": 1.10, "sentlab_compiled / plain_compiled": 1.10},
    }
    if device.type == "cuda":
        results["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2**20
    else:
        results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(results, indent=2))


CONTESTANTS = ("plain", "plain_compiled", "sentence_transformers", "sentlab", "sentlab_compiled")


if __name__ == "__main__":
    main()
