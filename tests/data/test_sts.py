import numpy as np
import pytest

from sentlab.data.hub import load_sts_from_hub
from sentlab.data.sts import load_sts_task, read_senteval_sts_subset, read_sick, read_stsb
from sentlab.errors import DataError


def test_senteval_subset_skips_empty_gold_and_normalises_whitespace(tmp_path):
    (tmp_path / "STS.input.x.txt").write_text("a  b\tc d\ne f\tg\nh\ti\n", encoding="utf-8")
    (tmp_path / "STS.gs.x.txt").write_text("4.5\n\n1\n", encoding="utf-8")
    pairs = read_senteval_sts_subset(tmp_path, "x")
    assert pairs.sentences1 == ["a b", "h"]
    assert pairs.sentences2 == ["c d", "i"]
    assert pairs.scores.tolist() == [4.5, 1.0]


@pytest.mark.parametrize(
    "inputs, gold, message",
    [
        ("a\tb\tc\n", "1\n", "STS.input.x.txt:1: expected 2 tab-separated sentences"),
        ("a\tb\n", "high\n", "STS.gs.x.txt:1: gold score 'high' is not a number"),
        ("a\tb\nc\td\n", "1\n", "1 gold lines for 2 sentence pairs"),
        ("a\t  \n", "1\n", "STS.input.x.txt:1: empty sentence"),
    ],
)
def test_senteval_subset_malformed_rows(tmp_path, inputs, gold, message):
    (tmp_path / "STS.input.x.txt").write_text(inputs, encoding="utf-8")
    (tmp_path / "STS.gs.x.txt").write_text(gold, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_senteval_sts_subset(tmp_path, "x")


def test_stsb_and_sick_layouts(tmp_path):
    (tmp_path / "sts-test.csv").write_text("g\tf\t2012\t1\t3.5\tA  b .\tc d .\n", encoding="utf-8")
    pairs = read_stsb(tmp_path, "test")
    assert (pairs.sentences1, pairs.sentences2, pairs.scores.tolist()) == (["A b ."], ["c d ."], [3.5])
    (tmp_path / "SICK_test_annotated.txt").write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r\n1\tx y\tz\t4.2\tNEUTRAL\r\n",
        encoding="utf-8",
    )
    sick = read_sick(tmp_path, "test")
    assert (sick.sentences1, sick.sentences2, sick.scores.tolist()) == (["x y"], ["z"], [4.2])
    (tmp_path / "sts-dev.csv").write_text("g\tf\t2012\t1\t3.5\tonly six fields\n", encoding="utf-8")
    with pytest.raises(DataError, match="sts-dev.csv:1: expected at least 7"):
        read_stsb(tmp_path, "dev")


def test_missing_data_folder(tmp_path):
    with pytest.raises(
        DataError,
        match=r"STS12: .*STS12-en-test: not found; it is part of 'sts' .*"
        r"`sentlab data download sts`.*--data-dir / \$SENTLAB_DATA",
    ):
        load_sts_task("STS12", tmp_path)


def test_shared_data_pair_counts(data_dir):
    expected = {
        "STS12": 3108,
        "STS13": 1500,
        "STS14": 3750,
        "STS15": 3000,
        "STS16": 1186,
        "STS-B": 1379,
        "SICK-R": 4927,
    }
    assert {name: len(load_sts_task(name, data_dir)) for name in expected} == expected
    assert len(load_sts_task("STS-B", data_dir, split="dev")) == 1500


def test_hub_loader_with_fake_datasets():
    calls = []

    def fake_load_dataset(name, split):
        calls.append((name, split))
        return {"sentence1": ["a  b", "c"], "sentence2": ["d", "e"], "score": [1.0, 4.0]}

    pairs = load_sts_from_hub("STS-B", "dev", load_dataset=fake_load_dataset)
    assert calls == [("mteb/stsbenchmark-sts", "validation")]
    assert pairs.sentences1 == ["a b", "c"] and np.allclose(pairs.scores, [1, 4])

    def offline(name, split):
        raise ConnectionError("no network")

    with pytest.raises(DataError, match="could not load from the hub"):
        load_sts_from_hub("STS12", load_dataset=offline)


def test_download_writes_a_layout_the_loaders_read(tmp_path):
    def fake_load_dataset(name, split):
        n = {"train": 3, "validation": 2, "test": 4}[split]
        return {
            "sentence1": [f"s{i}" for i in range(n)],
            "sentence2": [f"t{i}" for i in range(n)],
            "score": [float(i) for i in range(n)],
        }

    from sentlab.data.hub import download_sts

    written = download_sts(str(tmp_path), load_dataset=fake_load_dataset)
    assert written["STS12/test"] == 4 and written["STS-B/dev"] == 2
    for name in ("STS12", "STS-B", "SICK-R"):
        pairs = load_sts_task(name, tmp_path)
        assert len(pairs) == 4 and pairs.scores.tolist() == [0.0, 1.0, 2.0, 3.0]
