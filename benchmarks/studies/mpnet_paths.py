"""Every path on a second architecture, on real weights: all-mpnet-base-v2 (MPNet: relative position
buckets, attention modules named q / k / v / o, its own tokenizer) through each of sentlab's paths for a
few steps, each run in turn and reported with its exit status, seconds and what it read back.

Feeds: records mpnet-paths; pages docs/changelog.md, docs/scope.md.

- ``supervised``: MNRL on duplicate-question pairs of CQADupStack's training forums; the saved model
  reloads and encodes as the run's last state did (the largest difference of the probe's embeddings);
- ``simcse``: unsupervised SimCSE on Wikipedia sentences;
- ``tsdae``: TSDAE with an untied decoder (transformers has no causal-LM class for MPNet, so a tied
  decoder is refused): a randomly initialised BERT decoder of all-mpnet-base-v2's width on
  all-MiniLM-L6-v2's WordPiece vocabulary;
- ``lora``: the supervised run with a LoRA adapter at the default targets (MPNet's ``q`` and ``v``);
- ``matryoshka``: the supervised run with ``train.matryoshka_dims`` [768, 256, 64];
- ``encode``: ``sentlab encode`` in torch fp32, onnx int8 and openvino int8-static on Wikipedia
  sentences: each setting's mean and lowest cosine to torch fp32;
- ``distill-static``: model2vec's static student (no training);
- ``mine``: a hard negative per pair from the pairs' titles;
- ``task-card``: ``sentlab eval`` on a CQADupStack forum's card (nDCG@10).

    python -m benchmarks.studies.mpnet_paths --output runs/mpnet-paths
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import traceback
from pathlib import Path

import yaml

from benchmarks.common import emit, sentlab
from benchmarks.reference_models import fetch

MPNET, MINILM = "sentence-transformers/all-mpnet-base-v2", "sentence-transformers/all-MiniLM-L6-v2"
PROBE = ["a man plays the guitar", "how do I install a package?", "the cat sleeps on the sofa"]


def config(out: Path, name: str, data: dict, method: str, steps: int, **extra) -> Path:
    """A run of ``method`` on all-mpnet-base-v2 for ``steps`` steps of 8, no selection, no final tasks."""
    tree = {
        "method": method,
        "model": {"name": MPNET, "max_seq_length": 32, **extra.pop("model", {})},
        "data": data,
        "train": {
            "output_dir": str(out / name),
            "max_steps": steps,
            "batch_size": 8,
            "logging_steps": 1,
            "progress_bar": False,
            **extra.pop("train", {}),
        },
        "eval": {"dev_task": "none", "final_tasks": []},
        **extra,
    }
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return path


def trained(folder: Path) -> dict:
    """A run's losses, its model's width, the model type, and the reloaded model's probe embeddings
    against the saved ones (their largest absolute difference)."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text("utf-8").splitlines()]
    model = SentenceTransformer(str(folder / "model"), device="cpu")
    again = SentenceTransformer(str(folder / "model"), device="cpu")
    first, second = model.encode(PROBE), again.encode(PROBE)
    config_file = folder / "model" / "config.json"
    kind = json.loads(config_file.read_text())["model_type"] if config_file.is_file() else None
    return {
        "losses": [round(r["loss"], 4) for r in rows if r.get("loss") is not None],
        "dims": int(first.shape[1]),
        "model_type": kind,
        "reload_max_abs_difference": float(np.abs(first - second).max()),
    }


def random_bert_decoder(folder: Path, width: int) -> Path:
    """A randomly initialised 2-layer BERT of ``width`` on all-MiniLM-L6-v2's WordPiece tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sentlab.encoders.loading import resolve_model_path

    if (folder / "config.json").is_file():
        return folder
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(MINILM))
    shape = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=width, num_hidden_layers=2)
    shape.num_attention_heads, shape.intermediate_size = 12, 4 * width
    BertModel(shape).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/mpnet-paths")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    import numpy as np

    from benchmarks.studies.retrieval_cqadupstack import DEV_FORUM, TRAIN_FORUMS, forum_card, link_pairs
    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.paths import data_dir

    started = time.perf_counter()
    fetch(MPNET)
    fetch(MINILM)
    out = Path(args.output).resolve()
    shutil.rmtree(out, ignore_errors=True)  # every path runs afresh: this is what it measures
    data = out / "data"
    data.mkdir(parents=True)
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    link_pairs(forums, TRAIN_FORUMS, 8 * args.steps * 2, data / "pairs.jsonl")
    wiki = data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt"
    lines = [line.strip() for line in wiki.read_text("utf-8").splitlines()[:2000] if line.strip()]
    (data / "wiki.txt").write_text("\n".join(lines[:400]) + "\n", encoding="utf-8")
    card = forum_card(forums[DEV_FORUM], f"{DEV_FORUM}-dev", data / "card", 1000, 0)
    pairs = {"train": str(data / "pairs.jsonl"), "columns": {"anchor": "query", "positive": "passage"}}
    wikipedia = {"train": str(data / "wiki.txt")}
    paths: dict[str, dict] = {}

    def path(name: str, work) -> None:
        begun = time.perf_counter()
        try:
            paths[name] = {"status": "ok", **(work() or {})}
        except BaseException as err:  # noqa: BLE001 - a path that fails is reported, the others still run
            if isinstance(err, KeyboardInterrupt):
                raise
            paths[name] = {"status": "failed", "error": (str(err) or type(err).__name__).splitlines()[0]}
            traceback.print_exc()
        paths[name]["seconds"] = round(time.perf_counter() - begun, 1)

    def train(name: str, data_section: dict, method: str, **extra) -> dict:
        sentlab(["train", str(config(out, name, data_section, method, args.steps, **extra)), "--quiet"])
        return trained(out / name)

    path("supervised", lambda: train("supervised", pairs, "supervised", supervised={"loss": "mnrl"}))
    path("simcse", lambda: train("simcse", wikipedia, "simcse-unsup"))
    decoder = random_bert_decoder(out / "bert-decoder", 768)
    path(
        "tsdae",
        lambda: train(
            "tsdae", wikipedia, "tsdae", model={"pooler": "cls"}, tsdae={"tie": False, "decoder": str(decoder)}
        ),
    )

    def lora() -> dict:
        found = train("lora", pairs, "supervised", supervised={"loss": "mnrl"}, model={"adapter": {"rank": 8}})
        adapter = json.loads((out / "lora" / "model" / "adapter_config.json").read_text("utf-8"))
        return {**found, "target_modules": sorted(adapter["target_modules"])}

    path("lora", lora)

    def matryoshka() -> dict:
        from sentlab.encoders.matryoshka import trained_dims

        found = train(
            "matryoshka", pairs, "supervised", supervised={"loss": "mnrl"}, train={"matryoshka_dims": [768, 256, 64]}
        )
        return {**found, "trained_dims": trained_dims(out / "matryoshka" / "model")}

    path("matryoshka", matryoshka)

    def encode() -> dict:
        sentences = data / "encode.txt"
        sentences.write_text("\n".join(lines[400:800]) + "\n", encoding="utf-8")
        found, vectors = {}, {}
        for backend, precision in (("torch", "fp32"), ("onnx", "int8"), ("openvino", "int8-static")):
            target = data / f"encode-{backend}-{precision}.npy"
            argv = ["encode", "--model", MPNET, "--backend", backend, "--precision", precision]
            sentlab([*argv, "--input", str(sentences), "--output", str(target), "--quiet"])
            vectors[backend] = np.load(target)
            ran = json.loads(target.with_name(target.name + ".json").read_text("utf-8"))["plan"]["model"]
            found[f"{backend} {precision}"] = {"ran": f"{ran['backend']} {ran['precision']}"}
            a, b = vectors["torch"].astype(np.float64), vectors[backend].astype(np.float64)
            cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
            found[f"{backend} {precision}"] |= {
                "cosine_mean": round(float(cosine.mean()), 4),
                "cosine_min": round(float(cosine.min()), 4),
            }
        return {"sentences": len(vectors["torch"]), "settings": found}

    path("encode", encode)

    def static() -> dict:
        student = out / "static-student"
        sentlab(["distill-static", "--model", MPNET, "--output", str(student), "--quiet"])
        record = json.loads((student / "distill.json").read_text("utf-8"))
        return {"tokens": record["tokens"], "dims": record["dims"]}

    path("distill-static", static)

    def mine() -> dict:
        mined = data / "mined.jsonl"
        argv = [
            "mine",
            "--model",
            MPNET,
            "--input",
            str(data / "pairs.jsonl"),
            "--columns",
            "{anchor: query, positive: passage}",
        ]
        sentlab([*argv, "--output", str(mined), "--quiet"])
        rows = [json.loads(line) for line in mined.read_text("utf-8").splitlines()]
        return {
            "triplets": len(rows),
            "negative_is_anchor_or_positive": sum(r["negative"] in (r["anchor"], r["positive"]) for r in rows),
        }

    path("mine", mine)

    def task_card() -> dict:
        result = data / "card.json"
        argv = ["eval", "--model", MPNET, "--task-card", str(card), "--items", "--quiet", "--output", str(result)]
        sentlab(argv)
        from sentlab.evaluation.uncertainty import headline
        from sentlab.reporting.claims import task_items

        report = json.loads(result.read_text("utf-8"))
        return {"card": f"{DEV_FORUM}-dev", "ndcg_at_10": round(headline(task_items(report, f"{DEV_FORUM}-dev")), 2)}

    path("task-card", task_card)
    emit(
        {
            "model": MPNET,
            "steps": args.steps,
            "batch_size": 8,
            "paths": paths,
            "all_ok": all(p["status"] == "ok" for p in paths.values()),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
