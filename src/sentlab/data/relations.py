"""Relational sentence triples (s_i, r_k, s_j) from several sources, each a named relation, for RSE
(Wang and Li, Sec. 3.2, Table 8).

Relations and their readers (public formats):

* ``entailment`` - SNLI / MNLI: SentEval's SNLI layout (``s1/s2/labels.<split>``) or the public
  ``*.jsonl`` (``sentence1``, ``sentence2``, ``gold_label``); each premise's entailed hypothesis is
  the tail and a contradiction of the same premise the hard negative (:mod:`sentlab.data.nli`);
* ``duplicate_question`` - QQP: ``label \\t q1 \\t q2 \\t id`` (the shared copy) or GLUE's TSV with
  a header (``question1``, ``question2``, ``is_duplicate``); only label 1;
* ``paraphrase`` - ParaNMT: ``s1 \\t s2 [\\t score]`` a line;
* ``same_caption`` - Flickr8k / Flickr30k token files (``image.jpg#k \\t caption``): every unordered
  pair of two captions of one image, optionally only the images listed in an images file;
* ``qa_entailment`` - QNLI: GLUE's TSV with a header (``question``, ``sentence``, ``label``), only
  ``entailment``;
* ``same_sent`` - plain sentences, one a line: (s, s), the two dropout views of SimCSE;
* RSE's released JSON: ``{"sentence1", "sentence2", "label": <relation name>}`` per line (or one
  JSON list of such objects).

Bad input is a one-line :class:`DataError` naming the file and line. Some sources (the QQP dump)
contain bytes that are not UTF-8: ``bad_bytes="skip"`` drops those lines and counts them instead.
:func:`cap_per_relation` keeps a seeded random sample of N triples per relation (the released code
takes the first N lines, which follows the file's order).

Training reads the triples from :func:`triples_table`: a memory-mapped Arrow table written a batch at a
time as the sources are read, cached, and rebuilt when what it was made from changes;
:func:`with_in_relation_negatives` draws each row's negative from it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, islice
from pathlib import Path

import numpy as np
import pyarrow as pa
from datasets import Dataset

from sentlab.cache_folder import cached_folder
from sentlab.data.nli import pair_by_premise, read_snli_triplets
from sentlab.data.tables import ROWS, with_row_index
from sentlab.data.text_conversion import write_row_numbers
from sentlab.errors import DataError

RELATIONS = ("entailment", "duplicate_question", "paraphrase", "same_caption", "qa_entailment", "same_sent")


@dataclass(frozen=True)
class Triple:
    head: str
    relation: str
    tail: str
    negative: str | None = None  # an in-relation hard negative tail (entailment: the contradiction)


def numbered_lines(path: str | Path, bad_bytes: str = "error") -> tuple[list[tuple[int, str]], int]:
    """(line number, text) of each line; lines with bytes that are not UTF-8 are an error or skipped."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    out, skipped = [], 0
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as err:
            if bad_bytes == "skip":
                skipped += 1
                continue
            raise DataError(
                f"{path}:{number}: line is not valid UTF-8 (byte {err.start}); pass bad_bytes='skip' to drop such lines"
            ) from None
        out.append((number, text))
    if out and out[-1][1] == "":
        out.pop()
    return out, skipped


def tab_fields(path: Path, number: int, line: str, count: int) -> list[str]:
    fields = line.split("\t")
    if len(fields) < count:
        raise DataError(f"{path}:{number}: expected {count} tab-separated fields, got {len(fields)}")
    for field in fields[:count]:
        if not field.strip():
            raise DataError(f"{path}:{number}: empty field")
    return fields


def read_entailment(source: str | Path, split: str = "train") -> list[Triple]:
    source = Path(source)
    if source.is_dir():
        rows = read_snli_triplets(source, split)
    else:
        labelled = []
        for number, line in numbered_lines(source)[0]:
            try:
                record = json.loads(line)
                labelled.append((record["sentence1"], record["sentence2"], record["gold_label"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    f"{source}:{number}: expected a JSON object with sentence1, sentence2, gold_label"
                ) from None
        rows = pair_by_premise(labelled)
    return [Triple(p, "entailment", e, c) for p, e, c in rows]


def read_qqp(path: str | Path, bad_bytes: str = "error") -> tuple[list[Triple], int]:
    path = Path(path)
    lines, skipped = numbered_lines(path, bad_bytes)
    triples = []
    header = lines[0][1].split("\t") if lines else []
    if "is_duplicate" in header:
        q1, q2, label = header.index("question1"), header.index("question2"), header.index("is_duplicate")
        body = lines[1:]
    else:
        label, q1, q2 = 0, 1, 2
        body = lines
    for number, line in body:
        fields = tab_fields(path, number, line, max(q1, q2, label) + 1)
        if fields[label].strip() not in ("0", "1"):
            raise DataError(f"{path}:{number}: label must be 0 or 1, got {fields[label]!r}")
        if fields[label].strip() == "1":
            triples.append(Triple(fields[q1], "duplicate_question", fields[q2]))
    return triples, skipped


def read_paranmt(path: str | Path) -> list[Triple]:
    path = Path(path)
    return [
        Triple(f[0], "paraphrase", f[1]) for n, line in numbered_lines(path)[0] for f in [tab_fields(path, n, line, 2)]
    ]


def read_captions(token_file: str | Path, images_file: str | Path | None = None) -> list[Triple]:
    token_file = Path(token_file)
    keep = None
    if images_file is not None:
        keep = {line.strip() for _, line in numbered_lines(images_file)[0] if line.strip()}
    by_image: dict[str, list[str]] = {}
    for number, line in numbered_lines(token_file)[0]:
        key, caption = tab_fields(token_file, number, line, 2)[:2]
        image = key.split("#", 1)[0]
        if keep is None or image in keep:
            by_image.setdefault(image, []).append(caption.strip())
    return [Triple(a, "same_caption", b) for captions in by_image.values() for a, b in combinations(captions, 2)]


def read_qnli(path: str | Path) -> list[Triple]:
    path = Path(path)
    lines = numbered_lines(path)[0]
    if not lines:
        raise DataError(f"{path}: file is empty")
    header = lines[0][1].split("\t")
    if not {"question", "sentence", "label"} <= set(header):
        raise DataError(f"{path}:1: expected a header with question, sentence, label")
    q, s, y = header.index("question"), header.index("sentence"), header.index("label")
    return [
        Triple(f[q], "qa_entailment", f[s])
        for n, line in lines[1:]
        for f in [tab_fields(path, n, line, len(header))]
        if f[y].strip() == "entailment"
    ]


def read_same_sent(path: str | Path) -> list[Triple]:
    from sentlab.data.readers import read_sentences

    return [Triple(s, "same_sent", s) for s in read_sentences(path)]


def read_rse_json(path: str | Path) -> list[Triple]:
    """RSE's released data: ``{"sentence1", "sentence2", "label"}`` objects, the label a relation name."""
    path = Path(path)
    lines = numbered_lines(path)[0]
    text = "\n".join(line for _, line in lines).strip()
    if text.startswith("["):
        try:
            records = list(enumerate(json.loads(text), start=1))
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg})") from None
    else:
        records = []
        for number, line in lines:
            try:
                records.append((number, json.loads(line)))
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{number}: invalid JSON ({err.msg})") from None
    triples = []
    for number, record in records:
        if not isinstance(record, dict) or not {"sentence1", "sentence2", "label"} <= set(record):
            raise DataError(f"{path}:{number}: expected an object with sentence1, sentence2, label")
        relation = str(record["label"]).replace("-", "_")
        if relation not in RELATIONS:
            raise DataError(
                f"{path}:{number}: unknown relation {record['label']!r} (choose from {', '.join(RELATIONS)})"
            )
        triples.append(Triple(record["sentence1"], relation, record["sentence2"]))
    return triples


def cap_per_relation(triples: Iterable[Triple], caps: dict[str, int], seed: int) -> list[Triple]:
    """At most ``caps[relation]`` triples of each capped relation, a seeded random sample kept in
    file order; uncapped relations are kept whole."""
    by_relation: dict[str, list[Triple]] = {}
    for triple in triples:
        by_relation.setdefault(triple.relation, []).append(triple)
    rng = random.Random(seed)
    out = []
    for relation, group in by_relation.items():
        cap = caps.get(relation)
        if cap is not None and cap < len(group):
            keep = sorted(rng.sample(range(len(group)), cap))
            group = [group[i] for i in keep]
        out.extend(group)
    return out


def relation_counts(triples: Iterable[Triple]) -> dict[str, int]:
    return dict(Counter(t.relation for t in triples))


class InRelationNegatives:
    """A ``datasets`` transform adding each row's in-relation negative (Sec. 3.3): its own hard
    negative when it has one (entailment: the contradiction), else the tail of a random *other* row
    of the same relation, drawn afresh each time the row is read from (seed, row, read count).

    ``table_file`` is the triples' Arrow file (:func:`triples_table`): the tails are read from it,
    memory-mapped, and each relation's rows are kept as 8-byte row numbers, opened on first use (so a
    data-loader worker opens its own). Rows: ``head``, ``tail``, ``negative`` ('' when none),
    ``label`` (relation index), ``row``. Output columns, in order: ``head``, ``tail``, ``negative``,
    ``label``.
    """

    def __init__(self, table_file: str | Path, seed: int):
        from sentlab.data.noise import PerReadRandom

        self.table_file = str(table_file)
        self.random = PerReadRandom(seed)
        self._tails = None
        self._rows_by_relation: dict[int, np.ndarray] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_tails": None, "_rows_by_relation": {}}  # reopened where it is used

    def _open(self) -> None:
        table = Dataset.from_file(self.table_file).data
        labels = table.column("label").to_numpy()
        self._rows_by_relation = {int(k): np.flatnonzero(labels == k) for k in np.unique(labels)}
        self._tails = table.column("tail")

    def draw(self, row: int, relation: int) -> str:
        if self._tails is None:
            self._open()
        pool = self._rows_by_relation[relation]
        rng = self.random(row)
        if len(pool) < 2:
            raise DataError(f"relation {relation} has fewer than 2 triples: no in-relation negative to draw")
        while True:
            other_row = int(pool[int(rng.integers(len(pool)))])
            if other_row != row:
                return self._tails[other_row].as_py()

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        negatives = [
            n if n else self.draw(int(r), int(k)) for n, r, k in zip(batch["negative"], batch["row"], batch["label"])
        ]
        return {
            "head": list(batch["head"]),
            "tail": list(batch["tail"]),
            "negative": negatives,
            "label": list(batch["label"]),
        }


TRIPLES_FORMAT = 2  # 2: written by sentlab.cache_folder, with the row numbers
TRIPLES_FILE = "triples.arrow"
TRIPLES_PER_BATCH = 65_536  # triples written at a time
TRIPLES_SCHEMA = pa.schema(
    [pa.field(name, pa.string()) for name in ("head", "tail", "negative")] + [pa.field("label", pa.int64())]
)


def triples_table(
    read: Callable[[], Iterable[Triple]],
    relations: Sequence[str],
    folder: str | Path,
    key: dict,
    unchanged: Callable[[], None] | None = None,
    after_build: Callable[[Path], object] | None = None,
) -> tuple[Dataset, dict]:
    """The triples ``read()`` yields as a memory-mapped Arrow table in ``folder`` (columns ``head``,
    ``tail``, ``negative`` ('' when none), ``label``: the index of the relation in ``relations``),
    and its record (``rows``, ``counts`` per relation).

    The triples are written :data:`TRIPLES_PER_BATCH` at a time as they are read, so the process holds
    one batch, not the table. ``key`` says what the table is made from (the sources, their files'
    sizes and modification times, the seed, the limit): a folder whose record has the same key and an
    Arrow file of the recorded size is reused; any other (a crash while writing, a changed source) is
    removed and rebuilt, as every cached folder is (:func:`sentlab.cache_folder.cached_folder`), with
    the triples' row numbers (``rows.arrow``) beside them. ``unchanged()``, called once the triples are
    written and before the record is, raises when a source changed while it was read: such a folder is
    never completed. ``after_build(folder)`` runs after a build (the cache's eviction)."""
    folder = Path(folder)

    def build(partial: Path) -> dict:
        fields = _write_triples(read(), relations, partial, key)
        if unchanged is not None:
            unchanged()
        return fields

    record = cached_folder(folder, {"format": TRIPLES_FORMAT, "key": key}, build, after_build=after_build)
    return Dataset.from_file(str(folder / TRIPLES_FILE)), record


def _write_triples(triples: Iterable[Triple], relations: Sequence[str], folder: Path, key: dict) -> dict:
    """The triples into the fresh ``folder`` (with their row numbers); the record's fields."""
    index = {name: i for i, name in enumerate(relations)}
    triples = iter(triples)
    counts: Counter = Counter()
    with pa.OSFile(str(folder / TRIPLES_FILE), "wb") as sink, pa.ipc.new_stream(sink, TRIPLES_SCHEMA) as writer:
        while batch := list(islice(triples, TRIPLES_PER_BATCH)):
            missing = sorted({t.relation for t in batch} - set(index))
            if missing:
                raise DataError(
                    f"triples of relation(s) {', '.join(missing)} not in the relation list {list(relations)}"
                )
            counts.update(t.relation for t in batch)
            columns = [
                pa.array([t.head for t in batch], pa.string()),
                pa.array([t.tail for t in batch], pa.string()),
                pa.array([t.negative or "" for t in batch], pa.string()),
                pa.array([index[t.relation] for t in batch], pa.int64()),
            ]
            writer.write_batch(pa.record_batch(columns, schema=TRIPLES_SCHEMA))
    if not counts:
        raise DataError("the relation sources hold no triples")
    rows = sum(counts.values())
    write_row_numbers(rows, folder / ROWS)
    return {"format": TRIPLES_FORMAT, "key": key, "rows": rows, "counts": dict(counts)}


def with_in_relation_negatives(table: Dataset, seed: int) -> Dataset:
    """:func:`triples_table`'s table with a row-number column and :class:`InRelationNegatives` installed."""
    dataset = with_row_index(table, "row")
    dataset.set_transform(InRelationNegatives(table.cache_files[0]["filename"], seed))
    return dataset
