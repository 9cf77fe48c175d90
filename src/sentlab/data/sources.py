"""The data sentlab's presets and evaluations read: where each set lives in the data folder, where it
comes from, and how ``sentlab data download`` fetches the ones with a public source.

A preset names its files as ``$SENTLAB_DATA/<path>``; the data folder is ``--data-dir``, else
``$SENTLAB_DATA``, else ``../shared/data`` (:func:`sentlab.paths.data_dir`). When a file a preset names is
absent, :func:`missing_data_message` says which set it belongs to and how to get it.

Downloads go through :class:`Hub`, a thin wrapper over ``huggingface_hub.hf_hub_download`` and
``datasets.load_dataset``; the tests run its file downloads against a local HTTP stand-in of the hub. Every file is written to a temporary name and
renamed into place, so an interrupted download never leaves a file that reads as complete.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentlab.errors import DataError

SIMCSE_HUB_REPO = "princeton-nlp/datasets-for-simcse"  # SimCSE's data/download_*.sh fetch these files


class Hub:
    """Access to the public hub: one file of a dataset repository, or a split of a dataset.
    ``endpoint`` (default: ``$HF_ENDPOINT``, else huggingface.co) and ``cache_dir`` go to
    ``hf_hub_download``."""

    def __init__(self, endpoint: str | None = None, cache_dir: str | Path | None = None):
        self.endpoint, self.cache_dir = endpoint, cache_dir

    def file(self, repo_id: str, filename: str) -> Path:
        from huggingface_hub import hf_hub_download

        return Path(
            hf_hub_download(
                repo_id=repo_id,
                filename=filename,
                repo_type="dataset",
                endpoint=self.endpoint,
                cache_dir=self.cache_dir,
            )
        )

    def dataset(self, name: str, split: str) -> Any:
        from datasets import load_dataset

        return load_dataset(name, split=split)


@dataclass(frozen=True)
class DataSource:
    """One data set: ``paths`` under the data folder, what it is, where it comes from, and (when it has
    a public source sentlab can fetch) ``fetch(root, hub)``, which writes those paths."""

    name: str
    paths: tuple[str, ...]
    description: str
    origin: str
    fetch: Callable[[Path, Hub], None] | None = field(default=None, compare=False)

    def present(self, root: Path) -> bool:
        return all((root / path).exists() for path in self.paths)

    def how_to_get(self) -> str:
        if self.fetch is not None:
            return f"`sentlab data download {self.name}`"
        return f"get it from {self.origin}"


def _copy_atomic(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".part")
    shutil.copyfile(source, temporary)
    os.replace(temporary, target)


def _fetch_simcse_file(filename: str, relative: str) -> Callable[[Path, Hub], None]:
    def fetch(root: Path, hub: Hub) -> None:
        _copy_atomic(hub.file(SIMCSE_HUB_REPO, filename), root / relative)

    return fetch


def wikipedia_sentences(lines: list[str], seed: int = 0, min_words: int = 5, max_words: int = 60) -> list[str]:
    """The shared Wikipedia text's recipe applied to SimCSE's one million sentences: deduplicated,
    5-60 words each, shuffled with a fixed seed (the shared copy was cut from a WikiExtractor dump, so
    the two files hold different sentences)."""
    kept = [s for s in dict.fromkeys(line.strip() for line in lines) if min_words <= len(s.split()) <= max_words]
    random.Random(seed).shuffle(kept)
    return kept


def _fetch_wikipedia(root: Path, hub: Hub) -> None:
    wiki1m = root / "wikipedia/wiki1m_for_simcse.txt"
    if not wiki1m.is_file():
        SOURCES["wiki1m"].fetch(root, hub)
    sentences = wikipedia_sentences(wiki1m.read_text(encoding="utf-8").splitlines())
    target = root / "wikipedia/wiki_sentences.txt"
    temporary = target.with_name(target.name + ".part")
    temporary.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    os.replace(temporary, target)


def _fetch_sts(root: Path, hub: Hub) -> None:
    """Every STS task into a temporary folder first; each task's folder is moved into place only when
    all of them downloaded."""
    import tempfile

    from sentlab.data.hub import download_sts
    from sentlab.data.sts import STS_TASKS

    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".sts-download-") as staging:
        download_sts(staging, load_dataset=hub.dataset)
        for task in STS_TASKS.values():
            target = root / task.folder
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(staging) / task.folder, target)


SOURCES: dict[str, DataSource] = {
    s.name: s
    for s in (
        DataSource(
            "sts",
            ("senteval/downstream/STS", "senteval/downstream/SICK"),
            "STS12-16, STS-B and SICK-R in SentEval's layout (the STS evaluation and STS-B dev selection)",
            "the datasets hub (mteb/sts12-sts ... mteb/sickr-sts); STS12-16 without subset labels",
            _fetch_sts,
        ),
        DataSource(
            "wiki1m",
            ("wikipedia/wiki1m_for_simcse.txt",),
            "SimCSE's one million Wikipedia sentences, one a line",
            f"hf://datasets/{SIMCSE_HUB_REPO}/wiki1m_for_simcse.txt",
            _fetch_simcse_file("wiki1m_for_simcse.txt", "wikipedia/wiki1m_for_simcse.txt"),
        ),
        DataSource(
            "wikipedia",
            ("wikipedia/wiki_sentences.txt",),
            "English Wikipedia sentences, one a line, 5-60 words, deduplicated and shuffled (CPU presets)",
            "made from wiki1m by `sentlab data download wikipedia`",
            _fetch_wikipedia,
        ),
        DataSource(
            "nli-for-simcse",
            ("nli/nli_for_simcse.csv",),
            "SimCSE's NLI triplets (sent0, sent1, hard_neg) from SNLI + MNLI",
            f"hf://datasets/{SIMCSE_HUB_REPO}/nli_for_simcse.csv",
            _fetch_simcse_file("nli_for_simcse.csv", "nli/nli_for_simcse.csv"),
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


def download(name: str, root: Path, hub: Hub | None = None) -> DataSource:
    """Fetch the data set ``name`` into the data folder ``root``; a set without a public source, or an
    unknown name, is a one-line :class:`DataError`."""
    source = SOURCES.get(name)
    if source is None:
        raise DataError(f"unknown data set {name!r} (choose from {', '.join(SOURCES)})")
    if source.fetch is None:
        raise DataError(f"{name}: sentlab cannot download it; {source.how_to_get()}")
    try:
        source.fetch(root, hub or Hub())
    except DataError:
        raise
    except Exception as err:  # network, auth, offline: one line for the user
        raise DataError(
            f"{name}: download failed ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
        ) from None
    return source
