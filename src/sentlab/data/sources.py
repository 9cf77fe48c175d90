"""How ``sentlab data download`` fetches the data sets with a public source (the catalogue of every set,
where it lives and what it is, is :mod:`sentlab.data.catalog`).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sentlab.data.catalog import (  # noqa: F401 (the catalogue, re-exported for callers of this module)
    SIMCSE_HUB_REPO,
    SOURCES,
    DataSource,
    data_sets,
    missing_data_message,
    source_of,
)
from sentlab.data.hub import download_sts
from sentlab.data.sts import STS_TASKS
from sentlab.errors import DataError
from sentlab.paths import atomic_path, write_text_atomic


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


def _copy_atomic(source: Path, target: Path) -> None:
    with atomic_path(target) as temporary:
        shutil.copyfile(source, temporary)


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
        FETCHERS["wiki1m"](root, hub)
    sentences = wikipedia_sentences(wiki1m.read_text(encoding="utf-8").splitlines())
    target = root / "wikipedia/wiki_sentences.txt"
    write_text_atomic(target, "".join(s + "\n" for s in sentences))


def _fetch_sts(root: Path, hub: Hub) -> None:
    """Every STS task into a temporary folder first; each task's folder is moved into place only when
    all of them downloaded."""
    import tempfile

    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".sts-download-") as staging:
        download_sts(staging, load_dataset=hub.dataset)
        for task in STS_TASKS.values():
            target = root / task.folder
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(staging) / task.folder, target)


FETCHERS: dict[str, Callable[[Path, Hub], None]] = {
    "sts": _fetch_sts,
    "wiki1m": _fetch_simcse_file("wiki1m_for_simcse.txt", "wikipedia/wiki1m_for_simcse.txt"),
    "wikipedia": _fetch_wikipedia,
    "nli-for-simcse": _fetch_simcse_file("nli_for_simcse.csv", "nli/nli_for_simcse.csv"),
}


def download(name: str, root: Path, hub: Hub | None = None) -> DataSource:
    """Fetch the data set ``name`` into the data folder ``root``; a set without a public source, or an
    unknown name, is a one-line :class:`DataError`."""
    source = SOURCES.get(name)
    if source is None:
        raise DataError(f"unknown data set {name!r} (choose from {', '.join(SOURCES)})")
    if not source.fetchable:
        raise DataError(f"{name}: sentlab cannot download it; {source.how_to_get()}")
    try:
        FETCHERS[name](root, hub or Hub())
    except DataError:
        raise
    except Exception as err:  # network, auth, offline: one line for the user
        raise DataError(
            f"{name}: download failed ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
        ) from None
    return source
