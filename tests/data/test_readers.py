import pytest

from sentlab.data.readers import read_column, read_sentences, read_table
from sentlab.errors import DataError


def write(tmp_path, name, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_read_sentences_strips_line_endings_and_limits(tmp_path):
    path = write(tmp_path, "c.txt", b"one two\r\nthree\nfour\n")
    assert read_sentences(path) == ["one two", "three", "four"]
    assert read_sentences(path, limit=2) == ["one two", "three"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"ok\n\nok\n", "c.txt:2: empty sentence"),
        (b"ok\n   \t\nok\n", "c.txt:2: empty sentence"),
        (b"ok\nok\n\xff\xfe bad\n", "c.txt:3: line is not valid UTF-8"),
        (b"", "file has no sentences"),
    ],
)
def test_read_sentences_rejects_bad_lines(tmp_path, content, message):
    with pytest.raises(DataError, match=message):
        read_sentences(write(tmp_path, "c.txt", content))


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(DataError, match="file not found") as err:
        read_sentences(tmp_path / "nope.txt")
    assert "\n" not in str(err.value)
    with pytest.raises(DataError, match="is a folder; give the file inside it"):
        read_sentences(tmp_path)


def test_jsonl_and_csv_columns(tmp_path):
    jsonl = write(tmp_path, "d.jsonl", b'{"a": "x y", "b": "z"}\n{"a": "p", "b": "q"}\n')
    assert read_table(jsonl, ["a", "b"]) == [("x y", "z"), ("p", "q")]
    csv_path = write(tmp_path, "d.csv", b'sent0,sent1,hard_neg\n"a, b",c,d\ne,f,g\n')
    assert read_table(csv_path, ["sent0", "sent1", "hard_neg"]) == [("a, b", "c", "d"), ("e", "f", "g")]
    tsv = write(tmp_path, "d.tsv", b"text\tlabel\nhello\t1\n")
    assert read_column(tsv, "text") == ["hello"]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("d.jsonl", b'{"a": "x"}\n{"b": "y"}\n', "d.jsonl:2: missing column 'a'"),
        ("d.jsonl", b'{"a": "x"}\nnot json\n', "d.jsonl:2: invalid JSON"),
        ("d.jsonl", b'{"a": ""}\n', "d.jsonl:1: empty column 'a'"),
        ("d.csv", b"x,y\n1,2\n", "missing column\\(s\\) \\['a'\\]"),
        ("d.csv", b"a,b\nhello,\n ,z\n", "d.csv:3: empty column 'a'"),
        ("d.csv", b"a,b\nx,y\nx,y,z\n", "d.csv:3: row has 3 fields, the header 2"),
        ("d.tsv", b"a\tb\nx\n", "d.tsv:2: row has 1 fields, the header 2"),
    ],
)
def test_table_errors_name_file_and_line(tmp_path, name, content, message):
    with pytest.raises(DataError, match=message):
        read_table(write(tmp_path, name, content), ["a"])
