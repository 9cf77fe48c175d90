"""BERT-flow's flow alone on frozen all-MiniLM-L6-v2 vectors of CQADupStack titles (the first 4,000
distinct titles of each forum): the last and lowest NLL and the step of a NaN, per forum, variant and
seed (1, 2, 3), 300 steps of 8, AdamW, linear decay, gradient clipping at 1.0. A variant is
``[initN]lrX``: ActNorm initialised from N training vectors (none: normflows' first batch) at lr X.
Prints one JSON object.

    HF_HUB_OFFLINE=1 python benchmarks/bertflow_stability.py webmasters,android 300 lr1e-3,init1024lr1e-3,lr1e-4,init1024lr1e-4
"""
import json, math, sys, random, time
import numpy as np, torch
from pathlib import Path
from sentlab.data.useb import load_cqadupstack, task_folder
from sentlab.encoders.loading import load_encoder
from sentlab.encoders.flow import GlowFlow
forums = load_cqadupstack(task_folder("CQADupStack"))
import tempfile
cache = Path(tempfile.gettempdir()) / "sentlab-bertflow-vectors"; cache.mkdir(exist_ok=True)
model = None
vecs = {}
for forum in sys.argv[1].split(","):
    f = cache / f"{forum}.npy"
    if not f.exists():
        model = model or load_encoder("minilm")
        titles = list(dict.fromkeys(list(forums[forum].corpus.values())))[:4000]
        np.save(f, model.encode(titles, batch_size=128, convert_to_numpy=True))
    vecs[forum] = np.load(f)
steps = int(sys.argv[2]); variants = sys.argv[3].split(",")
torch.set_num_threads(2)
out = []
for forum, v in vecs.items():
    for variant in variants:
        for seed in (1, 2, 3):
            torch.manual_seed(seed); rng = random.Random(seed)
            order = list(range(len(v))); rng.shuffle(order)
            flow = GlowFlow(v.shape[1], 6, 32, seed=seed).train()
            if variant.startswith("init"):
                with torch.no_grad():
                    flow.initialise(torch.as_tensor(v[order[:int(variant[4:].split("lr")[0])]]))
            lr = float(variant.split("lr")[1]) if "lr" in variant else 1e-3
            opt = torch.optim.AdamW([p for p in flow.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
            nan_at = None; last = None; best = math.inf
            for step in range(steps):
                batch = torch.as_tensor(v[[order[(step * 8 + i) % len(v)] for i in range(8)]])
                for g in opt.param_groups: g["lr"] = lr * (1 - step / steps)
                loss = -flow({"sentence_embedding": batch})["flow_log_likelihood"].mean()
                if not torch.isfinite(loss):
                    nan_at = step; break
                opt.zero_grad(); loss.backward()
                torch.nn.utils.clip_grad_norm_(flow.parameters(), 1.0)
                opt.step(); last = float(loss); best = min(best, last)
            out.append({"forum": forum, "variant": variant, "seed": seed, "nan_at_step": nan_at, "last_loss": last, "min_loss": best})
print(json.dumps({"benchmark": "bertflow_stability", "steps": steps, "batch_size": 8, "runs": out}, indent=1))
