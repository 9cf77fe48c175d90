"""The retrieval job end to end on CQADupStack titles, as the page "Train a retrieval model on your
data" runs it: training pairs from the duplicate links of some forums, one hard negative a pair mined
from their titles (``sentlab mine``), three configs over three seeds through ``sentlab compare``
(MNRL at batch 32; MNRL at batch 256 through Gradient Cache, ``train.mini_batch_size: 32``;
GISTEmbed with the start model as its guide), each run keeping its best checkpoint on a dev forum's
card; the start model scored on the same cards as the baseline; the config with the best dev mean
(the start model counts) confirmed on the test forum's card. Then the same MNRL run through
sentence-transformers' own trainer, against sentlab's run of it without selection, and the test
forum's passages in a faiss index at float32, uint8 and ubinary with float rescoring
(sentence-transformers' ``semantic_search_faiss``): Recall@10 kept against float32, bytes a passage,
search time a query.

Feeds: records retrieval-minilm-cqadupstack; pages docs/guides/retrieval.md.

    python -m benchmarks.studies.retrieval_cqadupstack --output runs/retrieval-cqadupstack
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from benchmarks.common import emit, sentlab

TRAIN_FORUMS = ("gaming", "unix")
DEV_FORUM, TEST_FORUM = "webmasters", "mathematica"
CONFIGS = ("gist", "mnrl-256-gradcache", "mnrl-32")  # compare's baseline is the last


def jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def link_pairs(forums, names, count: int, path: Path) -> list[tuple[str, str]]:
    """``count`` of the duplicate links of the forums ``names`` (query title, its duplicate's title), drawn
    with seed 0, written to ``path`` as {query, passage} rows."""
    links = [
        (forums[f].queries[q], forums[f].corpus[d])
        for f in names
        for q, ds in sorted(forums[f].relevant.items())
        for d in sorted(ds)
    ]
    pairs = random.Random(0).sample(links, min(count, len(links)))
    jsonl(path, ({"query": q, "passage": p} for q, p in pairs))
    return pairs


def forum_card(forum, name: str, folder: Path, other_docs: int | None, seed: int) -> Path:
    """A forum's retrieval card (BEIR layout, headline nDCG@10); ``other_docs``: the corpus cut to the
    judged documents and that many others drawn with ``seed`` (a dev card quick to score often)."""
    folder.mkdir(parents=True, exist_ok=True)
    judged = {d for docs in forum.relevant.values() for d in docs}
    ids = sorted(forum.corpus)
    if other_docs is not None:
        others = sorted(set(ids) - judged)
        ids = sorted(judged | set(random.Random(seed).sample(others, min(other_docs, len(others)))))
    jsonl(folder / "corpus.jsonl", ({"_id": i, "text": forum.corpus[i]} for i in ids))
    jsonl(folder / "queries.jsonl", ({"_id": q, "text": forum.queries[q]} for q in sorted(forum.relevant)))
    (folder / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t1\n" for q in sorted(forum.relevant) for d in sorted(forum.relevant[q])),
        encoding="utf-8",
    )
    card = folder / "card.yaml"
    card.write_text(
        f"name: {name}\nkind: retrieval\ncorpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\n",
        encoding="utf-8",
    )
    return card


def configs(out: Path, triplets: Path, dev_card: Path, base: dict) -> dict[str, Path]:
    """The three configs compared, as YAML files a user would write."""
    common = {
        "method": "supervised",
        "model": {"name": "minilm", "max_seq_length": 32},  # titles: 32 tokens hold nearly all
        "data": {"train": str(triplets), "columns": ["anchor", "positive", "negative"]},
        "train": {"output_dir": "runs/unused", "epochs": 1, "warmup_ratio": 0.1, "no_duplicates": True, **base},
        "eval": {"dev_task": str(dev_card), "final_tasks": []},
    }
    variants = {
        "mnrl-32": {"supervised": {"loss": "mnrl"}},
        "mnrl-256-gradcache": {
            "supervised": {"loss": "mnrl"},
            "train": {**common["train"], "batch_size": 256, "mini_batch_size": 32},
        },
        "gist": {"supervised": {"loss": "GISTEmbedLoss", "loss_args": {"guide": "minilm"}}},
    }
    files = {}
    for name, variant in variants.items():
        tree = {**common, **variant}
        if "train" in variant:  # Gradient Cache: a few large batches; select at the same points of the epoch
            tree["train"] = {**tree["train"], "eval_steps": max(1, base["eval_steps"] * 32 // 256)}
        files[name] = out / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return files


def st_arguments(folder: Path, train: dict, seed: int, **extra):
    """sentence-transformers' training arguments at a sentlab config's ``train`` settings: one epoch, its
    batch size, learning rate and warm-up ratio, ``seed`` for the model and the data, nothing saved."""
    from sentence_transformers import SentenceTransformerTrainingArguments as Arguments

    return Arguments(
        output_dir=str(folder / "checkpoints"),
        per_device_train_batch_size=train["batch_size"],
        learning_rate=train["learning_rate"],
        num_train_epochs=1,
        warmup_steps=train["warmup_ratio"],  # transformers 5: a float below 1 is the warm-up ratio
        seed=seed,
        data_seed=seed,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        **extra,
    )


def st_trainer_run(triplets: Path, folder: Path, cfg: dict, seed: int) -> Path:
    """The MNRL run through sentence-transformers' own trainer, at the config's settings."""
    from datasets import load_dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers

    from sentlab.encoders.loading import inference_max_seq_length, resolve_model_path

    t = cfg["train"]
    model = SentenceTransformer(resolve_model_path("minilm"))  # its best device, as sentlab's run takes
    model.max_seq_length = cfg["model"]["max_seq_length"]
    data = load_dataset("json", data_files=str(triplets), split="train")
    args = st_arguments(folder, t, seed, batch_sampler=BatchSamplers.NO_DUPLICATES)
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=data, loss=MultipleNegativesRankingLoss(model, scale=20.0)
    )
    with contextlib.redirect_stdout(sys.stderr):  # stdout holds the study's one JSON object
        trainer.train()
    model.max_seq_length = inference_max_seq_length("minilm")  # the saved length, as sentlab keeps the start's
    model.save(str(folder / "model"))
    return folder / "model"


def card_score(model: str | Path, card: Path, output: Path) -> dict:
    if not output.is_file():
        sentlab(
            ["eval", "--model", str(model), "--task-card", str(card), "--items", "--quiet", "--output", str(output)]
        )
    return json.loads(output.read_text("utf-8"))


def index_table(model: str | Path, forum) -> dict:
    """The test forum's passages and queries encoded once by ``model`` (unit vectors), the passages
    quantized as sentence-transformers does (``quantize_embeddings``: uint8 calibrated on the passages,
    ubinary one bit a dimension) and searched by faiss with the float queries, the candidates of a packed
    index rescored (``semantic_search_faiss``); Recall@10 kept against float32's top 10, and the search
    time it reports (the fastest of three), a query."""
    from sentence_transformers.util.quantization import quantize_embeddings, semantic_search_faiss

    from sentlab.encoders import load_encoder

    encoder = load_encoder(model)
    ids = sorted(forum.corpus)
    passages = encoder.encode([forum.corpus[i] for i in ids], batch_size=128, normalize_embeddings=True)
    queries = encoder.encode([forum.queries[q] for q in sorted(forum.relevant)], normalize_embeddings=True)
    rows, exact = {}, None
    for precision in ("float32", "uint8", "ubinary"):
        ranges = np.vstack([passages.min(axis=0), passages.max(axis=0)]) if precision == "uint8" else None
        stored = passages if precision == "float32" else quantize_embeddings(passages, precision, ranges=ranges)
        seconds = []
        for _ in range(3):
            found, took = semantic_search_faiss(
                queries,
                corpus_embeddings=stored,
                corpus_precision=precision,
                top_k=10,
                ranges=ranges,
                rescore=precision != "float32",
            )
            seconds.append(took)
        top = [{hit["corpus_id"] for hit in hits} for hits in found]
        exact = exact or top
        rows[precision] = {
            "recall_at_10_kept": round(statistics.mean(len(a & b) / 10 for a, b in zip(top, exact)), 4),
            "bytes_a_passage": int(stored.nbytes // len(ids)),
            "ms_a_query": round(1000 * min(seconds) / len(queries), 4),
        }
    return {
        "model": str(model),
        "passages": len(ids),
        "queries": len(queries),
        "dim": int(passages.shape[1]),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/retrieval-cqadupstack")
    parser.add_argument("--pairs", type=int, default=3000, help="training pairs drawn from the training forums' links")
    parser.add_argument("--mine-titles", type=int, default=30000, help="titles of the training forums to mine from")
    parser.add_argument("--dev-others", type=int, default=4000, help="unjudged dev passages beside the judged ones")
    parser.add_argument("--test-others", type=int, default=None, help="cut the test corpus too (a smoke run)")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.evaluation.uncertainty import headline, seed_item_difference
    from sentlab.reporting.claims import task_items

    out = Path(args.output).resolve()
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    pairs = link_pairs(forums, TRAIN_FORUMS, args.pairs, data / "pairs.jsonl")
    titles = sorted({forums[f].corpus[d] for f in TRAIN_FORUMS for d in forums[f].corpus})
    mined_from = sorted(
        set(random.Random(0).sample(titles, min(args.mine_titles, len(titles)))) | {p for _, p in pairs}
    )
    (data / "titles.txt").write_text("".join(" ".join(t.split()) + "\n" for t in mined_from), encoding="utf-8")
    dev_card = forum_card(forums[DEV_FORUM], f"{DEV_FORUM}-dev", data / "dev", args.dev_others, 0)
    test_card = forum_card(forums[TEST_FORUM], f"{TEST_FORUM}-test", data / "test", args.test_others, 0)
    triplets = data / "triplets.jsonl"
    started = time.perf_counter()
    if not triplets.is_file():
        sentlab(
            [
                "mine",
                "--model",
                "minilm",
                "--input",
                str(data / "pairs.jsonl"),
                "--columns",
                "{anchor: query, positive: passage}",
            ]
            + ["--corpus", str(data / "titles.txt"), "--output", str(triplets), "--quiet"]
        )
    mining = json.loads(triplets.with_suffix(".report.json").read_text("utf-8"))
    rows = sum(1 for _ in triplets.open(encoding="utf-8"))
    base = {"batch_size": 32, "learning_rate": args.learning_rate, "eval_steps": max(1, rows // 32 // 4)}
    files = configs(out, triplets, dev_card, base)
    seeds = args.seeds
    sentlab(
        ["compare", *(str(files[c]) for c in CONFIGS), "--task-card", str(dev_card), "--task-card", str(test_card)]
        + ["--seeds", seeds, "--output", str(out / "compare"), "--quiet"]
    )
    start = {
        "dev": card_score("minilm", dev_card, out / "start-dev.json"),
        "test": card_score("minilm", test_card, out / "start-test.json"),
    }
    names = {"dev": f"{DEV_FORUM}-dev", "test": f"{TEST_FORUM}-test"}
    per_seed = {
        c: [
            json.loads((out / "compare" / c / f"seed-{s}" / "scores.json").read_text("utf-8")) for s in seeds.split(",")
        ]
        for c in CONFIGS
    }
    table = {"start model": {}}
    for split, task in names.items():
        items = task_items(start[split], task)
        table["start model"][split] = {"ndcg_at_10": round(headline(items), 2)}
        for c in CONFIGS:
            runs = [task_items(r, task) for r in per_seed[c]]
            d = seed_item_difference(runs, [items]).to_dict()
            table.setdefault(c, {})[split] = {
                "ndcg_at_10": {
                    "per_seed": [round(headline(r), 2) for r in runs],
                    "mean": round(statistics.mean(headline(r) for r in runs), 2),
                },
                "minus_start": {k: round(d[k], 2) for k in ("difference", "low", "high")}
                | {"beyond_noise": d["beyond_noise"]},
            }
    dev_task = names["dev"]  # chosen on the unrounded means; the record keeps them rounded
    exact = {c: statistics.mean(headline(task_items(r, dev_task)) for r in per_seed[c]) for c in CONFIGS}
    exact["start model"] = headline(task_items(start["dev"], dev_task))
    chosen = max(exact, key=exact.get)
    dev_means = {c: round(v, 2) for c, v in exact.items()}
    kept = {
        c: [
            json.loads((out / "compare" / c / f"seed-{s}" / "selection.json").read_text("utf-8")).get("kept_step")
            for s in seeds.split(",")
        ]
        for c in CONFIGS
    }
    # sentence-transformers' trainer against sentlab's run at the same settings without selection
    mnrl = yaml.safe_load(files["mnrl-32"].read_text("utf-8"))
    plain = out / "st-trainer"
    if not (plain / "model" / "modules.json").is_file():
        st_trainer_run(triplets, plain, mnrl, 1)
    ours = out / "sentlab-no-selection"
    if not (ours / "model" / "modules.json").is_file():
        sentlab(
            [
                "train",
                str(files["mnrl-32"]),
                "--quiet",
                "--set",
                f"train.output_dir={ours}",
                "--set",
                "train.seed=1",
                "--set",
                "eval.dev_task=none",
            ]
        )
    equality = {}
    for name, model in (("sentence_transformers_trainer", plain / "model"), ("sentlab", ours / "model")):
        equality[name] = round(
            headline(task_items(card_score(model, test_card, out / f"{name}-test.json"), names["test"])), 2
        )
    equality["difference"] = round(equality["sentlab"] - equality["sentence_transformers_trainer"], 2)
    first = seeds.split(",")[0]  # the index of the model dev chose (its first seed's), as the page builds it
    index = index_table(
        "minilm" if chosen == "start model" else out / "compare" / chosen / f"seed-{first}" / "model",
        forums[TEST_FORUM],
    )
    emit(
        {
            "data": {
                "train_forums": list(TRAIN_FORUMS),
                "training_pairs": len(pairs),
                "mined_from_titles": len(mined_from),
                "triplets": rows,
                "mining": {k: mining[k] for k in ("pairs", "triplets", "same_text_passed_over")},
                "dev": {
                    "forum": DEV_FORUM,
                    "queries": len(forums[DEV_FORUM].relevant),
                    "passages": sum(1 for _ in (data / "dev" / "corpus.jsonl").open()),
                },
                "test": {
                    "forum": TEST_FORUM,
                    "queries": len(forums[TEST_FORUM].relevant),
                    "passages": sum(1 for _ in (data / "test" / "corpus.jsonl").open()),
                },
            },
            "settings": {"model": "minilm", "max_seq_length": 32, "epochs": 1, **base, "seeds": seeds},
            "scores": table,
            "kept_steps": kept,
            "dev_means": dev_means,
            "chosen_on_dev": chosen,
            "confirmed_on_test": table[chosen]["test"] if chosen != "start model" else table["start model"]["test"],
            "st_trainer_equality": equality,
            "index": index,
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    sys.exit(main())
