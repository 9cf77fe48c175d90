"""USEB readers on files in USEB's layouts (both CQADupStack layouts), and the real files."""

from __future__ import annotations

import pytest

from sentlab.data.useb import (
    load_askubuntu,
    load_cqadupstack,
    load_scidocs,
    load_twitterpara,
    missing_data,
    task_folder,
)
from sentlab.errors import DataError
from tests.fake_data import CQA_FORUMS, write_askubuntu, write_cqadupstack, write_scidocs, write_twitterpara


def test_askubuntu_candidates_in_bm25_order(tmp_path):
    queries = load_askubuntu(write_askubuntu(tmp_path))
    assert [q.candidate_ids for q in queries] == [
        ["3", "4", "2", "5", "8"],
        ["1", "7"],
        ["5", "3", "8", "2", "1"],
    ]  # ties: file order
    assert queries[0].query == "the dog runs" and queries[0].candidates[0] == "the cat sits"
    assert queries[0].relevant == {"2", "4"} and queries[1].relevant == set()


@pytest.mark.parametrize("layout", ["gz", "useb"])
def test_cqadupstack_layouts_give_the_same_forums(tmp_path, layout):
    forums = load_cqadupstack(write_cqadupstack(tmp_path, layout))
    assert sorted(forums) == ["android", "gaming"]
    for name, data in forums.items():
        assert data.queries == CQA_FORUMS[name]["queries"]
        assert data.corpus == CQA_FORUMS[name]["corpus"]  # USEB layout: queries taken out of the pool
        assert data.relevant == {q: set(d) for q, d in CQA_FORUMS[name]["relevant_docs"].items()}


def test_twitterpara_labels_and_empty_lines(tmp_path):
    sets = load_twitterpara(write_twitterpara(tmp_path))
    assert sets["TURL"].labels == [1, 0, -1, 0] and sets["TURL"].scores == [100.0, 0.0, 60.0, 20.0]
    assert sets["PIT"].labels == [1, 0, -1] and sets["PIT"].sentences1[0] == "the man plays"


def test_scidocs_drops_untitled_queries_and_documents(tmp_path):
    relations = load_scidocs(write_scidocs(tmp_path))
    assert sorted(relations) == ["cite", "cocite", "coread", "coview"]
    assert len(relations["cite"]) == 1  # query "q" has an empty title
    cocite = relations["cocite"][0]
    assert cocite.candidate_ids == ["a", "b"] and cocite.qrels == {"a": 0, "b": 1, "n": 1}


def test_missing_data_reasons(tmp_path):
    assert "test.txt" in missing_data("AskUbuntu", tmp_path)
    assert "cqadupstack_titles" in missing_data("CQADupStack", tmp_path)
    write_twitterpara(tmp_path)
    assert missing_data("TwitterPara", tmp_path) is None
    assert task_folder("SciDocs", tmp_path).name == "scidocs"


def test_malformed_files(tmp_path):
    folder = write_twitterpara(tmp_path)
    (folder / "Twitter_URL_Corpus_test.txt").write_text("a\tb\tfour of six\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"Twitter_URL_Corpus_test.txt:1: expected"):
        load_twitterpara(folder)
    folder = write_askubuntu(tmp_path)
    (folder / "test.txt").write_text("1\t2\t3 4\t1.0\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"test.txt:1: 2 candidates but 1 BM25 scores"):
        load_askubuntu(folder)
    folder = write_cqadupstack(tmp_path / "other")
    (folder / "cqadupstack_titles_2forums.json.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="not readable JSON"):
        load_cqadupstack(folder)


def test_real_files(data_dir):
    sets = load_twitterpara(task_folder("TwitterPara", data_dir))
    assert len(sets["PIT"].labels) == 972
    forums = load_cqadupstack(task_folder("CQADupStack", data_dir))
    assert len(forums) == 11 and "tex" not in forums
    assert sum(len(f.corpus) for f in forums.values()) == 389015
    assert sum(len(f.queries) for f in forums.values()) == 10239


def test_cqadupstack_judgements_of_unknown_ids_are_an_error(tmp_path):
    import gzip
    import json

    from tests.fake_data import CQA_FORUMS

    forums = json.loads(json.dumps(CQA_FORUMS))
    forum = next(iter(forums))
    query = next(iter(forums[forum]["relevant_docs"]))
    forums[forum]["relevant_docs"][query] = ["no-such-id"]
    folder = tmp_path / "cqa"
    folder.mkdir()
    with gzip.open(folder / "cqadupstack_titles_2forums.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(forums, handle)
    with pytest.raises(
        DataError,
        match=f"forum '{forum}' judges ids that are not among its queries / corpus "
        r"\(no-such-id\)",
    ):
        load_cqadupstack(folder)


def test_scidocs_without_its_split_or_not_json_is_an_error(tmp_path):
    folder = tmp_path / "scidocs"
    folder.mkdir()
    (folder / "data.json").write_text('{"corpus": {}}', encoding="utf-8")
    with pytest.raises(DataError, match=r"data.json: needs 'corpus' and 'test'"):
        load_scidocs(folder)
    (folder / "data.json").write_text('{"corpus": ', encoding="utf-8")
    with pytest.raises(DataError, match="not readable JSON"):
        load_scidocs(folder)
