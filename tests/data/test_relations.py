import json

import pytest

from sentlab.data.relations import (
    Triple,
    cap_per_relation,
    read_captions,
    read_entailment,
    read_paranmt,
    read_qnli,
    read_qqp,
    read_rse_json,
    read_same_sent,
    relation_counts,
)
from sentlab.errors import DataError
from sentlab.presets import PRESETS_DIR


def test_qqp_both_layouts_keep_duplicates_only_and_bad_bytes_are_an_error_or_skipped(tmp_path):
    shared = tmp_path / "dev.tsv"
    shared.write_bytes(b"1\tq a\tq b\t1\n0\tq c\tq d\t2\n1\tq \xff\tq f\t3\n")
    with pytest.raises(DataError, match=r"dev.tsv:3: line is not valid UTF-8"):
        read_qqp(shared)
    triples, skipped = read_qqp(shared, bad_bytes="skip")
    assert triples == [Triple("q a", "duplicate_question", "q b")] and skipped == 1
    glue = tmp_path / "train.tsv"
    glue.write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t1\t2\tx?\ty?\t1\n2\t3\t4\tz?\tw?\t0\n")
    assert read_qqp(glue)[0] == [Triple("x?", "duplicate_question", "y?")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("2\tq a\tq b\t1\n")
    with pytest.raises(DataError, match=r"bad.tsv:1: label must be 0 or 1"):
        read_qqp(bad)


def test_captions_pair_every_two_captions_of_an_image_in_the_split(tmp_path):
    tokens = tmp_path / "Flickr8k.token.txt"
    tokens.write_text(
        "a.jpg#0\tA dog .\na.jpg#1\tA puppy .\na.jpg#2\tAn animal .\nb.jpg#0\tA car .\nb.jpg#1\tA van .\n"
    )
    images = tmp_path / "train.txt"
    images.write_text("a.jpg\n")
    assert len(read_captions(tokens)) == 3 + 1
    triples = read_captions(tokens, images)
    assert {(t.head, t.tail) for t in triples} == {
        ("A dog .", "A puppy ."),
        ("A dog .", "An animal ."),
        ("A puppy .", "An animal ."),
    }
    assert all(t.relation == "same_caption" for t in triples)


def test_entailment_from_jsonl_pairs_entailment_with_the_premises_contradiction(tmp_path):
    path = tmp_path / "snli.jsonl"
    rows = [
        ("p1", "e1", "entailment"),
        ("p1", "c1", "contradiction"),
        ("p1", "n1", "neutral"),
        ("p2", "e2", "entailment"),
    ]
    path.write_text("".join(json.dumps({"sentence1": p, "sentence2": h, "gold_label": y}) + "\n" for p, h, y in rows))
    assert read_entailment(path) == [Triple("p1", "entailment", "e1", "c1")]
    path.write_text('{"sentence1": "p"}\n')
    with pytest.raises(DataError, match=r"snli.jsonl:1: expected a JSON object"):
        read_entailment(path)


def test_paranmt_qnli_same_sent_and_rse_json(tmp_path):
    para = tmp_path / "para.txt"
    para.write_text("he loved that man .\the liked the man .\t0.9\n")
    assert read_paranmt(para) == [Triple("he loved that man .", "paraphrase", "he liked the man .")]
    para.write_text("only one field\n")
    with pytest.raises(DataError, match=r"para.txt:1: expected 2 tab-separated fields"):
        read_paranmt(para)
    qnli = tmp_path / "qnli.tsv"
    qnli.write_text("index\tquestion\tsentence\tlabel\n0\tWho?\tHim.\tentailment\n1\tWhy?\tNo.\tnot_entailment\n")
    assert read_qnli(qnli) == [Triple("Who?", "qa_entailment", "Him.")]
    plain = tmp_path / "s.txt"
    plain.write_text("one\ntwo\n")
    assert read_same_sent(plain) == [Triple("one", "same_sent", "one"), Triple("two", "same_sent", "two")]
    released = tmp_path / "rse.json"
    released.write_text('{"sentence1": "a", "sentence2": "b", "label": "duplicate-question"}\n')
    assert read_rse_json(released) == [Triple("a", "duplicate_question", "b")]
    released.write_text('[{"sentence1": "a", "sentence2": "b", "label": "entailment"}]')
    assert read_rse_json(released) == [Triple("a", "entailment", "b")]
    released.write_text('{"sentence1": "a", "sentence2": "b", "label": "cousin"}\n')
    with pytest.raises(DataError, match=r"rse.json:1: unknown relation 'cousin'"):
        read_rse_json(released)


def test_caps_are_seeded_random_samples_per_relation_in_file_order():
    triples = [Triple(f"h{i}", "paraphrase", f"t{i}") for i in range(100)] + [Triple("a", "same_sent", "a")]
    capped = cap_per_relation(triples, {"paraphrase": 10}, seed=0)
    assert relation_counts(capped) == {"paraphrase": 10, "same_sent": 1}
    heads = [int(t.head[1:]) for t in capped if t.relation == "paraphrase"]
    assert heads == sorted(heads) and heads != list(range(10))  # not the first 10 lines
    assert cap_per_relation(triples, {"paraphrase": 10}, seed=0) == capped
    assert cap_per_relation(triples, {"paraphrase": 10}, seed=1) != capped


def test_real_files_read(data_dir):
    qqp, skipped = read_qqp(data_dir / "relations/qqp/dev.tsv", bad_bytes="skip")
    assert 4000 < len(qqp) <= 5000 and skipped > 0
    flickr = data_dir / "relations/flickr8k"
    train = read_captions(flickr / "Flickr8k.token.txt", flickr / "Flickr_8k.trainImages.txt")
    assert len(train) == 6000 * 10  # 6,000 train images, 5 captions each, 10 pairs per image
    assert len(read_entailment(data_dir / "senteval/downstream/SNLI", "dev")) > 2500


def test_the_heldout_sources_read_from_the_shared_data(data_dir, tmp_path):
    from sentlab.data.relations import relation_counts
    from sentlab.methods.rse import read_sources_file

    if not (data_dir / "relations").is_dir():
        pytest.skip("no relational data here")
    heldout = PRESETS_DIR / "link-prediction" / "rse-heldout.yaml"
    copy = tmp_path / "heldout.yaml"  # the preset's paths are relative to the repository: point them at data_dir
    copy.write_text(heldout.read_text(encoding="utf-8").replace("../shared/data", str(data_dir)), encoding="utf-8")
    triples = read_sources_file(copy, 2000, seed=0)
    assert relation_counts(triples) == {"entailment": 2000, "duplicate_question": 2000, "same_caption": 2000}
    assert triples == read_sources_file(copy, 2000, seed=0)  # the sample is fixed by the seed


@pytest.mark.parametrize(
    "reader, name, content, message",
    [
        (
            "read_entailment",
            "nli.jsonl",
            '{"sentence1": "a", "sentence2": "b"}\n',
            "nli.jsonl:1: expected a JSON object",
        ),
        ("read_paranmt", "para.txt", "one field only\n", "para.txt:1: expected 2 tab-separated fields, got 1"),
        ("read_captions", "captions.txt", "img.jpg#0\t\n", "captions.txt:1: empty field"),
        ("read_qnli", "qnli.tsv", "index\tquestion\tsentence\n", "qnli.tsv:1: expected a header with question"),
        ("read_same_sent", "wiki.txt", "a sentence\n\n", "wiki.txt:2: empty sentence"),
        (
            "read_rse_json",
            "rse.json",
            '{"sentence1": "a", "sentence2": "b", "label": "friends"}\n',
            "rse.json:1: unknown relation 'friends'",
        ),
        ("read_rse_json", "rse.json", b'{"sentence1": "\xff"}\n', "rse.json:1: line is not valid UTF-8"),
    ],
)
def test_bad_input_of_every_relation_reader_is_a_one_line_error(tmp_path, reader, name, content, message):
    from sentlab.data import relations

    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(DataError, match=message) as err:
        getattr(relations, reader)(path)
    assert "\n" not in str(err.value)


def test_snli_layout_with_an_unknown_label_is_an_error(tmp_path):
    from sentlab.data.nli import read_snli_triplets

    for name, text in (("s1.dev", "a\na\n"), ("s2.dev", "b\nc\n"), ("labels.dev", "entailment\nmaybe\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=r"labels.dev:2: unknown label 'maybe'"):
        read_snli_triplets(tmp_path)
