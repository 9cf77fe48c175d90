"""SentEval transfer tasks (Conneau & Kiela 2018), declared as data, read as SentEval reads them.

Layout: SentEval's ``data/downstream`` (what its ``get_transfer_data.bash`` downloads)::

    MR/rt-polarity.{pos,neg}        CR/custrev.{pos,neg}        SUBJ/subj.{objective,subjective}
    MPQA/mpqa.{pos,neg}             SST/binary/sentiment-{train,dev,test}   (sentence \\t label)
    TREC/train_5500.label, TREC_10.label   (``LABEL:sub question``)
    MRPC/msr_paraphrase_{train,test}.txt   (header; quality \\t id \\t id \\t sentence \\t sentence)

SentEval's reading rules are part of the protocol and kept here:

* Encodings as SentEval opens the files: latin-1 for MR, CR, SUBJ, MPQA and TREC (one TREC line is
  not UTF-8), UTF-8 for SST and MRPC.
* Every sentence is split on whitespace and re-joined with single spaces.
* Empty lines of the single-sentence files are samples (CR has 4, MPQA 3): SentEval counts them in
  its n and its folds, so they stay, as empty sentences (their number is reported).
* Samples are sorted by (number of tokens, label) - SentEval sorts "to reduce padding" and then
  splits the sorted order into folds, so the sort decides the folds and is kept for exactness.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentlab.errors import DataError
from sentlab.paths import data_dir

TREC_CLASSES = {"ABBR": 0, "DESC": 1, "ENTY": 2, "HUM": 3, "LOC": 4, "NUM": 5}


@dataclass(frozen=True)
class TransferTask:
    """One transfer task: files, their encoding, and how the classifier is validated.

    ``protocol``: ``"cv"`` (nested k-fold over all samples; MR, CR, SUBJ, MPQA), ``"split"`` (model
    selection on the dev split; SST-2), ``"train-test"`` (k-fold selection on train, then test;
    TREC, MRPC).
    """

    name: str
    folder: str
    files: tuple[str, ...]
    protocol: str
    encoding: str = "utf-8"
    pairs: bool = False


TRANSFER_TASKS: dict[str, TransferTask] = {
    t.name: t
    for t in (
        TransferTask("MR", "senteval/downstream/MR", ("rt-polarity.pos", "rt-polarity.neg"), "cv", "latin-1"),
        TransferTask("CR", "senteval/downstream/CR", ("custrev.pos", "custrev.neg"), "cv", "latin-1"),
        # SentEval labels objective sentences 1, subjective 0 (it passes them as "pos", "neg").
        TransferTask("SUBJ", "senteval/downstream/SUBJ", ("subj.objective", "subj.subjective"), "cv", "latin-1"),
        TransferTask("MPQA", "senteval/downstream/MPQA", ("mpqa.pos", "mpqa.neg"), "cv", "latin-1"),
        TransferTask(
            "SST2", "senteval/downstream/SST/binary", ("sentiment-train", "sentiment-dev", "sentiment-test"), "split"
        ),
        TransferTask(
            "TREC", "senteval/downstream/TREC", ("train_5500.label", "TREC_10.label"), "train-test", "latin-1"
        ),
        TransferTask(
            "MRPC",
            "senteval/downstream/MRPC",
            ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"),
            "train-test",
            pairs=True,
        ),
    )
}


@dataclass
class LabelledSplit:
    """Sentences (or sentence pairs) with integer labels, in SentEval's sorted order."""

    sentences: list[str]
    labels: np.ndarray
    sentences2: list[str] | None = None  # the second sentence of each pair (MRPC)

    def __len__(self) -> int:
        return len(self.labels)


@dataclass
class TransferData:
    """A task's splits: ``{"all": ...}`` for cross-validation, else train / (dev) / test."""

    task: TransferTask
    splits: dict[str, LabelledSplit] = field(default_factory=dict)
    n_empty: int = 0  # empty sentences kept as samples (SentEval keeps them)


def tokens(line: str) -> str:
    return " ".join(line.split())


def task_files(task: TransferTask, root: str | Path | None = None) -> list[Path]:
    folder = data_dir(root) / task.folder
    return [folder / name for name in task.files]


def missing_files(task: TransferTask, root: str | Path | None = None) -> list[Path]:
    return [p for p in task_files(task, root) if not p.is_file()]


def _lines(path: Path, encoding: str, splitlines: bool = False) -> list[str]:
    """Lines as SentEval reads them: ``str.splitlines`` for MR / CR / SUBJ / MPQA (``f.read().splitlines()``,
    which also breaks at characters such as U+0085), else the file's own lines (``for line in f``)."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        text = path.read_bytes().decode(encoding)
    except UnicodeDecodeError as err:
        line_no = path.read_bytes()[: err.start].count(b"\n") + 1
        raise DataError(f"{path}:{line_no}: line is not valid {encoding}") from None
    if splitlines:
        return text.splitlines()
    return [line.rstrip("\r\n") for line in io.StringIO(text, newline=None)]


def _sorted(sentences: list[str], labels: list[int], sentences2: list[str] | None = None) -> LabelledSplit:
    """SentEval's order: by (tokens of sentence 1[, tokens of sentence 2], label), stable."""
    if sentences2 is None:
        order = sorted(range(len(labels)), key=lambda i: (len(sentences[i].split()), labels[i]))
        return LabelledSplit([sentences[i] for i in order], np.asarray([labels[i] for i in order]))
    order = sorted(range(len(labels)), key=lambda i: (len(sentences[i].split()), len(sentences2[i].split()), labels[i]))
    return LabelledSplit(
        [sentences[i] for i in order], np.asarray([labels[i] for i in order]), [sentences2[i] for i in order]
    )


def _binary(task: TransferTask, files: list[Path]) -> TransferData:
    positive = [tokens(line) for line in _lines(files[0], task.encoding, splitlines=True)]
    negative = [tokens(line) for line in _lines(files[1], task.encoding, splitlines=True)]
    sentences = positive + negative
    if not positive or not negative:
        raise DataError(f"{files[0] if not positive else files[1]}: file has no sentences")
    labels = [1] * len(positive) + [0] * len(negative)
    return TransferData(task, {"all": _sorted(sentences, labels)}, n_empty=sum(1 for s in sentences if not s))


def _sst_row(line: str) -> tuple | None:
    parts = line.strip().split("\t")
    return (tokens(parts[0]), int(parts[1])) if len(parts) == 2 and parts[1] in ("0", "1") else None


def _trec_row(line: str) -> tuple | None:
    target, _, rest = line.strip().partition(":")
    return (tokens(rest.split(" ", 1)[1]), TREC_CLASSES[target]) if target in TREC_CLASSES and " " in rest else None


def _mrpc_row(line: str) -> tuple | None:
    parts = line.strip().split("\t")
    return (tokens(parts[3]), tokens(parts[4]), int(parts[0])) if len(parts) >= 5 and parts[0] in ("0", "1") else None


ROW_FORMATS: dict[str, tuple[Callable[[str], tuple | None], str, int]] = {  # parser, expected form, header lines
    "SST2": (_sst_row, "'sentence<TAB>0|1'", 0),
    "TREC": (_trec_row, f"'LABEL:sub question' with LABEL in {', '.join(TREC_CLASSES)}", 0),
    "MRPC": (_mrpc_row, "'quality<TAB>id<TAB>id<TAB>sentence<TAB>sentence'", 1),
}


def _splits(task: TransferTask, files: list[Path]) -> TransferData:
    """Tasks with given splits: rows of (sentence[, sentence 2], label), one file per split."""
    parse, expected, header = ROW_FORMATS[task.name]
    data = TransferData(task)
    names = ("train", "dev", "test") if len(files) == 3 else ("train", "test")
    for split, path in zip(names, files):
        rows = []
        for line_no, line in enumerate(_lines(path, task.encoding)[header:], start=header + 1):
            row = parse(line)
            if row is None:
                raise DataError(f"{path}:{line_no}: expected {expected}")
            rows.append(row)
        if not rows:
            raise DataError(f"{path}: file has no rows")
        columns = [list(c) for c in zip(*rows)]
        data.splits[split] = _sorted(columns[0], columns[-1], columns[1] if task.pairs else None)
    return data


def load_transfer_task(name: str, root: str | Path | None = None) -> TransferData:
    """Read one task (``MR``, ``CR``, ``SUBJ``, ``MPQA``, ``SST2``, ``TREC`` or ``MRPC``)."""
    if name not in TRANSFER_TASKS:
        raise DataError(f"unknown transfer task {name!r} (available: {', '.join(TRANSFER_TASKS)})")
    task = TRANSFER_TASKS[name]
    files = task_files(task, root)
    return _binary(task, files) if task.protocol == "cv" else _splits(task, files)
