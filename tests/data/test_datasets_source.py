"""Training data as datasets holds it: a save_to_disk folder (a DatasetDict's split), an .arrow file
and a hub dataset by id (here a local stand-in: datasets.load_dataset reads a folder of data files the
way it reads a hub repository's), read memory-mapped, fingerprinted by datasets' own fingerprint, and a
bad source, split, subset or column in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset, DatasetDict

from sentlab.data.datasets_source import is_datasets_source, open_source
from sentlab.errors import DataError
from sentlab.methods import validate_config
from sentlab.methods.supervised import Supervised
from sentlab.training import engine
from sentlab.training.run_folder import run_fingerprint

QUESTIONS = [f"what is thing {i}?" for i in range(12)]
ANSWERS = [f"thing {i} is a word" for i in range(12)]


@pytest.fixture()
def saved(tmp_path):
    """A DatasetDict (train, dev) saved with save_to_disk, and the same rows as an .arrow file."""
    rows = {"question": QUESTIONS, "answer": ANSWERS, "id": list(range(12))}
    folder = tmp_path / "qa"
    DatasetDict(
        {"train": Dataset.from_dict(rows), "dev": Dataset.from_dict({k: v[:4] for k, v in rows.items()})}
    ).save_to_disk(str(folder))
    return folder


def config(train, backbone, out, **data):
    return validate_config(
        {
            "method": "supervised",
            "model": {"name": str(backbone), "max_seq_length": 16},
            "data": {"train": str(train), "columns": {"anchor": "question", "positive": "answer"}, **data},
            "train": {"output_dir": str(out), "batch_size": 4, "max_steps": 2, "progress_bar": False},
            "eval": {"dev_task": "none", "final_tasks": []},
            "supervised": {"loss": "mnrl"},
        }
    )


def test_a_saved_datasets_folder_trains_by_role_from_the_split_it_names(saved, tiny_backbone, tmp_path):
    cfg = config(saved, tiny_backbone, tmp_path / "run")
    rows = Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    assert rows.column_names == ["anchor", "positive"] and rows["anchor"] == QUESTIONS  # the train split
    assert rows.cache_files, "read from the folder's Arrow files, memory-mapped, not copied into memory"
    dev = Supervised(
        config(saved, tiny_backbone, tmp_path / "run", split="dev", limit=3), engine.RunPaths(tmp_path / "run")
    ).train_dataset()
    assert dev["positive"] == ANSWERS[:3]
    paths = engine.train(cfg, evaluate=False)
    assert (paths.model / "modules.json").is_file()
    assert json.loads(paths.fingerprint.read_text())["train_sha256"].startswith("datasets:")


def test_an_arrow_file_and_a_hub_dataset_by_id_are_read_as_they_are(saved, tiny_backbone, tmp_path):
    arrow = next((saved / "train").glob("*.arrow"))
    assert is_datasets_source(arrow) and not is_datasets_source(tmp_path / "plain.txt")
    rows = Supervised(config(arrow, tiny_backbone, tmp_path / "run"), engine.RunPaths(tmp_path / "run")).train_dataset()
    assert rows["positive"] == ANSWERS
    hub = tmp_path / "hub-stand-in"  # a dataset repository's files, as load_dataset reads them by id
    hub.mkdir()
    (hub / "train.jsonl").write_text(
        "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in zip(QUESTIONS, ANSWERS))
    )
    rows = Supervised(
        config(f"hf:{hub}", tiny_backbone, tmp_path / "run"), engine.RunPaths(tmp_path / "run")
    ).train_dataset()
    assert rows["anchor"] == QUESTIONS
    with pytest.raises(DataError, match=r"hf:.*hub-stand-in: .*split"):
        open_source(f"hf:{hub}", split="validation")


def test_a_parquet_file_trains_by_role_memory_mapped_and_is_fingerprinted_by_its_bytes(tiny_backbone, tmp_path):
    """The format hub datasets are stored in: read through datasets (not as text), its columns by role, from
    memory-mapped Arrow files; another file's bytes are another run; a split is one line."""
    parquet = tmp_path / "pairs.parquet"
    Dataset.from_dict({"question": QUESTIONS, "answer": ANSWERS}).to_parquet(str(parquet))
    assert is_datasets_source(parquet)
    cfg = config(parquet, tiny_backbone, tmp_path / "run")
    rows = Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    assert rows.column_names == ["anchor", "positive"] and rows["positive"] == ANSWERS and rows.cache_files
    from sentlab.cache import cache_root

    # converted once into sentlab's own cache (sentlab cache info / clear own it), memory-mapped from there
    assert all(Path(f["filename"]).is_relative_to(cache_root() / "text") for f in rows.cache_files)
    before = run_fingerprint(cfg)["train_sha256"]
    Dataset.from_dict({"question": QUESTIONS[:5], "answer": ANSWERS[:5]}).to_parquet(str(parquet))
    assert run_fingerprint(config(parquet, tiny_backbone, tmp_path / "run"))["train_sha256"] != before
    # an edit that keeps the file's time (datasets keys its converted copy by path and time): read again
    import os

    stat = parquet.stat()
    Dataset.from_dict({"question": QUESTIONS[:5], "answer": [a.upper() for a in ANSWERS[:5]]}).to_parquet(str(parquet))
    os.utime(parquet, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert open_source(parquet)["answer"] == [a.upper() for a in ANSWERS[:5]]
    with pytest.raises(DataError, match="a Parquet file is one table"):
        open_source(parquet, split="dev")
    (tmp_path / "text.parquet").write_text("not parquet\n")
    with pytest.raises(DataError, match="not a Parquet table datasets can read"):
        open_source(tmp_path / "text.parquet")


def test_the_fingerprint_follows_the_data_and_its_split(saved, tiny_backbone, tmp_path):
    train = run_fingerprint(config(saved, tiny_backbone, tmp_path / "run"))
    assert run_fingerprint(config(saved, tiny_backbone, tmp_path / "run")) == train  # stable
    assert run_fingerprint(config(saved, tiny_backbone, tmp_path / "run", split="dev")) != train
    other = tmp_path / "other"
    DatasetDict({"train": Dataset.from_dict({"question": QUESTIONS[:5], "answer": ANSWERS[:5]})}).save_to_disk(
        str(other)
    )
    assert run_fingerprint(config(other, tiny_backbone, tmp_path / "run"))["train_sha256"] != train["train_sha256"]
    # an edit of the data in place, of the same size, leaves the folder's state.json as it was: the
    # fingerprint still changes, since it hashes the Arrow files
    arrow = next((saved / "train").glob("*.arrow"))
    data = bytearray(arrow.read_bytes())
    at = data.index(b"thing 5 is a word")
    data[at : at + 7] = b"THING 5"
    arrow.write_bytes(bytes(data))
    edited = run_fingerprint(config(saved, tiny_backbone, tmp_path / "run"))
    assert edited["train_sha256"] != train["train_sha256"] and edited["config_sha256"] == train["config_sha256"]


@pytest.mark.parametrize(
    "data, error, message",
    [
        ({"split": "trian"}, DataError, r"no split 'trian' \(did you mean train\?\); it has train, dev"),
        (
            {"columns": {"anchor": "questoin", "positive": "answer"}},
            DataError,
            r"missing column 'questoin' \(did you mean question\?\)",
        ),
        ({"subset": "pair"}, ValueError, r"data.subset: read for an hf: dataset only"),
    ],
)
def test_a_bad_split_subset_or_column_is_one_line(saved, tiny_backbone, tmp_path, data, error, message):
    with pytest.raises(error, match=message):
        Supervised(
            config(saved, tiny_backbone, tmp_path / "run", **data), engine.RunPaths(tmp_path / "run")
        ).train_dataset()


def test_a_split_on_a_plain_file_does_nothing_and_is_refused(tiny_backbone, tmp_path):
    table = tmp_path / "qa.jsonl"
    table.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    with pytest.raises(ValueError, match="data.split: read for a datasets folder or an hf: dataset, not the file"):
        config(table, tiny_backbone, tmp_path / "run", split="train")
    with pytest.raises(DataError, match="missing.arrow: file not found"):
        open_source(tmp_path / "missing.arrow")
