"""The cost of a static-shaped masked-LM step, on whatever device there is: the prediction head at the
chosen positions selected with a boolean mask (a data-dependent shape: the host waits for the device,
and a compiled head sees a new shape every step), against two static-shaped forms:

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

* ``full``: the head at every position, cross-entropy with ``ignore_index`` (transformers' masked-LM
  loss; the mask is BERT's Bernoulli draw, unchanged);
* ``fixed``: a fixed number of predictions per row (``ceil(0.15 * length)``, BERT's
  ``max_predictions_per_seq``), the head on those slots only (an exact count per row instead of a
  Bernoulli draw).

A random-weight BERT of MiniLM-L6's shape (6 layers, 384 wide, 30,522 tokens), packed rows of
``--length`` tokens, fp32; the median time of forward + backward over ``--steps`` after one warm-up.

    python -m benchmarks.perf.mlm_head_shape [--batch 16] [--length 128] [--steps 6]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForMaskedLM

from sentlab.devices import training_device
from sentlab.encoders.backends import pin_float32_math


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    device = training_device()
    pin_float32_math()  # fp32 is IEEE fp32 on every CPU and GPU
    torch.manual_seed(0)
    config = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    model = BertForMaskedLM(config).to(device)
    ids = torch.randint(1000, config.vocab_size, (args.batch, args.length), device=device)
    attention = torch.ones_like(ids)
    slots = math.ceil(0.15 * args.length)

    def boolean() -> torch.Tensor:
        chosen = torch.rand(ids.shape, device=device) < 0.15
        states = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state
        return F.cross_entropy(model.cls(states[chosen]), ids[chosen])

    def full() -> torch.Tensor:
        chosen = torch.rand(ids.shape, device=device) < 0.15
        targets = torch.where(chosen, ids, -100)
        logits = model.cls(model.bert(input_ids=ids, attention_mask=attention).last_hidden_state)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)

    def fixed() -> torch.Tensor:
        positions = torch.rand(ids.shape, device=device).topk(slots, dim=1).indices  # [batch, slots]
        states = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state
        picked = states.gather(1, positions.unsqueeze(-1).expand(-1, -1, states.shape[-1]))
        return F.cross_entropy(model.cls(picked).flatten(0, 1), ids.gather(1, positions).flatten())

    seconds = {}
    for name, step in (("boolean", boolean), ("full", full), ("fixed", fixed)):
        times = []
        for i in range(args.steps + 1):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            step().backward()
            model.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize()
            if i:
                times.append(time.perf_counter() - start)
        seconds[name] = statistics.median(times)
    print(
        json.dumps(
            {
                "device": str(device),
                "processor": platform.processor() or platform.machine(),
                "threads": torch.get_num_threads(),
                "batch": args.batch,
                "length": args.length,
                "fixed_slots": slots,
                "step_seconds": {k: round(v, 4) for k, v in seconds.items()},
                "ratio_to_boolean": {k: round(v / seconds["boolean"], 3) for k, v in seconds.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
