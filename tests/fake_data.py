"""Small files in the layouts of SentEval, USEB and EvalRank, written by tests (never real data)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from tests.conftest import WORDS


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_transfer(root: Path, n: int = 24, seed: int = 0) -> Path:
    """All seven transfer tasks, ``n`` sentences per class and split; labels follow a keyword so a
    classifier can learn them ("dog" = positive)."""
    rng = random.Random(seed)
    base = root / "senteval" / "downstream"

    def labelled(label: int) -> str:
        return ("dog " if label else "cat ") + _sentence(rng, rng.randint(2, 6))

    for task, (pos, neg) in {
        "MR": ("rt-polarity.pos", "rt-polarity.neg"),
        "CR": ("custrev.pos", "custrev.neg"),
        "SUBJ": ("subj.objective", "subj.subjective"),
        "MPQA": ("mpqa.pos", "mpqa.neg"),
    }.items():
        (base / task).mkdir(parents=True, exist_ok=True)
        (base / task / pos).write_text("".join(labelled(1) + " \n" for _ in range(n)), encoding="latin-1")
        (base / task / neg).write_text("".join(labelled(0) + "\n" for _ in range(n)), encoding="latin-1")
    sst = base / "SST" / "binary"
    sst.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        rows = [(labelled(y), y) for y in [1, 0] * n]
        (sst / f"sentiment-{split}").write_text("".join(f"{s}\t{y}\n" for s, y in rows), encoding="utf-8")
    trec = base / "TREC"
    trec.mkdir(parents=True, exist_ok=True)
    for name in ("train_5500.label", "TREC_10.label"):
        rows = [
            ("HUM:ind", "who " + _sentence(rng, 3)) if k % 2 else ("LOC:city", "where " + _sentence(rng, 3))
            for k in range(2 * n)
        ]
        (trec / name).write_bytes("".join(f"{a} {b} ?\n" for a, b in rows).encode("latin-1"))
    mrpc = base / "MRPC"
    mrpc.mkdir(parents=True, exist_ok=True)
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        lines = ["\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for k in range(2 * n):
            a = _sentence(rng, 4)
            b = a if k % 2 else _sentence(rng, 4)
            lines.append(f"{k % 2}\t{k}\t{k + 1000}\t{a}\t{b}")
        (mrpc / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def write_twitterpara(root: Path) -> Path:
    folder = root / "useb" / "data-eval" / "twitterpara"
    folder.mkdir(parents=True, exist_ok=True)
    turl = [
        "the dog runs\tthe dog runs fast\t(5, 6)\thttp://t.co/1",
        "",
        "a cat sits\tthe car drives\t(0, 6)\turl",
        "a boy reads\ta boy reads a book\t(3, 6)\turl",
        "",
        "the sky\tthe bird flies\t(1, 6)\turl",
    ]
    (folder / "Twitter_URL_Corpus_test.txt").write_text("\n".join(turl) + "\n", encoding="utf-8")
    pit = [
        "1\tTopic\tthe man plays\tthe man plays guitar\t4\ttags\ttags",
        "1\tTopic\tthe girl swims\ta red car\t1\ttags\ttags",
        "2\tTopic\tthe dog eats\tthe dog eats food\t3\ttags\ttags",
    ]
    (folder / "test.data").write_text("\n".join(pit) + "\n", encoding="utf-8")
    (folder / "test.label").write_text("true\t0.8\nfalse\t0.2\n----\t0.6\n", encoding="utf-8")
    return folder


CQA_FORUMS = {
    "android": {
        "corpus": {"d1": "the dog runs", "d2": "a cat sits", "d3": "the car drives", "d4": "music plays"},
        "queries": {"q1": "the dog runs fast", "q2": "a car drives"},
        "relevant_docs": {"q1": ["d1"], "q2": ["d3", "d4"]},
    },
    "gaming": {
        "corpus": {"e1": "a boy plays ball", "e2": "the bird flies"},
        "queries": {"q9": "the boy plays"},
        "relevant_docs": {"q9": ["e2"]},
    },
}


def write_cqadupstack(root: Path, layout: str = "gz") -> Path:
    folder = root / "useb" / "data-eval" / "cqadupstack"
    folder.mkdir(parents=True, exist_ok=True)
    if layout == "gz":
        with gzip.open(folder / "cqadupstack_titles_2forums.json.gz", "wt", encoding="utf-8") as handle:
            json.dump(CQA_FORUMS, handle)
    else:  # USEB's own: queries live in the corpus and are removed from the pool at load time
        corpus = {f: {**d["corpus"], **d["queries"]} for f, d in CQA_FORUMS.items()}
        split = {f: d["relevant_docs"] for f, d in CQA_FORUMS.items()}
        (folder / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
        (folder / "retrieval_split.json").write_text(json.dumps({"valid": split, "test": split}), encoding="utf-8")
    return folder


def write_askubuntu(root: Path) -> Path:
    folder = root / "useb" / "data-eval" / "askubuntu"
    folder.mkdir(parents=True, exist_ok=True)
    pool = {
        "1": "the dog runs",
        "2": "a dog runs",
        "3": "the cat sits",
        "4": "a car drives",
        "5": "the dog",
        "6": "music plays",
        "7": "the girl reads",
        "8": "a bird flies",
    }
    (folder / "text_tokenized.txt").write_text(
        "".join(f"{k}\t{v}\tbody of {k}\n" for k, v in pool.items()), encoding="utf-8"
    )
    rows = [
        "1\t2 4\t3 4 2 5 8\t9.0 8.0 7.0 6.0 5.0",  # candidates by BM25: 3, 4, 2, 5, 8
        "6\t\t7 1\t1.0 2.0",  # no similar question: skipped
        "7\t5\t5 3 8 2 1\t1.0 1.0 0.5 0.4 0.3",
    ]
    for split in ("dev", "test"):
        (folder / f"{split}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def write_scidocs(root: Path) -> Path:
    folder = root / "useb" / "data-eval" / "scidocs"
    folder.mkdir(parents=True, exist_ok=True)
    corpus = {
        "p": {"title": "the dog runs"},
        "a": {"title": "a dog runs"},
        "b": {"title": "the cat sits"},
        "c": {"title": "music plays"},
        "n": {"title": None},
        "q": {"title": ""},
    }
    qrels = {
        "cite": {"p": {"a": 1, "b": 0, "c": 1}, "q": {"a": 1}},
        "cocite": {"p": {"a": 0, "b": 1, "n": 1}},
        "coread": {"p": {"a": 1, "b": 0}},
        "coview": {"p": {"c": 1, "b": 0}},
    }
    (folder / "data.json").write_text(json.dumps({"corpus": corpus, "test": qrels, "valid": qrels}), encoding="utf-8")
    return folder


def write_evalrank(root: Path) -> Path:
    folder = root / "evalrank"
    folder.mkdir(parents=True, exist_ok=True)
    pairs = [("the dog runs", "a dog runs"), ("a dog runs", "the dog runs"), ("the cat sits", "a cat sits")]
    (folder / "pos_pair.txt").write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    background = ["the dog runs", "a dog runs", "the cat sits", "a cat sits", "music plays", "the car drives"]
    (folder / "background_sent.txt").write_text("\n".join(background) + "\n", encoding="utf-8")
    return folder


def write_sts(root: Path, pairs: int = 12, seed: int = 0) -> Path:
    """Every STS task of the ``sts`` family in its layout under ``root`` (STS12-16 as the hub copies'
    single ``all`` subset, STS-B dev and test, SICK test), ``pairs`` random scored pairs each."""
    rng = random.Random(seed)

    def rows() -> list[tuple[str, str, float]]:
        return [(_sentence(rng, 5), _sentence(rng, 5), round(rng.uniform(0, 5), 2)) for _ in range(pairs)]

    sts = root / "senteval" / "downstream" / "STS"
    for year in range(12, 17):
        folder = sts / f"STS{year}-en-test"
        folder.mkdir(parents=True)
        scored = rows()
        (folder / "STS.input.all.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in scored), encoding="utf-8")
        (folder / "STS.gs.all.txt").write_text("".join(f"{s}\n" for *_, s in scored), encoding="utf-8")
    (sts / "STSBenchmark").mkdir()
    for split in ("dev", "test"):
        (sts / "STSBenchmark" / f"sts-{split}.csv").write_text(
            "".join(f"g\tf\t2012\t{i:04d}\t{s}\t{a}\t{b}\n" for i, (a, b, s) in enumerate(rows())),
            encoding="utf-8",
        )
    (root / "senteval" / "downstream" / "SICK").mkdir()
    (root / "senteval" / "downstream" / "SICK" / "SICK_test_annotated.txt").write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\n"
        + "".join(f"{i}\t{a}\t{b}\t{s}\n" for i, (a, b, s) in enumerate(rows())),
        encoding="utf-8",
    )
    return root
