"""A stronger teacher into the small model: all-mpnet-base-v2 distilled into all-MiniLM-L6-v2 by three
routes, each against unsupervised SimCSE from the same start on the same unlabelled text (the in-batch
contrastive baseline), over three seeds.

Feeds: records distill-mpnet-minilm, distill-mse-parity; pages docs/changelog.md,
docs/guides/distillation.md.

The routes:

- (a) regression: ``MSELoss`` onto the teacher's embeddings of unlabelled text (Wikipedia sentences and
  titles of CQADupStack's training forums), sentence-transformers' model-distillation recipe (the
  teacher's 768 dimensions reached through a projection of the student's 384 trained beside it,
  ``loss_args.projection_dim``; its learning rate, 1e-4); ``mse-fitted``: the same with the projection
  fitted by least squares before training (``supervised.projection_init: least_squares``);
- (b) RankCSE-ListNet with the teacher (``rankcse.teachers``), on the same text at SimCSE's learning rate;
- (c) ``MarginMSELoss`` on the teacher's cosine margins of (title, duplicate, negative) rows: duplicate
  links of the training forums, a negative each mined by the start model (``sentlab mine``).

Each run keeps its best checkpoint on a dev forum's card with the start model as a candidate
(``train.start_is_candidate``); ``sentlab compare --start-model`` scores the start model on the same
items. Scored for every run: the STS average, STS-B test, nDCG@10 on the dev forum and on the test forum;
the teacher's own scores beside them. The row with the best dev mean is the one chosen (the start model
on a tie), and its test score is the one the page reads as confirmed.

The teacher's labels: before training, each CPU int8 setting is checked against torch fp32 on the
training text (``label-check.json``); the fastest that keeps a mean cosine of 0.99 labels every route
(``teacher_setting``). Routes (a) and (c) encode their labels once, through the embedding cache (a
later seed reads them); RankCSE keeps its teacher's vectors in each run's folder, so each seed encodes
them. The labels' cost is timed apart, from an empty cache (``label-cost-SETTING.json``). The record says which
commit produced each score file it reuses (``produced_by``). The models are fetched from the package
index by ``benchmarks/reference_models.py`` and named by their hub ids.

    python -m benchmarks.studies.distill_mpnet --output runs/distill-mpnet

``--parity-only``: route (a) alone, through sentence-transformers' own trainer and through sentlab, seed 1
without selection, labelled in torch fp32 as the recipe labels (:func:`st_parity`).
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

from benchmarks.common import commit_name, emit, produced_by, same_settings, sentlab
from benchmarks.reference_models import fetch
from benchmarks.studies.retrieval_cqadupstack import (
    DEV_FORUM,
    TEST_FORUM,
    TRAIN_FORUMS,
    card_score,
    forum_card,
    jsonl,
    link_pairs,
    st_arguments,
)

STUDENT, TEACHER = "sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2"
CONFIGS = ("mse-distill", "mse-fitted", "rankcse", "margin-mse", "simcse")  # compare's baseline is the last
ROUTES = {"mse-distill": "a", "mse-fitted": "a", "rankcse": "b", "margin-mse": "c"}
PARITY_ROWS = ("sentence_transformers_trainer", "sentlab", "sentlab_pooler_named")


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
    (path.parent / "wikipedia.json").write_text(json.dumps(sentences), encoding="utf-8")
    random.Random(0).shuffle(texts)
    jsonl(path, ({"text": t} for t in texts))
    return {"wikipedia_sentences": len(sentences), "domain_titles": len(domain), "texts": len(texts)}


def configs(
    out: Path, text: Path, triplets: Path, dev_card: Path, rows: int, triplet_rows: int, setting: str, args
) -> dict[str, Path]:
    """The configs compared, as YAML files a user would write: (a) MSE onto the teacher's embeddings,
    (b) RankCSE-ListNet with the teacher, (c) MarginMSE on the teacher's margins of mined triplets, and
    unsupervised SimCSE (the baseline), all from the student and selected on the dev forum."""
    steps = max(1, rows // args.batch_size)
    common = {
        "method": "supervised",
        # the model as saved (its mean pooling and its Normalize), as sentence-transformers' trainer trains it;
        # naming model.pooler would rebuild it from the backbone without Normalize (see st_parity)
        "model": {"name": STUDENT, "max_seq_length": args.max_seq_length},
        # the study's data folder, where it is not $SENTLAB_DATA: the runs' scores and calibration read it
        "data": {"train": str(text), "columns": ["text"], **({"data_dir": args.data_dir} if args.data_dir else {})},
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
            "supervised": {
                "loss": "MSELoss",
                "loss_args": {"projection_dim": 768},
                "teacher": TEACHER,
                "teacher_setting": setting,
            },
        },
        "mse-fitted": {  # route (a) with its projection fitted by least squares before training (LP-FT)
            "supervised": {
                "loss": "MSELoss",
                "loss_args": {"projection_dim": 768},
                "teacher": TEACHER,
                "teacher_setting": setting,
                "projection_init": "least_squares",
            },
        },
        "rankcse": {  # the paper's BERT-base ListNet temperatures (tau_2 0.025, tau_3 0.0125), beta = gamma = 1
            "method": "rankcse",
            "loss": {"temperature": 0.05},
            "rankcse": {
                "teachers": [TEACHER],
                "distillation": "listnet",
                "tau_student": 0.025,
                "tau_teacher": 0.0125,
                "teacher_setting": setting,
            },
            "train": {**common["train"], "learning_rate": args.simcse_learning_rate},
        },
        "margin-mse": {  # the teacher's cosine margins of (title, duplicate, mined negative)
            "data": {**common["data"], "train": str(triplets), "columns": ["anchor", "positive", "negative"]},
            "supervised": {"loss": "MarginMSELoss", "teacher": TEACHER, "teacher_setting": setting},
            "train": {
                **common["train"],
                "batch_size": args.margin_batch_size,
                "learning_rate": args.simcse_learning_rate,
                "eval_steps": max(1, triplet_rows // args.margin_batch_size // 4),
            },
        },
        "simcse": {
            "method": "simcse-unsup",
            "train": {**common["train"], "learning_rate": args.simcse_learning_rate},
        },
    }
    files = {}
    for name, variant in variants.items():
        tree = {**common, **variant}
        files[name] = out / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return files


def drop_stale_check(out: Path, text: Path) -> None:
    """A label check made on other text is removed (before the ledger notes what this run writes)."""
    from sentlab.cache import file_sha256

    check_file = out / "label-check.json"
    if check_file.is_file() and json.loads(check_file.read_text("utf-8")).get("text_sha256") != file_sha256(text):
        check_file.unlink()


def labels_check(out: Path, text: Path, data_dir: str | None, count: int = 500) -> dict:
    """Whether a faster CPU setting keeps the teacher's labels: :func:`static_potion.label_check` on
    ``count`` Wikipedia sentences and ``count`` titles of the training text (``chosen``: the fastest
    setting that keeps them, else torch fp32), kept in ``label-check.json``."""
    from benchmarks.studies.static_potion import label_check
    from sentlab.cache import file_sha256

    check_file = out / "label-check.json"
    digest = file_sha256(text)
    drop_stale_check(out, text)
    if not check_file.is_file():
        rows = [json.loads(line)["text"] for line in text.open(encoding="utf-8")]
        wikipedia = set(json.loads((out / "data" / "wikipedia.json").read_text("utf-8")))
        sets = {
            "wikipedia": [t for t in rows if t in wikipedia][:count],
            "titles": [t for t in rows if t not in wikipedia][:count],
        }
        check_file.write_text(
            json.dumps({**label_check(TEACHER, sets, data_dir), "text_sha256": digest}), encoding="utf-8"
        )
    return json.loads(check_file.read_text("utf-8"))


def labels_cost(out: Path, text: Path, triplets: Path, setting: str, data_dir: str | None) -> dict:
    """What the labels cost from an empty cache: the teacher in ``setting`` encoding each route's distinct
    texts (a and b: the unlabelled text; c: the triplets' texts), timed here whatever the embedding cache
    held when the runs labelled; kept in ``label-cost.json``."""
    from sentlab.encoders.batching import encode_by_length
    from sentlab.methods.base import load_teacher

    cost_file = out / f"label-cost-{setting.replace(' ', '-')}.json"
    if not cost_file.is_file():
        teacher = load_teacher(TEACHER, setting, False, data_dir)  # as the runs load it
        rows = [json.loads(line)["text"] for line in text.open(encoding="utf-8")]
        triplet_texts = {t for line in triplets.open(encoding="utf-8") for t in json.loads(line).values()}
        cost = {"device": str(teacher.device), "setting": setting, "batch_size": 64}
        for route, texts in (("a_b", list(dict.fromkeys(rows))), ("c", sorted(triplet_texts))):
            started = time.perf_counter()
            encode_by_length(teacher, texts, 64)
            seconds = time.perf_counter() - started
            cost[route] = {
                "texts": len(texts),
                "seconds": round(seconds, 1),
                "per_second": round(len(texts) / seconds, 1),
            }
        cost_file.write_text(json.dumps(cost), encoding="utf-8")
    return json.loads(cost_file.read_text("utf-8"))


def st_parity(out: Path, config: Path, text: Path, card: Path, task: str, seed: int) -> dict:
    """Route (a) through sentence-transformers' own trainer (its model-distillation recipe: the teacher's
    embeddings as the ``label`` column, ``MSELoss(projection_dim=768)``) against sentlab's run of the same
    config, seed and steps without dev selection, both scored on the test forum; and sentlab's run with
    ``model.pooler: mean`` named, which rebuilds the student from its backbone without its ``Normalize``
    module (MSE then regresses unnormalised embeddings: the pipeline the recipe does not train). Each
    row says whether the trained pipeline normalises and its mean training loss."""
    from sentlab.evaluation.uncertainty import headline
    from sentlab.reporting.claims import task_items

    cfg = yaml.safe_load(config.read_text("utf-8"))
    plain = out / "st-trainer-mse"
    if not (plain / "model" / "modules.json").is_file():
        st_trainer_mse(text, plain, cfg, seed)
    rows = {"sentence_transformers_trainer": plain}
    for name, extra in zip(PARITY_ROWS[1:], ([], ["--set", "model.pooler=mean"])):
        ours = out / f"{name.replace('_', '-')}-mse-no-selection"
        rows[name] = ours
        if not (ours / "model" / "modules.json").is_file():
            sentlab(
                ["train", str(config), "--quiet", "--set", f"train.output_dir={ours}", "--set", f"train.seed={seed}"]
                + ["--set", "eval.dev_task=none", "--set", "supervised.teacher_setting=torch fp32", *extra]
            )

    def train_loss(folder: Path) -> float | None:  # the trainer's mean over the run, as each logged it
        if (folder / "log_history.json").is_file():
            entries = json.loads((folder / "log_history.json").read_text("utf-8"))
        elif (folder / "metrics.jsonl").is_file():
            entries = [json.loads(line) for line in (folder / "metrics.jsonl").open(encoding="utf-8")]
        else:  # a run made before its log was kept
            entries = []
        found = [e["train_loss"] for e in entries if "train_loss" in e]
        return round(found[-1], 6) if found else None

    found = {}
    for name, folder in rows.items():
        modules = json.loads((folder / "model" / "modules.json").read_text("utf-8"))
        scored = card_score(folder / "model", card, out / f"parity-{name}-test.json")
        found[name] = {
            "test": round(headline(task_items(scored, task)), 3),
            "normalize": any(m["type"].endswith("Normalize") for m in modules),
            "train_loss": train_loss(folder),
        }
    difference = found["sentlab"]["test"] - found["sentence_transformers_trainer"]["test"]
    return {"rows": found, "difference": round(difference, 3), "seed": seed}


def st_trainer_mse(text: Path, folder: Path, cfg: dict, seed: int) -> None:
    """sentence-transformers' model-distillation recipe at the config's settings, nothing of sentlab's
    but the offline model paths."""
    import contextlib

    from datasets import load_dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MSELoss
    from transformers import set_seed

    from sentlab.encoders.loading import inference_max_seq_length, resolve_model_path

    t = cfg["train"]
    set_seed(seed)  # before the model, as sentlab seeds: the projection's initialisation draws from it
    student = SentenceTransformer(resolve_model_path(STUDENT))
    teacher = SentenceTransformer(resolve_model_path(TEACHER))
    student.max_seq_length = cfg["model"]["max_seq_length"]  # the teacher labels at its own length, as sentlab's
    data = load_dataset("json", data_files=str(text), split="train")
    data = data.map(lambda batch: {"label": teacher.encode(batch["text"], batch_size=t["batch_size"])}, batched=True)
    args = st_arguments(folder, t, seed)
    loss = MSELoss(student, projection_dim=cfg["supervised"]["loss_args"]["projection_dim"])
    trainer = SentenceTransformerTrainer(model=student, args=args, train_dataset=data, loss=loss)
    with contextlib.redirect_stdout(sys.stderr):  # stdout holds the study's one JSON object
        trainer.train()
    (folder / "log_history.json").write_text(json.dumps(trainer.state.log_history), encoding="utf-8")
    student.max_seq_length = inference_max_seq_length(STUDENT)  # the saved length, as sentlab keeps the start's
    student.save(str(folder / "model"))


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
    parser.add_argument("--simcse-learning-rate", type=float, default=2e-5, help="SimCSE, RankCSE and MarginMSE")
    parser.add_argument("--pairs", type=int, default=2000, help="duplicate links of the training forums (route c)")
    parser.add_argument("--mine-titles", type=int, default=20000, help="training-forum titles to mine negatives from")
    parser.add_argument("--margin-batch-size", type=int, default=32)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--parity-only", action="store_true", help="only route (a)'s sentence-transformers parity")
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
    same_settings(out, {k: v for k, v in vars(args).items() if k != "output"})  # its pieces are reused
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    text = data / "text.jsonl"
    wiki = data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt"
    made = unlabelled_text(forums, wiki, args.wikipedia, args.domain, text)
    dev_card = forum_card(forums[DEV_FORUM], f"{DEV_FORUM}-dev", data / "dev", args.dev_others, 0)
    test_card = forum_card(forums[TEST_FORUM], f"{TEST_FORUM}-test", data / "test", args.test_others, 0)
    if args.parity_only:  # route (a)'s config (no triplets, no label check: the parity labels in torch fp32)
        files = configs(out, text, data / "triplets.jsonl", dev_card, made["texts"], 0, "torch fp32", args)
        outputs = [out / f"parity-{n}-test.json" for n in PARITY_ROWS]
        made_by = commit_name()
        produced_by(out, outputs, before=True, made_by=made_by)
        parity = st_parity(
            out, files["mse-distill"], text, test_card, f"{TEST_FORUM}-test", int(args.seeds.split(",")[0])
        )
        emit(
            {
                "student": STUDENT,
                "teacher": TEACHER,
                "data": {**made, "test_forum": TEST_FORUM},
                "settings": {k: getattr(args, k) for k in ("batch_size", "max_seq_length", "learning_rate")},
                **parity,
                "produced_by": produced_by(out, outputs, before=False, made_by=made_by),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        return
    # route (c): duplicate links of the training forums, a negative each mined by the start model
    pairs = link_pairs(forums, TRAIN_FORUMS, args.pairs, data / "pairs.jsonl")
    titles = sorted({forums[f].corpus[d] for f in TRAIN_FORUMS for d in forums[f].corpus})
    mined_from = sorted(
        set(random.Random(0).sample(titles, min(args.mine_titles, len(titles)))) | {p for _, p in pairs}
    )
    (data / "titles.txt").write_text("".join(" ".join(t.split()) + "\n" for t in mined_from), encoding="utf-8")
    triplets = data / "triplets.jsonl"
    # which commit produced each file the record reads (a rerun reuses them; compare's start-model.json is
    # scored again at every call)
    made_by = commit_name()
    seeds = args.seeds.split(",")
    runs = {c: [out / "compare" / c / f"seed-{s}" for s in seeds] for c in CONFIGS}
    outputs = [r / "scores.json" for c in CONFIGS for r in runs[c]]
    outputs += [out / f for f in ("teacher-dev.json", "teacher-test.json", "teacher-sts.json", "label-check.json")]
    outputs.append(triplets)
    drop_stale_check(out, text)
    produced_by(out, outputs, before=True, made_by=made_by)
    if not triplets.is_file():
        sentlab(
            ["mine", "--model", STUDENT, "--input", str(data / "pairs.jsonl")]
            + ["--columns", "{anchor: query, positive: passage}", "--corpus", str(data / "titles.txt")]
            + ["--output", str(triplets), "--quiet"]
        )
    mining = json.loads(triplets.with_suffix(".report.json").read_text("utf-8"))
    triplet_rows = sum(1 for _ in triplets.open(encoding="utf-8"))
    check = labels_check(out, text, args.data_dir)  # the fastest setting that keeps the labels labels every route
    setting = check["chosen"]
    files = configs(out, text, triplets, dev_card, made["texts"], triplet_rows, setting, args)
    cost_file = out / "label-cost-{}.json".format(setting.replace(" ", "-"))
    outputs.append(cost_file)
    produced_by(out, [cost_file], before=True, made_by=made_by)
    sentlab(
        ["compare", *(str(files[c]) for c in CONFIGS), "--task-card", str(dev_card), "--task-card", str(test_card)]
        + ["--sts", "--start-model", STUDENT, "--seeds", args.seeds, "--output", str(out / "compare"), "--quiet"]
    )
    report = json.loads((out / "compare" / "compare.json").read_text("utf-8"))
    names = {"dev": f"{DEV_FORUM}-dev", "test": f"{TEST_FORUM}-test"}
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
    labelling = {  # each teacher-labelled route's first run measured the labels' cost; later seeds read the cache
        c: {
            "first_run": json.loads((runs[c][0] / "teacher_labels.json").read_text("utf-8")),
            "later_runs_from_cache": [
                json.loads((r / "teacher_labels.json").read_text("utf-8"))["from_cache"] for r in runs[c][1:]
            ],
        }
        for c in ("mse-distill", "mse-fitted", "margin-mse")
    }
    selections = {c: [json.loads((r / "selection.json").read_text("utf-8")) for r in runs[c]] for c in CONFIGS}
    kept = {c: [chosen.get("kept_step") for chosen in selections[c]] for c in CONFIGS}
    # each seed's best trained checkpoint on dev (nDCG@10 x 100), kept or not: how far training got
    best_trained = {
        c: [None if x.get("best_checkpoint") is None else round(100 * x["best_checkpoint"], 2) for x in selections[c]]
        for c in CONFIGS
    }
    cost = labels_cost(out, text, triplets, setting, args.data_dir)
    emit(
        {
            "student": STUDENT,
            "teacher": TEACHER,
            "routes": ROUTES,
            "data": {
                **made,
                "dev_forum": DEV_FORUM,
                "test_forum": TEST_FORUM,
                "training_pairs": len(pairs),
                "mined_from_titles": len(mined_from),
                "triplets": triplet_rows,
                "mining": {k: mining[k] for k in ("pairs", "triplets", "same_text_passed_over") if k in mining},
            },
            "settings": {
                "model_pooler": yaml.safe_load(files["mse-distill"].read_text("utf-8"))["model"].get("pooler"),
                **{
                    k: getattr(args, k)
                    for k in (
                        "seeds",
                        "batch_size",
                        "margin_batch_size",
                        "max_seq_length",
                        "learning_rate",
                        "simcse_learning_rate",
                    )
                },
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
            "best_trained_dev": best_trained,
            "teacher_labels": labelling,
            "label_check": check,
            "label_cost": cost,
            "produced_by": produced_by(out, outputs, before=False, made_by=made_by),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    sys.exit(main())
