"""Static students of two teachers, as the page "A static model for CPU serving" builds them: how much of its teacher each student keeps, and how much faster it encodes, in one run. The
teachers: all-MiniLM-L6-v2, and all-MiniLM-L6-v2 trained by sentlab on the pairs below (MNRL, batch 32,
one epoch; a user's adapted model).

Feeds: records static-student-minilm; pages docs/guides/inference.md, docs/guides/static.md,
docs/results.md.

Students of each (``sentlab distill-static``; the trained ones over three seeds):

- ``distilled``: model2vec's distillation alone, its vocabulary offered the most frequent words of the
  Wikipedia sentences;
- ``+ corpus``: then trained on those sentences against the teacher's embeddings (tokenlearn's recipe);
- ``+ pairs``: then ``supervised`` MNRL on CQADupStack duplicate-question pairs of two training forums
  (sentence-transformers' recipe for static models: a large learning rate, batch 256, one epoch);
- ``+ titles``: as ``+ corpus``, its vocabulary and training text the titles of the retrieval card's own
  collection (the test forum's corpus, unlabelled: USEB's in-domain training text; the queries are not in
  it, though a document may be worded as a query is);
- ``+ titles + pairs``: ``+ titles``, then the pairs as ``+ pairs``.

Scores: STS-B test, the seven STS tasks' average and a CQADupStack forum's retrieval card (nDCG@10,
forum held out of the pairs), each as a fraction of the teacher's, with the 95 % interval of the
student-minus-teacher difference over seeds and items (sentlab's multi-bootstrap) divided by the
teacher's score. Speed: sentences a second of the teacher (batch 128) in torch fp32 and in each int8
setting sentlab ships for a CPU (onnx int8, openvino int8, openvino int8-static), and of each student
(batch 4096, its tokenizer threaded), each the best of three rounds that take every setting and student
of a teacher in turn, through sentlab's encode path on the same Wikipedia sentences in this process; the teacher's fastest setting is also scored on every task, a
point of the frontier; the size of each on disk.

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

from benchmarks.common import emit, same_settings, sentlab

TRAIN_FORUMS = ("gaming", "unix")
TEST_FORUM = "mathematica"
FAST_SETTINGS = (("onnx", "int8"), ("openvino", "int8"), ("openvino", "int8-static"))  # sentlab's CPU int8


def folder_bytes(folder: Path, skip: str | None = None) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and (skip is None or skip not in p.parts))


def scores(model: str | Path, card: Path, output: Path, setting: list[str] = ()) -> dict:
    if not output.is_file():
        sentlab(
            ["eval", "--model", str(model), "--tasks", "sts", "--task-card", str(card), "--items", "--quiet"]
            + ["--output", str(output), *setting]
        )
    return json.loads(output.read_text("utf-8"))


def rates(models: dict[str, tuple[object, int]], texts: list[str], rounds: int) -> dict[str, int]:
    """Sentences a second of each ``name: (model, batch size)`` through sentlab's encode path
    (``encode_by_length``: a transformer's batches by token length; a static model's in order, its
    tokenizer threaded): the best of ``rounds`` rounds, each taking every model in turn, so a slow or
    fast spell of the machine falls on all of them."""
    from sentlab.encoders.batching import encode_by_length

    for model, batch_size in models.values():
        encode_by_length(model, texts[:batch_size], batch_size)  # warm: the first batch allocates
    best = dict.fromkeys(models, 0.0)
    for _ in range(rounds):
        for name, (model, batch_size) in models.items():
            started = time.perf_counter()
            encode_by_length(model, texts, batch_size)
            best[name] = max(best[name], len(texts) / (time.perf_counter() - started))
    return {name: round(value) for name, value in best.items()}


def teacher_settings(name: str, data_dir: str | None = None) -> dict[str, tuple[object, int]]:
    """The teacher in torch fp32 and in each of :data:`FAST_SETTINGS`, at batch 128, for :func:`rates`, all
    on the CPU; each setting loaded as a run loads its teacher (int8-static calibrated on ``data_dir``)."""
    from sentlab.encoders.loading import load_encoder
    from sentlab.methods.base import load_teacher

    found = {"torch fp32": (load_encoder(name, device="cpu"), 128)}
    found |= {f"{b} {p}": (load_teacher(name, f"{b} {p}", False, data_dir), 128) for b, p in FAST_SETTINGS}
    return found


def fraction_cells(runs: list[dict], teacher: dict, names: dict[str, str], key: str = "fraction_of_teacher") -> dict:
    """Each task's mean score of ``runs`` (seeds) as a fraction of ``teacher``'s, with the 95 % interval of
    the difference over seeds and items (sentlab's multi-bootstrap) divided by the teacher's score; the
    fraction named ``key`` (static_potion's reference is all-MiniLM-L6-v2, whichever the teacher)."""
    from sentlab.evaluation.uncertainty import headline, seed_item_difference
    from sentlab.reporting.claims import task_items

    cells = {}
    for key, task in names.items():
        items = [task_items(r, task) for r in runs]
        base = headline(task_items(teacher, task))
        d = seed_item_difference(items, [task_items(teacher, task)]).to_dict()
        cells[key] = {
            "per_seed": [round(headline(r), 2) for r in items],
            "mean": round(statistics.mean(headline(r) for r in items), 2),
            key: round(1 + d["difference"] / base, 3),
            "fraction_ci95": [round(1 + d["low"] / base, 3), round(1 + d["high"] / base, 3)],
        }
    return cells


def pairs_config(start: str, data: Path, run: Path, batch_size: int, learning_rate: float, seed: int) -> dict:
    """MNRL on the training forums' pairs, one epoch: a static student's step 3, or the second teacher."""
    return {
        "method": "supervised",
        "model": {"name": start},
        "data": {"train": str(data / "pairs.jsonl"), "columns": {"anchor": "query", "positive": "passage"}},
        "train": {
            "output_dir": str(run),
            "batch_size": batch_size,
            "epochs": 1,
            "learning_rate": learning_rate,
            "seed": seed,
            "progress_bar": False,
        },
        "eval": {"final_tasks": []},
        "supervised": {"loss": "mnrl"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/static-student")
    parser.add_argument("--sentences", type=int, default=10000, help="Wikipedia sentences the students train on")
    parser.add_argument("--vocabulary", type=int, default=20000, help="corpus words offered to the vocabulary")
    parser.add_argument("--titles", type=int, default=None, help="collection titles '+ titles' reads (all)")
    parser.add_argument("--pairs", type=int, default=4000, help="duplicate-question pairs of the training forums")
    parser.add_argument("--rate-sentences", type=int, default=5000, help="sentences the encode rates are timed on")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--learning-rate", type=float, default=0.05, help="+ pairs: the static student's rate")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from benchmarks.studies.retrieval_cqadupstack import forum_card, link_pairs
    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.encoders.loading import resolve_model_path
    from sentlab.encoders.static import STATIC_BATCH_SIZE
    from sentlab.evaluation.uncertainty import headline
    from sentlab.paths import data_dir
    from sentlab.reporting.claims import task_items

    out = Path(args.output).resolve()
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    same_settings(out, {k: v for k, v in vars(args).items() if k != "output"})  # its pieces are reused
    wiki = data_dir(args.data_dir) / "wikipedia" / "wiki_sentences.txt"
    forums = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    card = forum_card(forums[TEST_FORUM], f"{TEST_FORUM}-test", data / "test", None, 0)
    pairs = link_pairs(forums, TRAIN_FORUMS, args.pairs, data / "pairs.jsonl")
    # the retrieval card's own collection, unlabelled, one title a line in a seeded order (tokenlearn holds
    # out the file's last tenth)
    collection = [" ".join(t.split()) for t in forums[TEST_FORUM].corpus.values()]
    collection = sorted({t for t in collection if t})
    random.Random(0).shuffle(collection)
    collection = collection[: args.titles]
    titles = data / "titles.txt"
    titles.write_text("\n".join(collection) + "\n", encoding="utf-8")
    seeds = [int(s) for s in args.seeds.split(",")]
    # the second teacher: all-MiniLM-L6-v2 trained by sentlab on the pairs (MNRL, one epoch), as a user's
    # adapted model is; its students learn the same pairs after it
    trained_teacher = out / "sentlab-teacher"
    if not (trained_teacher / "model" / "modules.json").is_file():
        config = out / "sentlab-teacher.yaml"
        config.write_text(yaml.safe_dump(pairs_config("minilm", data, trained_teacher, 32, 2e-5, 1)), encoding="utf-8")
        sentlab(["train", str(config), "--quiet"])
    teachers = {"all-MiniLM-L6-v2": "minilm", "sentlab-trained": str(trained_teacher / "model")}
    names = {"sts_b": "STS-B", "sts_avg": "sts_avg", "retrieval_ndcg_at_10": f"{TEST_FORUM}-test"}
    pin_float32_math()
    texts = wiki.read_text("utf-8").splitlines()[-args.rate_sentences :]  # sentences no student trained on
    from sentence_transformers import SentenceTransformer

    corpora = {  # a trained row: (its corpus, the sentences of it read, its folder's name)
        "+ corpus": (wiki, args.sentences, "corpus"),
        "+ titles": (titles, len(collection), "titles"),
    }
    results = {}
    for label, teacher_name in teachers.items():
        folder = out / label
        vocabulary = ["--vocabulary-size", str(args.vocabulary), "--quiet"]
        common = ["--model", teacher_name, "--corpus", str(wiki), "--sentences", str(args.sentences), *vocabulary]
        students: dict[str, list[Path]] = {"distilled": [folder / "distilled"]}
        sentlab(["distill-static", *common, "--output", str(folder / "distilled")])
        for row, (corpus, count, name) in corpora.items():
            students[row], students[f"{row} + pairs"] = [], []
            for seed in seeds:
                trained = folder / f"{name}-seed-{seed}"
                command = ["--model", teacher_name, "--corpus", str(corpus), "--sentences", str(count), *vocabulary]
                sentlab(["distill-static", *command, "--train", "--seed", str(seed), "--output", str(trained)])
                students[row].append(trained)
                run = folder / ("pairs" if name == "corpus" else f"{name}-pairs") / f"seed-{seed}"
                if not (run / "model" / "modules.json").is_file():
                    config = run.parent / f"seed-{seed}.yaml"
                    config.parent.mkdir(parents=True, exist_ok=True)
                    tree = pairs_config(str(trained), data, run, 256, args.learning_rate, seed)
                    config.write_text(yaml.safe_dump(tree), encoding="utf-8")
                    sentlab(["train", str(config), "--quiet"])
                students[f"{row} + pairs"].append(run / "model")
        students["+ pairs"] = students.pop("+ corpus + pairs")
        order = ["distilled", "+ corpus", "+ pairs", "+ titles", "+ titles + pairs"]
        students = {row: students[row] for row in order}
        teacher = scores(teacher_name, card, folder / "teacher.json")
        table = {"teacher": {k: round(headline(task_items(teacher, t)), 2) for k, t in names.items()}}
        # speed first, the teacher's settings and its students timed in the same rounds; the teacher's
        # fastest int8 setting is then scored as a point of the frontier
        timed = teacher_settings(teacher_name, args.data_dir)
        timed |= {row: (SentenceTransformer(str(f[0]), device="cpu"), STATIC_BATCH_SIZE) for row, f in students.items()}
        measured = rates(timed, texts, 3)
        del timed
        settings = {k: measured[k] for k in ("torch fp32", *(" ".join(s) for s in FAST_SETTINGS))}
        fastest = max((k for k in settings if k != "torch fp32"), key=settings.get)
        speed = {
            "teacher": {"sentences_per_second": settings["torch fp32"], "batch_size": 128, "settings": settings},
            "fastest_teacher": {"setting": fastest, "sentences_per_second": settings[fastest], "batch_size": 128},
        }
        speed["fastest_teacher"]["speedup"] = round(settings[fastest] / settings["torch fp32"], 1)
        backend, precision = fastest.split()
        fast = scores(
            teacher_name,
            card,
            folder / f"teacher-{backend}-{precision}.json",
            ["--backend", backend, "--precision", precision],
        )
        table["fastest_teacher"] = fraction_cells([fast], teacher, names)
        sizes = {"teacher": folder_bytes(Path(resolve_model_path(teacher_name)))}
        for row, folders in students.items():
            found = [
                scores(f, card, folder / f"scores-{row.strip('+ ').replace(' + ', '-')}-{i}.json")
                for i, f in enumerate(folders)
            ]
            table[row] = fraction_cells(found, teacher, names)
            speed[row] = {"sentences_per_second": measured[row], "batch_size": STATIC_BATCH_SIZE}
            speed[row]["speedup"] = round(measured[row] / settings["torch fp32"], 1)
            speed[row]["speedup_over_fastest"] = round(measured[row] / settings[fastest], 1)
            sizes[row] = folder_bytes(folders[0], skip="model2vec")
        results[label] = {"scores": table, "speed": speed, "bytes_on_disk": sizes}
    first = out / "all-MiniLM-L6-v2"
    record = json.loads((first / "distilled" / "distill.json").read_text("utf-8"))
    trained = json.loads((first / f"corpus-seed-{seeds[0]}" / "distill.json").read_text("utf-8"))
    in_domain = json.loads((first / f"titles-seed-{seeds[0]}" / "distill.json").read_text("utf-8"))
    steps = ("distill_seconds", "teacher_seconds", "train_seconds")
    emit(
        {
            "teacher": "all-MiniLM-L6-v2",
            "seeds": seeds,
            "data": {
                "wikipedia_sentences": args.sentences,
                "vocabulary_offered": args.vocabulary,
                "student_tokens": record["tokens"],
                "student_dims": record["dims"],
                "titles": len(collection),
                "titles_student_tokens": in_domain["tokens"],
                "pairs": len(pairs),
                "pairs_forums": list(TRAIN_FORUMS),
                "test_forum": TEST_FORUM,
                "rate_sentences": len(texts),
            },
            "teachers": results,
            **results["all-MiniLM-L6-v2"],  # the page's first table
            "seconds": {k: trained.get(k) for k in steps},
            "titles_seconds": {k: in_domain.get(k) for k in steps},
            "target": {"speedup": 100, "fraction_of_teacher": 0.95},
            "model2vec": record["model2vec"],
            "tokenlearn": record["tokenlearn"],
        }
    )


if __name__ == "__main__":
    main()
