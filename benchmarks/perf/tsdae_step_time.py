"""Training-step time and peak memory of TSDAE against SimCSE at the same batch size and length, and
the share of a TSDAE step spent in the decoder.

Feeds: records tsdae-step-time-b64, tsdae-step-time-b8; pages docs/methods/tsdae.md,
docs/results.md.

A step = forward, backward and an AdamW update of every trainable tensor (model and loss), on
batches of real sentences (the shared Wikipedia file) cut to ``--max-seq-length`` tokens. Each
method runs in a fresh process, so its peak resident memory (CPU) or peak allocated memory (CUDA) is
its own. The decoder's share is 1 - (time of the same step with the decoder's loss replaced by a
loss on s alone) / (time of the TSDAE step): what the step costs beyond encoding the noised input.

    python -m benchmarks.perf.tsdae_step_time --model minilm --batch-size 8 --max-seq-length 32 --steps 30
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from benchmarks.common import last_json


def child(method: str, args: argparse.Namespace) -> dict:
    import torch

    from sentlab.data.noise import NoisyPairs
    from sentlab.data.readers import read_sentences
    from sentlab.encoders import load_encoder
    from sentlab.losses.simcse import SimCSELoss
    from sentlab.losses.tsdae import TSDAELoss
    from sentlab.paths import data_dir

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = load_encoder(args.model, pooler="mean", max_seq_length=args.max_seq_length, device=device).train()
    sentences = read_sentences(
        data_dir() / "wikipedia" / "wiki_sentences.txt", limit=args.batch_size * (args.steps + 5)
    )
    noise = NoisyPairs("delete", 0.6, seed=0)
    if method == "simcse":
        loss = SimCSELoss(model)
    else:
        loss = TSDAELoss(model)
    loss.to(device)
    params = list({id(p): p for p in [*model.parameters(), *loss.parameters()] if p.requires_grad}.values())
    optimizer = torch.optim.AdamW(params, lr=3e-5)

    def batch(i):
        texts = sentences[i * args.batch_size : (i + 1) * args.batch_size]
        if method == "simcse":  # one column: SimCSELoss encodes it twice (two dropout views, one pass)
            return [tensors(texts)]
        noisy = noise({"sentence": texts, "label": list(range(len(texts)))})["noisy"]
        return [tensors(noisy), tensors(texts)]

    def tensors(texts):
        return {k: v.to(device) for k, v in model.preprocess(texts).items() if torch.is_tensor(v)}

    def step(features):
        optimizer.zero_grad(set_to_none=True)
        if method == "encoder-only":
            value = model(features[0])["sentence_embedding"].pow(2).mean()
        else:
            value = loss(features)
        value.backward()
        optimizer.step()

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    for i in range(3):  # warm-up
        step(batch(i))
    sync()
    started = time.perf_counter()
    for i in range(3, 3 + args.steps):
        step(batch(i))
    sync()
    seconds = (time.perf_counter() - started) / args.steps
    peak = (
        torch.cuda.max_memory_allocated() / 2**20
        if device == "cuda"
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    return {
        "seconds_per_step": seconds,
        "peak_mib": round(peak, 1),
        "device": device,
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args)))
        return
    results = {}
    for method in ("simcse", "tsdae", "encoder-only"):
        argv = [
            sys.executable,
            "-m",
            __spec__.name,
            "--child",
            method,
            "--model",
            args.model,
            "--batch-size",
            str(args.batch_size),
            "--max-seq-length",
            str(args.max_seq_length),
            "--steps",
            str(args.steps),
        ]
        results[method] = last_json(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    tsdae, simcse, encoder = (results[m]["seconds_per_step"] for m in ("tsdae", "simcse", "encoder-only"))
    print(
        json.dumps(
            {
                "model": args.model,
                "batch_size": args.batch_size,
                "max_seq_length": args.max_seq_length,
                "steps": args.steps,
                "per_method": results,
                "tsdae_over_simcse": tsdae / simcse,
                "decoder_share_of_tsdae_step": 1 - encoder / tsdae,
            }
        )
    )


if __name__ == "__main__":
    main()
