"""USEB data (Wang, Reimers, Gurevych 2021, Sec. 4.1), read in the layout of USEB's ``data-eval``.

Folder: ``<data>/useb/data-eval/<task>/`` - USEB's own release unpacked as is.

* ``askubuntu/``: ``text_tokenized.txt`` (id \\t title \\t body) and ``{dev,test}.txt`` (query id \\t
  similar ids \\t 20 candidate ids \\t their BM25 scores; ids space-separated).
* ``cqadupstack/``: USEB's ``corpus.json`` ({forum: {id: title}}) + ``retrieval_split.json``
  ({split: {forum: {query id: [duplicate ids]}}}), the queries removed from each forum's pool as
  USEB does; or one ``cqadupstack_titles*.json.gz`` ({forum: {"corpus", "queries",
  "relevant_docs"}}, the title split that MTEB copied from USEB; its pools hold no queries).
* ``twitterpara/``: ``Twitter_URL_Corpus_test.txt`` (TURL; sentence \\t sentence \\t (n_yes, n_total)
  \\t url; empty lines skipped) and PIT-2015's ``test.data`` (expert score 0-5 in column 5).
* ``scidocs/``: ``data.json`` ({"corpus": {id: {"title"}}, split: {relation: {query id: {doc id:
  relevance}}}}).

Titles only (the USEB protocol); texts are stripped of surrounding whitespace as USEB does.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from sentlab.data.readers import read_lines
from sentlab.errors import DataError
from sentlab.paths import data_dir

USEB_FOLDER = "useb/data-eval"
USEB_TASKS = ("AskUbuntu", "CQADupStack", "TwitterPara", "SciDocs")
TASK_FOLDERS = {
    "AskUbuntu": "askubuntu",
    "CQADupStack": "cqadupstack",
    "TwitterPara": "twitterpara",
    "SciDocs": "scidocs",
}
CQADUPSTACK_FORUMS = (
    "android",
    "english",
    "gaming",
    "gis",
    "mathematica",
    "physics",
    "programmers",
    "stats",
    "tex",
    "unix",
    "webmasters",
    "wordpress",
)
_VOTES = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def task_folder(task: str, root: str | Path | None = None) -> Path:
    return data_dir(root) / USEB_FOLDER / TASK_FOLDERS[task]


def missing_data(task: str, root: str | Path | None = None) -> str | None:
    """Why ``task`` cannot run here (``None`` when its files are present)."""
    folder = task_folder(task, root)
    needed = {
        "AskUbuntu": ["text_tokenized.txt", "test.txt"],
        "TwitterPara": ["Twitter_URL_Corpus_test.txt", "test.data"],
        "SciDocs": ["data.json"],
    }.get(task)
    if needed is None:  # CQADupStack: either layout
        if folder.is_dir() and (_cqadupstack_archives(folder) or (folder / "corpus.json").is_file()):
            return None
        return f"no {folder}/cqadupstack_titles*.json.gz or corpus.json + retrieval_split.json"
    absent = [name for name in needed if not (folder / name).is_file()]
    return f"missing {', '.join(str(folder / n) for n in absent)}" if absent else None


def _json(path: Path):
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{path}: not readable JSON ({type(err).__name__}: {err})") from None


@dataclass
class RerankQuery:
    """A query and its candidates (in the order given), with the ids that are relevant."""

    query: str
    candidates: list[str]
    candidate_ids: list[str]
    relevant: set[str]


def load_askubuntu(folder: str | Path, split: str = "test") -> list[RerankQuery]:
    """AskUbuntu re-ranking: candidates in BM25 order (highest first, ties in file order)."""
    folder = Path(folder)
    pool: dict[str, str] = {}
    path = folder / "text_tokenized.txt"
    for line_no, line in enumerate(read_lines(path), start=1):
        parts = line.split("\t")
        if len(parts) != 3:
            raise DataError(f"{path}:{line_no}: expected 'id<TAB>title<TAB>body'")
        pool[parts[0].strip()] = parts[1].strip()
    queries = []
    path = folder / f"{split}.txt"
    for line_no, line in enumerate(read_lines(path), start=1):
        parts = line.split("\t")
        if len(parts) != 4:
            raise DataError(f"{path}:{line_no}: expected 'query<TAB>similar ids<TAB>candidates<TAB>bm25 scores'")
        qid, similar, candidates, bm25 = parts[0].strip(), parts[1].split(), parts[2].split(), parts[3].split()
        try:
            bm25_scores = [float(s) for s in bm25]
        except ValueError:
            raise DataError(f"{path}:{line_no}: BM25 scores must be numbers") from None
        if len(bm25_scores) != len(candidates):
            raise DataError(f"{path}:{line_no}: {len(candidates)} candidates but {len(bm25_scores)} BM25 scores")
        unknown = [i for i in [qid, *candidates] if i not in pool]
        if unknown:
            raise DataError(f"{path}:{line_no}: id {unknown[0]} is not in text_tokenized.txt")
        order = sorted(range(len(candidates)), key=lambda i: -bm25_scores[i])
        ranked = [candidates[i] for i in order]
        queries.append(RerankQuery(pool[qid], [pool[i] for i in ranked], ranked, set(similar)))
    return queries


@dataclass
class RetrievalForum:
    """Queries, the pool they are searched in, and each query's relevant pool ids."""

    queries: dict[str, str]
    corpus: dict[str, str]
    relevant: dict[str, set[str]]


def _cqadupstack_archives(folder: Path) -> list[Path]:
    return sorted(folder.glob("cqadupstack_titles*.json.gz"))


def load_cqadupstack(folder: str | Path, split: str = "test") -> dict[str, RetrievalForum]:
    folder = Path(folder)
    archives = _cqadupstack_archives(folder)
    forums: dict[str, RetrievalForum] = {}
    if archives:
        for forum, data in _json(archives[0]).items():
            try:
                forums[forum] = RetrievalForum(
                    {k: v.strip() for k, v in data["queries"].items()},
                    {k: v.strip() for k, v in data["corpus"].items()},
                    {k: set(v) for k, v in data["relevant_docs"].items()},
                )
            except (KeyError, AttributeError, TypeError):
                raise DataError(f"{archives[0]}: forum {forum!r} needs corpus, queries and relevant_docs") from None
    else:
        corpus, splits = _json(folder / "corpus.json"), _json(folder / "retrieval_split.json")
        if split not in splits:
            raise DataError(f"{folder / 'retrieval_split.json'}: no split {split!r}")
        for forum, qrels in splits[split].items():
            titles = corpus.get(forum)
            if titles is None or any(q not in titles for q in qrels):
                raise DataError(f"{folder / 'corpus.json'}: forum {forum!r} lacks some of its queries")
            pool = {k: v.strip() for k, v in titles.items() if k not in qrels}  # never return the query itself
            forums[forum] = RetrievalForum(
                {q: titles[q].strip() for q in qrels}, pool, {q: set(d) for q, d in qrels.items()}
            )
    for forum, data in forums.items():
        missing = [q for q in data.queries if q not in data.relevant]
        if missing:
            raise DataError(f"CQADupStack {forum}: query {missing[0]} has no relevant documents")
        if archives:  # USEB's archive: every judgement names a query and a pool document (checked: all 11 forums)
            unknown = next((d for docs in data.relevant.values() for d in docs if d not in data.corpus), None)
            if unknown is not None or any(q not in data.queries for q in data.relevant):
                raise DataError(
                    f"{archives[0]}: forum {forum!r} judges ids that are not among its queries / corpus "
                    f"({unknown or 'a query'})"
                )
    return forums


@dataclass
class ParaphrasePairs:
    """Sentence pairs with a binary label (``-1`` = undecided, left out of AP) and a graded score."""

    sentences1: list[str] = field(default_factory=list)
    sentences2: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)


def _paraphrase_label(votes: int) -> int:
    """USEB's rule for both TwitterPara sets: 3 undecided, above paraphrase, below not."""
    return -1 if votes == 3 else int(votes > 3)


def load_twitterpara(folder: str | Path) -> dict[str, ParaphrasePairs]:
    """``{"TURL": ..., "PIT": ...}``; gold score = votes x 20 (for the Spearman beside AP)."""
    folder = Path(folder)
    turl = ParaphrasePairs()
    path = folder / "Twitter_URL_Corpus_test.txt"
    for line_no, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue  # the TURL test file has empty lines between blocks
        parts = line.strip().split("\t")
        match = _VOTES.match(parts[2].strip()) if len(parts) >= 3 else None
        if match is None:
            raise DataError(f"{path}:{line_no}: expected 'sentence<TAB>sentence<TAB>(n_yes, n_total)'")
        votes = int(match.group(1))
        turl.sentences1.append(parts[0].strip())
        turl.sentences2.append(parts[1].strip())
        turl.labels.append(_paraphrase_label(votes))
        turl.scores.append(votes * 20.0)
    pit = ParaphrasePairs()
    path = folder / "test.data"
    for line_no, line in enumerate(read_lines(path), start=1):
        parts = line.strip().split("\t")
        if len(parts) < 5 or not parts[4].strip().isdigit():
            raise DataError(f"{path}:{line_no}: expected PIT-2015 columns with the expert score (0-5) in column 5")
        votes = int(parts[4])
        pit.sentences1.append(parts[2].strip())
        pit.sentences2.append(parts[3].strip())
        pit.labels.append(_paraphrase_label(votes))
        pit.scores.append(votes * 20.0)
    return {"TURL": turl, "PIT": pit}


@dataclass
class RelevanceQuery:
    """A query with scored candidates and graded relevance of (possibly more) documents."""

    query: str
    candidates: list[str]
    candidate_ids: list[str]
    qrels: dict[str, int]


def load_scidocs(folder: str | Path, split: str = "test") -> dict[str, list[RelevanceQuery]]:
    """``{relation: queries}``; queries or documents without a title are left out as USEB does
    (a relevant document without a title still counts in its query's number of relevant ones)."""
    path = Path(folder) / "data.json"
    data = _json(path)
    if "corpus" not in data or split not in data:
        raise DataError(f"{path}: needs 'corpus' and {split!r}")
    corpus = data["corpus"]

    def title(pid: str) -> str:
        entry = corpus.get(pid) or {}
        return (entry.get("title") or "").strip()

    relations: dict[str, list[RelevanceQuery]] = {}
    for relation, qrels in data[split].items():
        queries = []
        for qid, docs in qrels.items():
            if not title(qid):
                continue
            ids = [d for d in docs if title(d)]
            queries.append(
                RelevanceQuery(title(qid), [title(d) for d in ids], ids, {d: int(r) for d, r in docs.items()})
            )
        relations[relation] = queries
    return relations
