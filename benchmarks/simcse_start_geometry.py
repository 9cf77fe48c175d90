"""What unsupervised SimCSE sees at its first step: for each encoder, on held-out Wikipedia sentences,
the mean cosine between different sentences (anisotropy: SimCSE's gain over BERT is mostly its
removal, Gao et al. Sec. 5 and Fig. 2), the cosine between two dropout views of the same sentence,
and the SimCSE loss of one batch (Eq. 1, tau 0.05, without the training-only MLP). Prints one JSON
object.

Feeds: no record (its figures are quoted by hand); pages docs/methods/simcse.md.

    python benchmarks/simcse_start_geometry.py runs/rawlm-cpu/random_init:mean runs/rawlm-cpu/model:mean

Each argument is MODEL_FOLDER:POOLER (sentlab's poolers: mean, cls, first_last_avg, ...). The
sentences are drawn from the first 2,000 lines of the Wikipedia file, which the raw-LM preset holds
out of pre-training (rawlm-cpu, mlm.heldout_lines).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="MODEL_FOLDER:POOLER")
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64, help="the batch of the one-batch SimCSE loss")
    parser.add_argument("--max-seq-length", type=int, default=32, help="SimCSE-unsup's (32)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from sentlab.encoders import build_encoder
    from sentlab.losses.simcse import SimCSELoss
    from sentlab.paths import data_dir
    from sentlab.progress import set_quiet

    set_quiet(True)
    torch.manual_seed(args.seed)
    heldout = (data_dir() / "wikipedia" / "wiki_sentences.txt").read_text("utf-8").splitlines()[:2000]
    sentences = random.Random(args.seed).sample(heldout, args.sentences)
    rows = {}
    for spec in args.models:
        folder, _, pooler = spec.rpartition(":")
        if not folder:
            raise SystemExit(f"{spec}: expected MODEL_FOLDER:POOLER")
        model = build_encoder(folder, pooler, max_seq_length=args.max_seq_length, device="cpu")
        with torch.no_grad():
            emb = model.encode(sentences, convert_to_tensor=True, normalize_embeddings=True, batch_size=64)
            cosines = emb @ emb.T
            n = len(sentences)
            between = (cosines.sum() - cosines.diagonal().sum()) / (n * n - n)
            model.train()  # dropout on: two views of the same batch in one forward pass, as in training
            loss_fn = SimCSELoss(model, temperature=0.05, gather_across_devices=False)
            features = model.tokenize(sentences[: args.batch])
            view1, view2 = loss_fn.embed([features])
            loss = loss_fn.contrastive([view1, view2])
            views = torch.nn.functional.cosine_similarity(view1, view2).mean()
        rows[spec] = {
            "mean_cos_between_sentences": round(between.item(), 3),
            "mean_cos_two_dropout_views": round(views.item(), 3),
            "simcse_loss_one_batch": round(loss.item(), 3),
        }
    print(json.dumps({"sentences": args.sentences, "batch": args.batch, "models": rows}, indent=1))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
