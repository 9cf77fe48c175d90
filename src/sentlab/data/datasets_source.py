"""Training data as practitioners hold it: a ``datasets`` folder (``save_to_disk``), an Arrow file, or a
hub dataset by id, config and split, read through the ``datasets`` library itself, memory-mapped,
never copied into Python lists.

``data.train`` names the source:

- a folder that ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk`` wrote (``data.split`` picks a
  split of a ``DatasetDict``, default ``train``);
- a ``.arrow`` file (``Dataset.from_file``);
- a ``.parquet`` file, the format hub datasets are stored in (``datasets``' parquet builder converts
  it once into sentlab's cache, keyed by the file's bytes; the Arrow files are memory-mapped);
- ``hf:OWNER/NAME`` for a hub dataset (``datasets.load_dataset(OWNER/NAME, data.subset,
  split=data.split)``; offline, from the cache, when ``HF_HUB_OFFLINE`` is set).

A source that does not open, a split or subset it does not have, or a column it lacks is one line.
Its identity in a run's fingerprint is the dataset's own ``_fingerprint`` (what ``datasets`` hashes
its transforms by), with the rows ``data.limit`` keeps.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from pathlib import Path

from datasets import Dataset, DatasetDict

from sentlab.errors import DataError

HUB_PREFIX = "hf:"
DEFAULT_SPLIT = "train"


def is_datasets_source(train: str | Path) -> bool:
    """Whether ``data.train`` names a ``datasets`` source rather than a text or table file."""
    text = str(train)
    if text.startswith(HUB_PREFIX):
        return True
    path = Path(text)
    if path.suffix.lower() in (".arrow", ".parquet"):
        return True
    return path.is_dir() and any((path / name).is_file() for name in ("state.json", "dataset_dict.json"))


def open_source(train: str | Path, split: str | None = None, subset: str | None = None) -> Dataset:
    """The table ``train`` names (:func:`is_datasets_source`), one split of it."""
    text = str(train)
    if text.startswith(HUB_PREFIX):
        return _hub(text.removeprefix(HUB_PREFIX), split or DEFAULT_SPLIT, subset)
    path = Path(text)
    if path.suffix.lower() == ".arrow":
        if not path.is_file():
            raise DataError(f"{path}: file not found")
        if split is not None or subset is not None:
            raise DataError(f"{path}: an Arrow file is one table; data.split and data.subset are not read")
        try:
            return Dataset.from_file(str(path))
        except Exception as err:  # noqa: BLE001 - pyarrow's errors vary; one line says which file
            raise DataError(f"{path}: not an Arrow table datasets can read ({type(err).__name__}: {err})") from None
    if path.suffix.lower() == ".parquet":
        return _parquet(path, split, subset)
    if subset is not None:
        raise DataError(f"{path}: a saved datasets folder has no subsets; data.subset is read for hf: sources")
    from datasets import load_from_disk

    try:
        found = load_from_disk(str(path))
    except Exception as err:  # noqa: BLE001
        raise DataError(f"{path}: not a folder datasets' save_to_disk wrote ({type(err).__name__}: {err})") from None
    if isinstance(found, DatasetDict):
        return _split(found, split or DEFAULT_SPLIT, str(path))
    if split is not None and split != DEFAULT_SPLIT:
        raise DataError(f"{path}: one Dataset, not a DatasetDict: it has no split {split!r}")
    return found


PARQUET_FORMAT = 1


def _parquet(path: Path, split: str | None, subset: str | None) -> Dataset:
    """A Parquet file as one memory-mapped table: converted once by ``datasets``' parquet builder into
    sentlab's cache (its ``text`` part, so ``sentlab cache`` counts and clears it), keyed by the file's
    bytes (an edit that keeps its size and time is converted again, never served stale)."""
    import tempfile

    import datasets

    from sentlab.cache import cache_root, evict_cache, file_sha256
    from sentlab.cache_folder import cached_folder

    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if split is not None or subset is not None:
        raise DataError(f"{path}: a Parquet file is one table; data.split and data.subset are not read")
    digest = file_sha256(path)
    folder = cache_root() / "text" / f"parquet-{digest[:32]}"

    def build(partial: Path) -> dict:
        with tempfile.TemporaryDirectory() as scratch:  # datasets' own converted copy, dropped once saved
            try:
                table = datasets.load_dataset(
                    "parquet", data_files=str(path.resolve()), split="train", cache_dir=scratch
                )
            except Exception as err:  # noqa: BLE001 - pyarrow's errors vary; one line says which file
                raise DataError(
                    f"{path}: not a Parquet table datasets can read ({type(err).__name__}: {err})"
                ) from None
            table.save_to_disk(str(partial))
        return {"format": PARQUET_FORMAT, "sha256": digest, "rows": len(table)}

    root = cache_root()
    cached_folder(
        folder,
        {"format": PARQUET_FORMAT, "sha256": digest},
        build,
        after_build=lambda built: evict_cache(root, keep=[built]),
    )
    return datasets.load_from_disk(str(folder))


def _split(found: DatasetDict, split: str, where: str) -> Dataset:
    if split not in found:
        close = difflib.get_close_matches(split, list(found), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise DataError(f"{where}: no split {split!r}{hint}; it has {', '.join(found)}")
    return found[split]


def _hub(name: str, split: str, subset: str | None) -> Dataset:
    import datasets

    if not name:
        raise DataError("data.train: hf: needs a dataset id, e.g. hf:sentence-transformers/all-nli")
    try:
        found = datasets.load_dataset(name, subset, split=split)
    except ValueError as err:  # an unknown split or subset: datasets names the ones there are
        raise DataError(f"{HUB_PREFIX}{name}: {str(err).splitlines()[0]}") from None
    except Exception as err:  # noqa: BLE001 - no such dataset, offline without a cached copy ...
        raise DataError(
            f"{HUB_PREFIX}{name}: cannot load it ({type(err).__name__}: {str(err).splitlines()[0]})"
        ) from None
    if isinstance(found, DatasetDict):  # split=None is not passed, but a loader may still give a dict
        found = _split(found, split, f"{HUB_PREFIX}{name}")
    return found


def source_columns(
    table: Dataset, columns: Sequence[str], names: Sequence[str] | None, limit: int | None, where: str
) -> Dataset:
    """``columns`` of ``table`` (its first ``limit`` rows), renamed to ``names``: the same table
    :func:`~sentlab.data.tables.column_table` gives for a file, without a copy (a selection and a
    rename of the memory-mapped table). A column the table lacks is one line with the closest names."""
    for column in columns:
        if column not in table.column_names:
            close = difflib.get_close_matches(column, table.column_names, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise DataError(f"{where}: missing column {column!r}{hint}; it has {', '.join(table.column_names)}")
    if len(set(columns)) != len(columns):
        raise DataError(f"{where}: a column is named twice in data.columns ({', '.join(columns)})")
    if limit is not None:
        table = table.select(range(min(limit, len(table))))
    table = table.select_columns(list(columns))
    return table.rename_columns(dict(zip(columns, names))) if names else table


def source_identity(table: Dataset, limit: int | None = None) -> str:
    """What a run's fingerprint holds for a ``datasets`` source: the table's own fingerprint, the
    sha256 of the Arrow files it reads (a saved folder keeps its fingerprint in ``state.json``, which
    an edit of the data in place leaves as it was), and the rows ``limit`` keeps."""
    from sentlab.cache import file_sha256

    files = sorted(entry["filename"] for entry in table.cache_files)
    digest = hashlib.sha256("".join(file_sha256(Path(name)) for name in files).encode()).hexdigest()
    return f"datasets:{table._fingerprint}:{digest}:{limit}"
