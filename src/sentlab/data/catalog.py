"""The catalogue of the data sentlab's presets and evaluations read: where each set lives in the data
folder, what it is and where it comes from, and the one-line message for a missing file
(:func:`missing_data_message`). It imports nothing of sentlab's data readers, so every reader can
name the set a missing file belongs to; fetching is :mod:`sentlab.data.sources`, above them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SIMCSE_HUB_REPO = "princeton-nlp/datasets-for-simcse"  # SimCSE's data/download_*.sh fetch these files


@dataclass(frozen=True)
class DataSource:
    """One data set: ``paths`` under the data folder, what it is, where it comes from, and whether
    ``sentlab data download`` can fetch it (:data:`sentlab.data.sources.FETCHERS`)."""

    name: str
    paths: tuple[str, ...]
    description: str
    origin: str
    fetchable: bool = False

    def present(self, root: Path) -> bool:
        return all((root / path).exists() for path in self.paths)

    def how_to_get(self) -> str:
        if self.fetchable:
            return f"`sentlab data download {self.name}`"
        return f"get it from {self.origin}"


SOURCES: dict[str, DataSource] = {
    s.name: s
    for s in (
        DataSource(
            "sts",
            ("senteval/downstream/STS", "senteval/downstream/SICK"),
            "STS12-16, STS-B and SICK-R in SentEval's layout (the STS evaluation and STS-B dev selection)",
            "the datasets hub (mteb/sts12-sts ... mteb/sickr-sts); STS12-16 without subset labels",
            True,
        ),
        DataSource(
            "wiki1m",
            ("wikipedia/wiki1m_for_simcse.txt",),
            "SimCSE's one million Wikipedia sentences, one a line",
            f"hf://datasets/{SIMCSE_HUB_REPO}/wiki1m_for_simcse.txt",
            True,
        ),
        DataSource(
            "wikipedia",
            ("wikipedia/wiki_sentences.txt",),
            "English Wikipedia sentences, one a line, 5-60 words, deduplicated and shuffled (CPU presets)",
            "made from wiki1m by `sentlab data download wikipedia`",
            True,
        ),
        DataSource(
            "nli-for-simcse",
            ("nli/nli_for_simcse.csv",),
            "SimCSE's NLI triplets (sent0, sent1, hard_neg) from SNLI + MNLI",
            f"hf://datasets/{SIMCSE_HUB_REPO}/nli_for_simcse.csv",
            True,
        ),
        DataSource(
            "snli",
            ("senteval/downstream/SNLI",),
            "SNLI in SentEval's layout (s1.*, s2.*, labels.*)",
            "SentEval's data/downstream/get_transfer_data.bash",
        ),
        DataSource(
            "transfer",
            (
                "senteval/downstream/MR",
                "senteval/downstream/CR",
                "senteval/downstream/SUBJ",
                "senteval/downstream/MPQA",
                "senteval/downstream/SST",
                "senteval/downstream/TREC",
                "senteval/downstream/MRPC",
            ),
            "SentEval's seven transfer tasks",
            "SentEval's data/downstream/get_transfer_data.bash",
        ),
        DataSource(
            "useb",
            ("useb/data-eval",),
            "USEB's TwitterPara and CQADupStack (titles)",
            "USEB's download script (github.com/UKPLab/useb)",
        ),
        DataSource(
            "evalrank",
            ("evalrank",),
            "EvalRank's background sentences and positive pairs",
            "github.com/BinWang28/EvalRank",
        ),
        DataSource(
            "qqp",
            ("relations/qqp",),
            "Quora Question Pairs dev / test (label, q1, q2, id)",
            "the GLUE QQP release (non-commercial terms)",
        ),
        DataSource(
            "flickr8k",
            ("relations/flickr8k",),
            "Flickr8k captions and image splits",
            "the Flickr8k release (research-use terms)",
        ),
        DataSource(
            "rse-train",
            ("rse",),
            "RSE's training relations: MNLI, QQP train, QNLI, ParaNMT, Flickr30k captions",
            "the RSE repository's data scripts (github.com/BinWang28/RSE)",
        ),
        DataSource(
            "in-domain",
            ("in-domain/sentences.txt",),
            "your own unlabelled in-domain sentences, one a line (TSDAE, CT, MLM, BERT-flow presets)",
            "your own text (one sentence a line at that path, or --set data.train=YOUR_FILE.txt)",
        ),
    )
}


def source_of(relative: str | Path) -> DataSource | None:
    """The data set a path under the data folder belongs to (the longest matching prefix)."""
    parts = Path(relative).parts
    best, length = None, 0
    for source in SOURCES.values():
        for path in source.paths:
            prefix = Path(path).parts
            if parts[: len(prefix)] == prefix and len(prefix) > length:
                best, length = source, len(prefix)
    return best


def data_sets(paths: Iterable[Path], root: Path, reads_sts: bool) -> tuple[str, ...]:
    """The data sets behind ``paths`` (under the data folder ``root``), in order, with ``sts`` last when
    the config selects on STS-B dev or ends with the STS evaluation (``reads_sts``)."""
    names = []
    for path in paths:
        source = source_of(path.relative_to(root))
        names.append(source.name if source else str(path.relative_to(root)))
    return tuple(dict.fromkeys([*names, *(["sts"] if reads_sts else [])]))


def missing_data_message(path: Path, root: Path) -> str:
    """One line: what is missing, which set it belongs to, and how to get it."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return f"{path}: file not found"
    source = source_of(relative)
    where = f"--data-dir / $SENTLAB_DATA is {root}"
    if source is None:
        return f"{path}: not found in the data folder ({where})"
    return (
        f"{path}: not found; it is part of {source.name!r} ({source.description}): {source.how_to_get()}, "
        f"or point --data-dir / $SENTLAB_DATA at a folder that has it (now {root})"
    )
