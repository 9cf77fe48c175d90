"""STS data: the seven tasks of the SimCSE / SentEval protocol, declared as data.

Layouts (SentEval's ``data/downstream``):

* STS12-16: ``STS/STS1X-en-test/STS.input.<subset>.txt`` (two tab-separated sentences a line) with
  ``STS.gs.<subset>.txt`` (gold score a line). Pairs whose gold line is empty are skipped (STS15/16).
* STS-B: ``STS/STSBenchmark/sts-{train,dev,test}.csv``, tab-separated; score in column 5,
  sentences in columns 6 and 7.
* SICK-R: ``SICK/SICK_{train,trial,test_annotated}.txt``, tab-separated with a header; relatedness
  score in column 4.

As SentEval does, each sentence is split on whitespace and re-joined with single spaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentlab.data.catalog import missing_data_message
from sentlab.data.readers import read_lines
from sentlab.errors import DataError
from sentlab.paths import data_dir


@dataclass(frozen=True)
class STSTask:
    """One STS evaluation task: where its files are and how to read them."""

    name: str
    layout: str  # "senteval-sts" | "stsb" | "sick"
    folder: str  # relative to the data folder
    subsets: tuple[str, ...] = ()
    hub_name: str | None = None  # public source for users who are online (see sentlab.data.hub)


STS_TASKS: dict[str, STSTask] = {
    t.name: t
    for t in (
        STSTask(
            "STS12",
            "senteval-sts",
            "senteval/downstream/STS/STS12-en-test",
            ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
            "mteb/sts12-sts",
        ),
        STSTask(
            "STS13",
            "senteval-sts",
            "senteval/downstream/STS/STS13-en-test",
            ("FNWN", "headlines", "OnWN"),
            "mteb/sts13-sts",
        ),
        STSTask(
            "STS14",
            "senteval-sts",
            "senteval/downstream/STS/STS14-en-test",
            ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
            "mteb/sts14-sts",
        ),
        STSTask(
            "STS15",
            "senteval-sts",
            "senteval/downstream/STS/STS15-en-test",
            ("answers-forums", "answers-students", "belief", "headlines", "images"),
            "mteb/sts15-sts",
        ),
        STSTask(
            "STS16",
            "senteval-sts",
            "senteval/downstream/STS/STS16-en-test",
            ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
            "mteb/sts16-sts",
        ),
        STSTask("STS-B", "stsb", "senteval/downstream/STS/STSBenchmark", hub_name="mteb/stsbenchmark-sts"),
        STSTask("SICK-R", "sick", "senteval/downstream/SICK", hub_name="mteb/sickr-sts"),
    )
}


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity scores (0-5), grouped by subset name."""

    sentences1: list[str] = field(default_factory=list)
    sentences2: list[str] = field(default_factory=list)
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    subset_ids: list[str] = field(default_factory=list)  # subset name of each pair

    def __len__(self) -> int:
        return len(self.scores)

    def subset(self, name: str) -> STSPairs:
        idx = [i for i, s in enumerate(self.subset_ids) if s == name]
        return STSPairs(
            [self.sentences1[i] for i in idx], [self.sentences2[i] for i in idx], self.scores[idx], [name] * len(idx)
        )

    @property
    def subset_names(self) -> list[str]:
        return list(dict.fromkeys(self.subset_ids))


def normalize(sentence: str) -> str:
    """SentEval's tokenisation for STS: split on whitespace, re-join with single spaces."""
    return " ".join(sentence.split())


def _parse_score(text: str, path: Path, line_no: int) -> float:
    try:
        score = float(text)
    except ValueError:
        raise DataError(f"{path}:{line_no}: gold score {text!r} is not a number") from None
    if not np.isfinite(score):
        raise DataError(f"{path}:{line_no}: gold score {text!r} is not finite")
    return score


def _sentence(text: str, path: Path, line_no: int) -> str:
    sentence = normalize(text)
    if not sentence:
        raise DataError(f"{path}:{line_no}: empty sentence")
    return sentence


def read_senteval_sts_subset(folder: Path, subset: str) -> STSPairs:
    """One STS12-16 subset; pairs with an empty gold line are skipped."""
    input_path = folder / f"STS.input.{subset}.txt"
    gold_path = folder / f"STS.gs.{subset}.txt"
    inputs, golds = read_lines(input_path), read_lines(gold_path)
    if len(inputs) != len(golds):
        raise DataError(f"{gold_path}: {len(golds)} gold lines for {len(inputs)} sentence pairs in {input_path.name}")
    pairs = STSPairs()
    scores = []
    for line_no, (pair_line, gold_line) in enumerate(zip(inputs, golds), start=1):
        if not gold_line.strip():
            continue
        fields = pair_line.split("\t")
        if len(fields) != 2:
            raise DataError(f"{input_path}:{line_no}: expected 2 tab-separated sentences, found {len(fields)} fields")
        pairs.sentences1.append(_sentence(fields[0], input_path, line_no))
        pairs.sentences2.append(_sentence(fields[1], input_path, line_no))
        scores.append(_parse_score(gold_line.strip(), gold_path, line_no))
        pairs.subset_ids.append(subset)
    pairs.scores = np.asarray(scores, dtype=np.float64)
    return pairs


def read_stsb(folder: Path, split: str = "test") -> STSPairs:
    """STS-B split (``train``, ``dev`` or ``test``) in SentEval's tab-separated layout."""
    path = folder / f"sts-{split}.csv"
    pairs = STSPairs()
    scores = []
    for line_no, line in enumerate(read_lines(path), start=1):
        fields = line.strip().split("\t")
        if len(fields) < 7:
            raise DataError(f"{path}:{line_no}: expected at least 7 tab-separated fields, found {len(fields)}")
        scores.append(_parse_score(fields[4], path, line_no))
        pairs.sentences1.append(_sentence(fields[5], path, line_no))
        pairs.sentences2.append(_sentence(fields[6], path, line_no))
        pairs.subset_ids.append(split)
    if not scores:
        raise DataError(f"{path}: no sentence pairs")
    pairs.scores = np.asarray(scores, dtype=np.float64)
    return pairs


SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def read_sick(folder: Path, split: str = "test") -> STSPairs:
    """SICK relatedness split (``train``, ``dev`` = trial, ``test``)."""
    path = folder / SICK_FILES[split]
    lines = read_lines(path)
    if not lines:
        raise DataError(f"{path}: empty file")
    pairs = STSPairs()
    scores = []
    for line_no, line in enumerate(lines[1:], start=2):
        fields = line.strip().split("\t")
        if len(fields) < 4:
            raise DataError(f"{path}:{line_no}: expected at least 4 tab-separated fields, found {len(fields)}")
        pairs.sentences1.append(_sentence(fields[1], path, line_no))
        pairs.sentences2.append(_sentence(fields[2], path, line_no))
        scores.append(_parse_score(fields[3], path, line_no))
        pairs.subset_ids.append(split)
    pairs.scores = np.asarray(scores, dtype=np.float64)
    return pairs


def load_sts_task(task: STSTask | str, root: str | Path | None = None, split: str = "test") -> STSPairs:
    """All scored pairs of one task (STS12-16: every subset, in declaration order)."""
    task = STS_TASKS[task] if isinstance(task, str) else task
    folder = data_dir(root) / task.folder
    if not folder.is_dir():
        raise DataError(f"{task.name}: " + missing_data_message(folder, data_dir(root)))
    if task.layout == "senteval-sts":
        merged = STSPairs()
        subsets = task.subsets
        if not (folder / f"STS.input.{subsets[0]}.txt").is_file() and (folder / "STS.input.all.txt").is_file():
            subsets = ("all",)  # written by `sentlab data download`: the hub copies have no subsets
        parts = [read_senteval_sts_subset(folder, subset) for subset in subsets]
        for part in parts:
            merged.sentences1 += part.sentences1
            merged.sentences2 += part.sentences2
            merged.subset_ids += part.subset_ids
        merged.scores = np.concatenate([p.scores for p in parts])
        return merged
    if task.layout == "stsb":
        return read_stsb(folder, split)
    if task.layout == "sick":
        return read_sick(folder, split)
    raise ValueError(f"unknown STS layout {task.layout!r}")
