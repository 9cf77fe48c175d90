"""Static students against the published one: sentlab's static students of a teacher (all-MiniLM-L6-v2
or all-mpnet-base-v2), trained on 100k Wikipedia sentences and the domain's own text, beside model2vec's
potion-base-8M (a static student of bge-base-en-v1.5), all scored on the same tasks and timed in the same
rounds.

Feeds: records static-potion-minilm, static-potion-mpnet; pages docs/guides/distillation.md.

- **The teacher's labels.** Before training, each CPU setting sentlab ships (onnx int8, openvino int8,
  openvino int8-static) encodes held-out Wikipedia sentences and titles of the domain's collection (part
  of the training text: this checks the labels, it scores no model) beside torch fp32; a setting
  keeps the labels when its mean cosine to torch fp32's embeddings is 0.99 or more on both. The fastest
  setting that keeps them labels the training text (``distill-static --label-backend/--label-precision``);
  none: torch fp32. Each check's cosines and rate are in the record.
- **The students** (``sentlab distill-static``): ``distilled``, model2vec's distillation alone, its
  vocabulary offered the most frequent words of the training text; ``trained``, then trained on that
  text against the teacher's labels (tokenlearn's recipe), over three seeds. The training text: the first
  ``--sentences`` Wikipedia sentences and the titles of the test forum's collection (unlabelled: USEB's
  in-domain training text), shuffled together with seed 0.
- **Scores**: the seven STS tasks' average, STS-B test and the CQADupStack test forum's card (nDCG@10) for
  potion-base-8M, all-MiniLM-L6-v2, the teacher and each student. A student minus potion-base-8M, and a
  student as a fraction of all-MiniLM-L6-v2 (``fraction_of_minilm``; the records of 2026-11-29, commits
  ed77e29 and fc17f6d, name it ``fraction_of_teacher``, though it is all-MiniLM-L6-v2's there too), each
  with its 95 % interval over seeds and items.
- **Speed**: sentences a second of all-MiniLM-L6-v2 in torch fp32 (batch 128; the 100x target's
  reference), the teacher in torch fp32, potion-base-8M and each student (batch 4096), the best of three
  rounds that each take every model in turn, on Wikipedia sentences no student trained on.

Targets: a student at potion-base-8M's STS average and STS-B or above, beyond it on the domain card, at
100x all-MiniLM-L6-v2's torch fp32 rate or more; the 95 %-of-all-MiniLM-L6-v2 target stands.

    python -m benchmarks.studies.static_potion --teacher sentence-transformers/all-MiniLM-L6-v2
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from benchmarks.common import emit, same_settings, sentlab
from benchmarks.reference_models import fetch
from benchmarks.studies.static_student import FAST_SETTINGS, fraction_cells, rates, scores

MINILM, POTION = "sentence-transformers/all-MiniLM-L6-v2", "minishlab/potion-base-8M"
TEACHERS = (MINILM, "sentence-transformers/all-mpnet-base-v2")
TEST_FORUM = "mathematica"
KEEPS = 0.99  # the mean cosine to torch fp32's labels a faster setting must keep


def label_check(teacher: str, sets: dict[str, list[str]], data_dir: str | None = None) -> dict:
    """Each CPU setting of :data:`FAST_SETTINGS` against torch fp32 on each set of texts: the mean and
    lowest cosine of their embeddings and the setting's rate (sentences a second, batch 128, in the same
    rounds); a setting whose extra is missing is listed as unavailable. ``chosen``: the fastest setting
    whose mean cosine is :data:`KEEPS` or more on every set and that beats torch fp32's rate, else torch
    fp32; on a machine with a CUDA GPU, torch fp32 there (the check compares CPU runtimes). Each setting
    is loaded as a run loads its teacher (int8-static calibrated on ``data_dir``'s Wikipedia sentences)."""
    import numpy as np
    import torch

    from sentlab.encoders.backends import require_extra
    from sentlab.encoders.batching import encode_by_length
    from sentlab.encoders.loading import load_encoder
    from sentlab.errors import SentlabError
    from sentlab.methods.base import load_teacher

    models = {"torch fp32": (load_encoder(teacher, device="cpu"), 128)}
    unavailable = {}
    for backend, precision in FAST_SETTINGS:
        try:
            require_extra(backend)
        except SentlabError as missing:  # its extra is not installed: one line, the others still run
            unavailable[f"{backend} {precision}"] = str(missing).splitlines()[0]
            continue
        setting = f"{backend} {precision}"
        models[setting] = (load_teacher(teacher, setting, False, data_dir), 128)
    reference = {name: encode_by_length(models["torch fp32"][0], texts, 128) for name, texts in sets.items()}
    checked = {}
    for setting, (model, _) in models.items():
        if setting == "torch fp32":
            continue
        cosines = {}
        for name, texts in sets.items():
            got = np.asarray(encode_by_length(model, texts, 128), dtype=np.float64)
            ref = np.asarray(reference[name], dtype=np.float64)
            row = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
            cosines[name] = {"mean": round(float(row.mean()), 4), "min": round(float(row.min()), 4)}
        checked[setting] = {"cosine_to_fp32": cosines, "keeps": all(c["mean"] >= KEEPS for c in cosines.values())}
    speed = rates(models, [t for texts in sets.values() for t in texts], 3)
    for setting in checked:
        checked[setting]["sentences_per_second"] = speed[setting]
    kept = [s for s in checked if checked[s]["keeps"] and speed[s] > speed["torch fp32"]]
    chosen = max(kept, key=lambda s: speed[s]) if kept else "torch fp32"
    found = {"settings": checked, "unavailable": unavailable, "torch_fp32_sentences_per_second": speed["torch fp32"]}
    if torch.cuda.is_available():
        return {**found, "chosen": "torch fp32", "why": "a CUDA GPU labels in torch fp32"}
    why = f"the fastest setting keeping a mean cosine of {KEEPS}" if kept else f"no faster setting keeps {KEEPS}"
    return {**found, "chosen": chosen, "why": why}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", choices=TEACHERS, default=MINILM)
    parser.add_argument("--output", default=None, help="default: runs/static-potion-<teacher>")
    parser.add_argument("--sentences", type=int, default=100_000, help="Wikipedia sentences of the training text")
    parser.add_argument("--vocabulary", type=int, default=20000, help="training-text words offered to the vocabulary")
    parser.add_argument("--check-sentences", type=int, default=1000, help="texts of each set the label check reads")
    parser.add_argument("--rate-sentences", type=int, default=5000, help="sentences the encode rates are timed on")
    parser.add_argument("--test-others", type=int, default=None, help="cut the test corpus (a smoke run)")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    from benchmarks.studies.retrieval_cqadupstack import forum_card
    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.encoders.loading import load_encoder, resolve_model_path
    from sentlab.encoders.static import STATIC_BATCH_SIZE
    from sentlab.evaluation.uncertainty import headline, seed_item_difference
    from sentlab.paths import data_dir
    from sentlab.reporting.claims import task_items

    started = time.perf_counter()
    for name in {MINILM, args.teacher, POTION}:
        fetch(name)  # the offline copy, when there is no hub
    short = args.teacher.split("/")[-1]
    out = Path(args.output or f"runs/static-potion-{short}").resolve()
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    same_settings(out, {k: v for k, v in vars(args).items() if k != "output"})  # its pieces are reused
    seeds = [int(s) for s in args.seeds.split(",")]

    wiki = data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt"
    lines = [" ".join(line.split()) for line in wiki.read_text("utf-8").splitlines()]
    lines = [line for line in lines if line]
    held_out = lines[-args.rate_sentences :]  # no student trains on these: rates and the label check
    if args.sentences + args.rate_sentences > len(lines):
        raise SystemExit(f"--sentences {args.sentences}: the file has {len(lines) - args.rate_sentences} to train on")
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    card = forum_card(forums[TEST_FORUM], f"{TEST_FORUM}-test", data / "test", args.test_others, 0)
    collection = sorted({" ".join(t.split()) for t in forums[TEST_FORUM].corpus.values()} - {""})
    text = lines[: args.sentences] + collection
    random.Random(0).shuffle(text)
    corpus = data / "train.txt"
    corpus.write_text("\n".join(text) + "\n", encoding="utf-8")

    pin_float32_math()
    check_file = out / "label-check.json"
    if not check_file.is_file():
        other_titles = random.Random(1).sample(collection, min(args.check_sentences, len(collection)))
        sets = {"wikipedia": held_out[: args.check_sentences], "titles": other_titles}
        check_file.write_text(json.dumps(label_check(args.teacher, sets, args.data_dir)), encoding="utf-8")
    check = json.loads(check_file.read_text("utf-8"))
    backend, precision = check["chosen"].split()

    base = ["--model", args.teacher, "--corpus", str(corpus), "--vocabulary-size", str(args.vocabulary), "--quiet"]
    students = {"distilled": [out / "distilled"]}
    sentlab(["distill-static", *base, "--output", str(out / "distilled")])
    students["trained"] = []
    for seed in seeds:
        folder = out / f"trained-seed-{seed}"
        labels = ["--label-backend", backend, "--label-precision", precision]
        if precision == "int8-static" and args.data_dir:  # its calibration: the study's data folder
            labels += ["--data-dir", args.data_dir]
        sentlab(["distill-static", *base, "--train", "--seed", str(seed), *labels, "--output", str(folder)])
        students["trained"].append(folder)

    names = {"sts_avg": "sts_avg", "sts_b": "STS-B", "domain_ndcg_at_10": f"{TEST_FORUM}-test"}
    reference = {"potion-base-8M": POTION, "all-MiniLM-L6-v2": MINILM}
    if args.teacher != MINILM:
        reference["teacher"] = args.teacher
    found = {label: scores(name, card, out / f"scores-{label}.json") for label, name in reference.items()}
    table = {label: {k: round(headline(task_items(r, t)), 2) for k, t in names.items()} for label, r in found.items()}
    against = {}
    for row, folders in students.items():
        runs = [scores(f, card, out / f"scores-{f.name}.json") for f in folders]
        # the 95 % target's fraction, of all-MiniLM-L6-v2 whichever the teacher
        table[row] = fraction_cells(runs, found["all-MiniLM-L6-v2"], names, key="fraction_of_minilm")
        against[row] = {}
        for key, task in names.items():
            d = seed_item_difference([task_items(r, task) for r in runs], [task_items(found["potion-base-8M"], task)])
            d = d.to_dict()
            against[row][key] = {k: round(d[k], 2) for k in ("difference", "low", "high")}
            against[row][key]["beyond_noise"] = d["beyond_noise"]

    texts = held_out
    timed = {"all-MiniLM-L6-v2 torch fp32": (load_encoder(MINILM, device="cpu"), 128)}
    if args.teacher != MINILM:
        timed["teacher torch fp32"] = (load_encoder(args.teacher, device="cpu"), 128)
    timed["potion-base-8M"] = (SentenceTransformer(resolve_model_path(POTION), device="cpu"), STATIC_BATCH_SIZE)
    timed |= {row: (SentenceTransformer(str(f[0]), device="cpu"), STATIC_BATCH_SIZE) for row, f in students.items()}
    measured = rates(timed, texts, 3)
    del timed
    minilm_rate = measured["all-MiniLM-L6-v2 torch fp32"]
    speed = {
        k: {"sentences_per_second": v, "times_minilm_fp32": round(v / minilm_rate, 1)} for k, v in measured.items()
    }

    trained = table["trained"]
    targets = {
        "sts_avg_at_least_potion": trained["sts_avg"]["mean"] >= table["potion-base-8M"]["sts_avg"],
        "sts_b_at_least_potion": trained["sts_b"]["mean"] >= table["potion-base-8M"]["sts_b"],
        "domain_beyond_potion": against["trained"]["domain_ndcg_at_10"]["beyond_noise"]
        and against["trained"]["domain_ndcg_at_10"]["difference"] > 0,
        "speed_100x_minilm": speed["trained"]["times_minilm_fp32"] >= 100,
        "fraction_of_minilm_095": {k: trained[k]["fraction_of_minilm"] >= 0.95 for k in names},
    }
    first = json.loads((students["trained"][0] / "distill.json").read_text("utf-8"))
    later = [json.loads((f / "distill.json").read_text("utf-8"))["labels"] for f in students["trained"][1:]]
    emit(
        {
            "teacher": args.teacher,
            "reference": POTION,
            "seeds": seeds,
            "data": {
                "wikipedia_sentences": args.sentences,
                "domain_titles": len(collection),
                "training_texts": len(text),
                "vocabulary_offered": args.vocabulary,
                "student_tokens": first["tokens"],
                "student_dims": first["dims"],
                "test_forum": TEST_FORUM,
                "rate_sentences": len(texts),
            },
            "label_check": check,
            "labels": {
                **first["labels"],
                "teacher_seconds": first.get("teacher_seconds"),
                "later_seeds_from_cache": [r["from_cache"] for r in later],
            },
            "scores": table,
            "minus_potion": against,
            "speed": speed,
            "targets": targets,
            "train_seconds": statistics.mean(
                json.loads((f / "distill.json").read_text("utf-8"))["train_seconds"] for f in students["trained"]
            ),
            "model2vec": first["model2vec"],
            "tokenlearn": first["tokenlearn"],
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
