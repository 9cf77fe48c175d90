"""Public sources for users who are online: the ``datasets`` hub copies of the STS sets.

Nothing here runs in sentlab's offline tests except through a fake ``load_dataset``; the real one
needs the network. Hub copies have no subset labels, so STS12-16 loaded from the hub report the
pooled "all" score only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sentlab.data.sts import SICK_FILES, STS_TASKS, STSPairs, normalize
from sentlab.errors import DataError

HUB_SPLITS = {"test": "test", "dev": "validation", "train": "train"}


def load_sts_from_hub(task_name: str, split: str = "test", load_dataset: Callable[..., Any] | None = None) -> STSPairs:
    """Read ``task_name`` (e.g. ``"STS12"``) from its hub copy (columns sentence1, sentence2, score)."""
    task = STS_TASKS[task_name]
    if task.hub_name is None:
        raise DataError(f"{task_name}: no public hub source is known")
    if load_dataset is None:
        from datasets import load_dataset
    try:
        rows = load_dataset(task.hub_name, split=HUB_SPLITS[split])
    except Exception as err:  # network, auth, or offline: one line for the user
        raise DataError(f"{task.hub_name}: could not load from the hub ({type(err).__name__}: {err})") from None
    pairs = STSPairs()
    pairs.sentences1 = [normalize(s) for s in rows["sentence1"]]
    pairs.sentences2 = [normalize(s) for s in rows["sentence2"]]
    pairs.scores = np.asarray(rows["score"], dtype=np.float64)
    pairs.subset_ids = [split] * len(pairs.scores)
    return pairs


def download_sts(target: str, load_dataset: Callable[..., Any] | None = None) -> dict[str, int]:
    """Write every STS task from the hub into ``target`` in the SentEval layout sentlab reads.

    STS12-16 go into one ``STS.input.all.txt`` / ``STS.gs.all.txt`` per year (no subsets on the hub).
    Returns the number of pairs written per task.
    """
    root = Path(target)
    written: dict[str, int] = {}
    for name, task in STS_TASKS.items():
        folder = root / task.folder
        folder.mkdir(parents=True, exist_ok=True)
        splits = ["test"] if task.layout == "senteval-sts" else ["train", "dev", "test"]
        for split in splits:
            pairs = load_sts_from_hub(name, split, load_dataset=load_dataset)
            rows = list(zip(pairs.sentences1, pairs.sentences2, pairs.scores))
            if task.layout == "senteval-sts":
                (folder / "STS.input.all.txt").write_text("".join(f"{a}\t{b}\n" for a, b, _ in rows), "utf-8")
                (folder / "STS.gs.all.txt").write_text("".join(f"{s}\n" for _, _, s in rows), "utf-8")
            elif task.layout == "stsb":
                (folder / f"sts-{split}.csv").write_text(
                    "".join(f"hub\thub\thub\t{i:04d}\t{s}\t{a}\t{b}\n" for i, (a, b, s) in enumerate(rows)), "utf-8"
                )
            else:
                body = "".join(f"{i}\t{a}\t{b}\t{s}\tNA\n" for i, (a, b, s) in enumerate(rows))
                (folder / SICK_FILES[split]).write_text(
                    "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n" + body, "utf-8"
                )
            written[f"{name}/{split}"] = len(rows)
    return written
