"""A static student of all-MiniLM-L6-v2, as the page "A model a hundred times faster for CPU serving"
builds it: how much of the teacher each student keeps, and how much faster it encodes, in one run.

Students (``sentlab distill-static``; the trained ones over three seeds):

- ``distilled``: model2vec's distillation alone, its vocabulary offered the most frequent words of the
  Wikipedia sentences;
- ``+ corpus``: then trained on those sentences against the teacher's embeddings (tokenlearn's recipe);
- ``+ pairs``: then ``supervised`` MNRL on CQADupStack duplicate-question pairs of two training forums
  (sentence-transformers' recipe for static models: a large learning rate, one epoch).

Scores: STS-B test, the seven STS tasks' average and a CQADupStack forum's retrieval card (nDCG@10,
forum held out of the pairs), each as a fraction of the teacher's, with the 95 % interval of the
student-minus-teacher difference over seeds and items (sentlab's multi-bootstrap) divided by the
teacher's score. Speed: sentences a second of the teacher (torch fp32, batch 128) and of each student
(batch 4096, its tokenizer threaded), each the best of three rounds, through sentlab's encode path on the
same Wikipedia sentences in this process; the size of each on disk.

Feeds: records static-student-minilm; pages docs/guides/static.md.

    python -m benchmarks.studies.static_student --output runs/static-student
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import yaml

from benchmarks.common import emit, sentlab

TRAIN_FORUMS = ("gaming", "unix")
TEST_FORUM = "mathematica"


def folder_bytes(folder: Path, skip: str | None = None) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and (skip is None or skip not in p.parts))


def scores(model: str | Path, card: Path, output: Path) -> dict:
    if not output.is_file():
        sentlab(
            ["eval", "--model", str(model), "--tasks", "sts", "--task-card", str(card), "--items", "--quiet"]
            + ["--output", str(output)]
        )
    return json.loads(output.read_text("utf-8"))


def rate(model, texts: list[str], batch_size: int, rounds: int) -> float:
    """Sentences a second through sentlab's encode path (``encode_by_length``: a transformer's batches
    by token length; a static model's in order, its tokenizer threaded), the best of ``rounds``."""
    from sentlab.encoders.batching import encode_by_length

    encode_by_length(model, texts[:batch_size], batch_size)  # warm: the first batch allocates
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        encode_by_length(model, texts, batch_size)
        best = max(best, len(texts) / (time.perf_counter() - started))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/static-student")
    parser.add_argument("--sentences", type=int, default=10000, help="Wikipedia sentences the students train on")
    parser.add_argument("--vocabulary", type=int, default=20000, help="corpus words offered to the vocabulary")
    parser.add_argument("--pairs", type=int, default=4000, help="duplicate-question pairs of the training forums")
    parser.add_argument("--rate-sentences", type=int, default=5000, help="sentences the encode rates are timed on")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--learning-rate", type=float, default=0.05, help="+ pairs: the static student's rate")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from benchmarks.studies.retrieval_cqadupstack import forum_card, jsonl
    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.encoders.loading import load_encoder, resolve_model_path
    from sentlab.encoders.static import STATIC_BATCH_SIZE
    from sentlab.evaluation.uncertainty import headline, seed_item_difference
    from sentlab.paths import data_dir
    from sentlab.reporting.claims import task_items

    out = Path(args.output).resolve()
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    asked = {k: v for k, v in vars(args).items() if k != "output"}
    kept = out / "asked.json"  # the folder's students and scores are reused: only for the settings they ran at
    if kept.is_file() and json.loads(kept.read_text("utf-8")) != asked:
        raise SystemExit(f"{out} holds a run at other settings ({kept}); give another --output")
    kept.write_text(json.dumps(asked), encoding="utf-8")
    wiki = data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt"
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    card = forum_card(forums[TEST_FORUM], f"{TEST_FORUM}-test", data / "test", None, 0)
    links = [
        (forums[f].queries[q], forums[f].corpus[d])
        for f in TRAIN_FORUMS
        for q, ds in sorted(forums[f].relevant.items())
        for d in sorted(ds)
    ]
    pairs = random.Random(0).sample(links, min(args.pairs, len(links)))
    jsonl(data / "pairs.jsonl", ({"query": q, "passage": p} for q, p in pairs))
    seeds = [int(s) for s in args.seeds.split(",")]
    common = ["--model", "minilm", "--corpus", str(wiki), "--sentences", str(args.sentences)]
    common += ["--vocabulary-size", str(args.vocabulary), "--quiet"]
    students: dict[str, list[Path]] = {"distilled": [out / "distilled"]}
    sentlab(["distill-static", *common, "--output", str(out / "distilled")])
    students["+ corpus"] = []
    students["+ pairs"] = []
    for seed in seeds:
        trained = out / f"corpus-seed-{seed}"
        sentlab(["distill-static", *common, "--train", "--seed", str(seed), "--output", str(trained)])
        students["+ corpus"].append(trained)
        run = out / f"pairs-seed-{seed}"
        if not (run / "model" / "modules.json").is_file():
            config = out / f"pairs-seed-{seed}.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "method": "supervised",
                        "model": {"name": str(trained)},
                        "data": {
                            "train": str(data / "pairs.jsonl"),
                            "columns": {"anchor": "query", "positive": "passage"},
                        },
                        "train": {
                            "output_dir": str(run),
                            "batch_size": 256,
                            "epochs": 1,
                            "learning_rate": args.learning_rate,
                            "seed": seed,
                            "progress_bar": False,
                        },
                        "eval": {"final_tasks": []},
                        "supervised": {"loss": "mnrl"},
                    }
                ),
                encoding="utf-8",
            )
            sentlab(["train", str(config), "--quiet"])
        students["+ pairs"].append(run / "model")

    names = {"sts_b": "STS-B", "sts_avg": "sts_avg", "retrieval_ndcg_at_10": f"{TEST_FORUM}-test"}
    teacher = scores("minilm", card, out / "teacher.json")
    table = {"teacher": {k: round(headline(task_items(teacher, t)), 2) for k, t in names.items()}}
    for row, folders in students.items():
        results = [scores(f, card, out / f"scores-{row.strip('+ ')}-{i}.json") for i, f in enumerate(folders)]
        cells = {}
        for key, task in names.items():
            runs = [task_items(r, task) for r in results]
            base = headline(task_items(teacher, task))
            d = seed_item_difference(runs, [task_items(teacher, task)]).to_dict()
            cells[key] = {
                "per_seed": [round(headline(r), 2) for r in runs],
                "mean": round(statistics.mean(headline(r) for r in runs), 2),
                "fraction_of_teacher": round(1 + d["difference"] / base, 3),
                "fraction_ci95": [round(1 + d["low"] / base, 3), round(1 + d["high"] / base, 3)],
            }
        table[row] = cells

    pin_float32_math()
    texts = wiki.read_text("utf-8").splitlines()[-args.rate_sentences :]  # sentences no student trained on
    from sentence_transformers import SentenceTransformer

    teacher_model = load_encoder("minilm", device="cpu").eval()
    speed = {"teacher": {"sentences_per_second": round(rate(teacher_model, texts, 128, 3)), "batch_size": 128}}
    teacher_folder = Path(resolve_model_path("minilm"))
    sizes = {"teacher": folder_bytes(teacher_folder)}
    for row, folders in students.items():
        model = SentenceTransformer(str(folders[0]), device="cpu")
        speed[row] = {"sentences_per_second": round(rate(model, texts, STATIC_BATCH_SIZE, 3)), "batch_size": 4096}
        speed[row]["speedup"] = round(speed[row]["sentences_per_second"] / speed["teacher"]["sentences_per_second"], 1)
        sizes[row] = folder_bytes(folders[0], skip="model2vec")
    record = json.loads((out / "distilled" / "distill.json").read_text("utf-8"))
    trained = json.loads((out / f"corpus-seed-{seeds[0]}" / "distill.json").read_text("utf-8"))
    emit(
        {
            "teacher": "all-MiniLM-L6-v2",
            "seeds": seeds,
            "data": {
                "wikipedia_sentences": args.sentences,
                "vocabulary_offered": args.vocabulary,
                "student_tokens": record["tokens"],
                "student_dims": record["dims"],
                "pairs": len(pairs),
                "pairs_forums": list(TRAIN_FORUMS),
                "test_forum": TEST_FORUM,
                "rate_sentences": len(texts),
            },
            "scores": table,
            "speed": speed,
            "bytes_on_disk": sizes,
            "seconds": {k: trained.get(k) for k in ("distill_seconds", "teacher_seconds", "train_seconds")},
            "target": {"speedup": 100, "fraction_of_teacher": 0.95},
            "model2vec": record["model2vec"],
            "tokenlearn": record["tokenlearn"],
        }
    )


if __name__ == "__main__":
    main()
