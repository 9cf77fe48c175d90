"""Transfer-task readers: SentEval's reading rules on small files, and the real files' sizes."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.data.transfer import TRANSFER_TASKS, load_transfer_task, missing_files
from sentlab.errors import DataError
from tests.fake_data import write_transfer


def test_binary_task_keeps_sentevals_order_tokens_and_empty_lines(tmp_path):
    folder = tmp_path / "senteval" / "downstream" / "CR"
    folder.mkdir(parents=True)
    (folder / "custrev.pos").write_bytes(b"good  one here \n\nnice\xe9 !\n")  # double space, empty line, latin-1 byte
    (folder / "custrev.neg").write_bytes(b"bad\nnot  good at all\n")
    data = load_transfer_task("CR", tmp_path)
    split = data.splits["all"]
    # sorted by (number of tokens, label): "" (0, pos) < "bad" (1, neg) < "niceé !" (2, pos) < ...
    assert split.sentences == ["", "bad", "niceé !", "good one here", "not good at all"]
    assert split.labels.tolist() == [1, 0, 1, 1, 0]
    assert data.n_empty == 1


def test_subj_labels_objective_as_one(tmp_path):
    write_transfer(tmp_path, n=3)
    data = load_transfer_task("SUBJ", tmp_path)
    objective = (tmp_path / "senteval/downstream/SUBJ/subj.objective").read_text("latin-1").split("\n")[0]
    assert data.splits["all"].labels[data.splits["all"].sentences.index(" ".join(objective.split()))] == 1


def test_trec_mrpc_and_sst_splits(tmp_path):
    write_transfer(tmp_path, n=3)
    trec = load_transfer_task("TREC", tmp_path)
    assert set(trec.splits) == {"train", "test"} and set(trec.splits["train"].labels.tolist()) == {3, 4}
    assert all(s.endswith("?") and ":" not in s for s in trec.splits["train"].sentences)
    mrpc = load_transfer_task("MRPC", tmp_path)
    train = mrpc.splits["train"]
    assert len(train) == 6 and train.sentences2 is not None  # header skipped
    assert [(a == b) for a, b in zip(train.sentences, train.sentences2)] == [bool(y) for y in train.labels]
    sst = load_transfer_task("SST2", tmp_path)
    assert [len(sst.splits[k]) for k in ("train", "dev", "test")] == [6, 6, 6]
    lengths = [len(s.split()) for s in sst.splits["train"].sentences]
    assert lengths == sorted(lengths)


@pytest.mark.parametrize(
    "task, name, content, message",
    [
        ("SST2", "SST/binary/sentiment-train", "no label here\n", ":1: expected 'sentence<TAB>0|1'"),
        ("TREC", "TREC/train_5500.label", "FOO:bar what ?\n", ":1: expected 'LABEL:sub question'"),
        ("MRPC", "MRPC/msr_paraphrase_train.txt", "header\n1\tx\n", ":2: expected 'quality<TAB>id"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, task, name, content, message):
    write_transfer(tmp_path, n=2)
    (tmp_path / "senteval" / "downstream" / name).write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_transfer_task(task, tmp_path)


def test_missing_and_unknown(tmp_path):
    assert len(missing_files(TRANSFER_TASKS["MR"], tmp_path)) == 2
    with pytest.raises(DataError, match="file not found"):
        load_transfer_task("MR", tmp_path)
    with pytest.raises(DataError, match="unknown transfer task 'SST5'"):
        load_transfer_task("SST5", tmp_path)


def test_real_files_have_sentevals_sizes(data_dir):
    sizes = {
        "MR": {"all": 10662},
        "CR": {"all": 3775},
        "SUBJ": {"all": 10000},
        "MPQA": {"all": 10606},
        "SST2": {"train": 67349, "dev": 872, "test": 1821},
        "TREC": {"train": 5452, "test": 500},
        "MRPC": {"train": 4076, "test": 1725},
    }
    for name, expected in sizes.items():
        data = load_transfer_task(name, data_dir)
        assert {k: len(v) for k, v in data.splits.items()} == expected, name
    assert load_transfer_task("CR", data_dir).n_empty == 4
    assert np.bincount(load_transfer_task("TREC", data_dir).splits["test"].labels).tolist() == [9, 138, 94, 65, 81, 113]
