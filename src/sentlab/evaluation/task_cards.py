"""Your own evaluation tasks, declared as data: a task card is a small YAML file naming
the files, the columns and the kind of task; paths are relative to the card's folder.

Kinds (scored through any pair scorer, so RankEncoder's Eq. 7 and RSE's relational score work too):

* ``scored-pairs`` - ``file`` with ``columns: [text1, text2, score]``: Spearman (main) and Pearson
  x 100 between the scores and the model's similarities, as STS;
* ``labelled-pairs`` - ``file`` with ``columns: [text1, text2, label]`` (label 0 / 1): average
  precision (main, scikit-learn, as USEB's TwitterPara) and the best-threshold F1 and accuracy over
  the model's similarities (as SentEval's MRPC reports F1), x 100;
* ``retrieval`` - the BEIR / MTEB layout: ``corpus`` (jsonl: ``_id``, ``text``[, ``title``]),
  ``queries`` (jsonl: ``_id``, ``text``) and ``qrels`` (tsv with a header: ``query-id``,
  ``corpus-id``, ``score``: a graded gain, 0 judged not relevant): exact search of every query against
  the corpus, nDCG@10 (main unless ``main_metric`` names another), MAP@k (``k`` default 100:
  trec_eval's ``map_cut``; ``map: useb`` divides by the hits in the top k instead, as USEB's
  CQADupStack), MRR@10 and Recall@k, x 100;
* ``reranking`` - ``file`` (jsonl, one row per query: ``query``, ``positive`` and ``negative`` lists of
  candidate texts, the MTEB re-ranking layout; ``columns`` renames the three fields): each query's
  candidates ranked by the scorer, MAP (main: AP over the query's candidates, as USEB's AskUbuntu and
  MTEB) and MRR@10, x 100; a query without a positive or a negative candidate is left out (counted);
* ``classification`` - ``file`` (training sentences) and ``test`` with ``columns: [text, label]``:
  logistic regression on the frozen embeddings as SentEval's TREC (C chosen by stratified k-fold CV
  on ``file``, refit, ``test`` scored once; :func:`sentlab.evaluation.transfer.kfold_selected_accuracy`),
  accuracy (main) and macro F1, x 100; without ``test``, SentEval's nested CV on ``file`` (as MR / CR).

Every data key (``file``, ``test``, ``corpus``, ``queries``, ``qrels``) takes a file as above, or a
``datasets`` source (:mod:`sentlab.data.datasets_source`): a ``save_to_disk`` folder, an ``.arrow``
or ``.parquet`` file or ``hf:OWNER/NAME``, as a string (its ``train`` split) or as a mapping ``{source, split,
subset}``, e.g. an MTEB retrieval dataset on the hub::

    corpus: {source: hf:mteb/scifact, subset: corpus, split: corpus}
    queries: {source: hf:mteb/scifact, subset: queries, split: queries}
    qrels: {source: hf:mteb/scifact, subset: default, split: test}

A source's columns are the file's (``_id``, ``text``[, ``title``]; ``query-id``, ``corpus-id``,
``score``; the card's ``columns``); a source, split, subset or column that is not there is one line.

Retrieval and reranking cards encode queries and documents with the model's own query and document
prompts, or the card's ``query_prompt`` / ``document_prompt`` (:mod:`sentlab.encoders.prompts`); the
result records which (``extra["prompts"]``).

Every result carries its items and a 95% percentile bootstrap interval of the headline over them
(``extra["items"]``, ``extra["ci95"]``; :mod:`sentlab.evaluation.uncertainty`), so that two models
scored on the same card can be compared pairwise (``sentlab report``, ``sentlab adapt``). The one
exception is classification without a ``test`` file (no held-out items of its own).

Example card::

    name: support-tickets
    kind: retrieval
    corpus: corpus.jsonl
    queries: queries.jsonl
    qrels: qrels/test.tsv
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from sentlab.data.datasets_source import is_datasets_source, open_source, source_columns
from sentlab.data.readers import read_table, read_text, table_line
from sentlab.encoders.prompts import prompted
from sentlab.errors import DataError
from sentlab.evaluation.results import MetricsResult
from sentlab.evaluation.uncertainty import (
    bootstrap_interval,
    items_key,
    mean_items,
    pair_items,
)

DEFAULT_COLUMNS = {"reranking": ["query", "positive", "negative"], "classification": ["text", "label"]}


DATA_KEYS = ("file", "test", "corpus", "queries", "qrels")


class CardSource(BaseModel):
    """A card's data held by ``datasets``: ``source`` (a ``save_to_disk`` folder, an ``.arrow`` or
    ``.parquet`` file or ``hf:OWNER/NAME``), the ``split`` to read (default ``train``) and an ``hf:`` dataset's ``subset``."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1)
    split: str | None = None
    subset: str | None = None


class TaskCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["scored-pairs", "labelled-pairs", "retrieval", "reranking", "classification"]
    file: str | CardSource | None = Field(
        None,
        description="pairs, re-ranking, classification (training part): a .tsv / .csv (with a header) or .jsonl "
        "file, or a datasets source",
    )
    test: str | CardSource | None = Field(None, description="classification: the held-out sentences")
    columns: list[str] = Field(
        default_factory=list, description="pairs: [text1, text2, score or label]; classification: [text, label]"
    )
    corpus: str | CardSource | None = None
    queries: str | CardSource | None = None
    qrels: str | CardSource | None = None
    k: int = Field(100, gt=0, description="retrieval: cut-off of MAP@k and Recall@k")
    map: Literal["trec", "useb"] = Field(
        "trec",
        description="retrieval AP@k divided by the query's relevant documents (trec: trec_eval's map_cut, as BEIR "
        "and MTEB compute it) or by its hits in the top k (useb, as USEB's CQADupStack)",
    )
    main_metric: str | None = Field(
        None,
        description="retrieval: the headline, which a dev card selects by: ndcg@10 (unset), map@k, recall@k or "
        "mrr@10 (k the card's k)",
    )
    unknown_ids: Literal["error", "skip"] = Field(
        "error",
        description="retrieval: qrels that name a query or "
        "document id absent from queries / corpus stop with an error "
        "(error), or are left out and counted in the result (skip)",
    )
    query_prompt: str | None = Field(
        None,
        description="retrieval, reranking: the text put before each query (unset: the model's own query prompt; "
        "'': none)",
    )
    document_prompt: str | None = Field(
        None,
        description="retrieval, reranking: the text put before each document or candidate (unset: the model's own "
        "document / passage / corpus prompt; '': none)",
    )
    folder: Path = Field(Path("."), exclude=True)

    @property
    def headline(self) -> str:
        """The card's headline metric (retrieval: ``main_metric``, nDCG@10 unset)."""
        if self.kind == "retrieval":
            return self.main_metric or "ndcg@10"
        return {"scored-pairs": "spearman", "labelled-pairs": "ap", "reranking": "map", "classification": "accuracy"}[
            self.kind
        ]

    @model_validator(mode="after")
    def _prompts_of_queries(self) -> TaskCard:
        for key in ("query_prompt", "document_prompt"):
            if getattr(self, key) is not None and self.kind not in ("retrieval", "reranking"):
                raise ValueError(f"{key}: read for kinds retrieval and reranking only, not {self.kind}")
        return self

    def prompts(self, scorer, where: str = "") -> dict[str, str]:
        """The query and document prompts this card encodes with for ``scorer``'s model
        (:func:`sentlab.encoders.prompts.resolve_prompts`)."""
        from sentlab.encoders.prompts import calibrate_for_prompts, model_of, resolve_prompts

        where = where or f"task card {self.name}"
        prompts = resolve_prompts(model_of(scorer), self.query_prompt, self.document_prompt, where)
        calibrate_for_prompts(scorer, list(prompts.values()))  # int8's ranges of the prompted texts
        return prompts

    @model_validator(mode="after")
    def _known_headline(self) -> TaskCard:
        if self.main_metric is None:
            return self
        if self.kind != "retrieval":
            raise ValueError(f"main_metric: read for kind retrieval only, not {self.kind}")
        known = ("ndcg@10", f"map@{self.k}", f"recall@{self.k}", "mrr@10")
        if self.main_metric not in known:
            raise ValueError(f"main_metric: {self.main_metric!r} is not one of {', '.join(known)} (k: {self.k})")
        return self

    def files(self) -> list[Path]:
        """The local data files the card names (``file``, ``test``, ``corpus``, ``queries``, ``qrels``;
        a ``datasets`` source is in :meth:`sources`)."""
        return [self.path(name) for name in DATA_KEYS if getattr(self, name) and self.held(name) is None]

    def identity(self) -> str:
        """A sha256 of everything that makes this card's scores: its settings and the bytes of its data
        (each file's sha256, each ``datasets`` source's own fingerprint). A card whose data changed
        under the same name is another card: its old scores are not this one's."""
        import hashlib

        from sentlab.cache import file_sha256
        from sentlab.data.datasets_source import source_identity

        parts = {
            "card": self.model_dump(mode="json", exclude={"folder"}),
            "files": {str(path): file_sha256(path) for path in self.files() if path.is_file()},
            "sources": {key: source_identity(self.dataset(key)) for key in self.sources()},
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()

    def sources(self) -> dict[str, CardSource]:
        """The card's data keys held by ``datasets``, each with its source, split and subset."""
        return {name: self.held(name) for name in DATA_KEYS if getattr(self, name) and self.held(name) is not None}

    def held(self, name: str) -> CardSource | None:
        """Key ``name`` as a ``datasets`` source (its path resolved against the card's folder), or None
        for a file."""
        value = getattr(self, name)
        if isinstance(value, str):
            local = self._resolved(value)
            return CardSource(source=local) if is_datasets_source(local) else None
        return value.model_copy(update={"source": self._resolved(value.source)}) if value else None

    def _resolved(self, value: str) -> str:
        if value.startswith("hf:") or Path(value).is_absolute():
            return value
        return str(self.folder / value)

    def where(self, name: str) -> str:
        """Key ``name``'s data, as an error message names it."""
        held = self.held(name)
        if held is None:
            return str(self.path(name))
        return held.source + "".join(
            f" {key} {getattr(held, key)}" for key in ("subset", "split") if getattr(held, key)
        )

    def name_of(self, name: str) -> str:
        """Key ``name``'s data, short: the file's name, or the source as :meth:`where` gives it."""
        return self.path(name).name if self.held(name) is None else self.where(name)

    def dataset(self, name: str):
        """Key ``name``'s ``datasets`` table (one split, memory-mapped), or None for a file."""
        held = self.held(name)
        if held is None:
            return None
        try:
            return open_source(held.source, held.split, held.subset)
        except DataError as err:
            raise DataError(f"task card {self.name}: {name}: {err}") from None

    def path(self, name: str) -> Path:
        value = getattr(self, name)
        if not value:
            raise DataError(f"task card {self.name}: kind {self.kind} needs '{name}'")
        if not isinstance(value, str):
            raise DataError(f"task card {self.name}: '{name}' is a datasets source, not a file")
        path = Path(value)
        return path if path.is_absolute() else self.folder / path


def load_task_card(path: str | Path) -> TaskCard:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: task card not found")
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable YAML task card ({str(err).splitlines()[0]})") from None
    if not isinstance(tree, dict):
        raise DataError(f"{path}: a task card is a mapping (name, kind, files)")
    try:
        card = TaskCard.model_validate({**tree, "folder": path.parent})
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"])) or "card"
        raise DataError(f"{path}: {where}: {first['msg']}") from None
    if card.kind in DEFAULT_COLUMNS and not card.columns:
        card.columns = list(DEFAULT_COLUMNS[card.kind])
    wanted = {
        "scored-pairs": "[text1, text2, score]",
        "labelled-pairs": "[text1, text2, label]",
        "reranking": "[query, positive, negative]",
        "classification": "[text, label]",
    }.get(card.kind)
    if wanted and len(card.columns) != wanted.count(",") + 1:
        raise DataError(f"{path}: columns: kind {card.kind} needs {wanted}")
    for name in DATA_KEYS:
        value = getattr(card, name)
        if isinstance(value, CardSource) and card.held(name) and not is_datasets_source(card.held(name).source):
            raise DataError(
                f"{path}: {name}: {value.source} is not a datasets source (a save_to_disk folder, an .arrow "
                "or .parquet file or hf:OWNER/NAME); give a file as a string, without split or subset"
            )
    return card


def _rows(card: TaskCard, name: str, columns: Sequence[str], fmt: str | None = None) -> list[tuple]:
    """Rows of ``columns`` of key ``name``: a file through :func:`read_table`, or a ``datasets``
    source's columns (text and numbers as strings, as a file gives them; lists kept as lists)."""
    table = card.dataset(name)
    if table is None:
        return read_table(card.path(name), columns, fmt)
    where = card.where(name)
    table = source_columns(table, columns, None, None, where)
    if len(table) == 0:
        raise DataError(f"{where}: no rows")
    rows = []
    for index, record in enumerate(table):
        row = []
        for column in columns:
            value = record[column]
            if value is None or (isinstance(value, str) and not value.strip()):
                raise DataError(f"{where} row {index + 1}: empty column {column!r}")
            row.append(value if isinstance(value, list) else str(value))
        rows.append(tuple(row))
    return rows


def _at(card: TaskCard, name: str, index: int, fmt: str | None = None) -> str:
    """Where row ``index`` of key ``name`` is: the file's line, or the source's row."""
    if card.held(name) is None:
        path = card.path(name)
        return f"{path}:{table_line(path, index, fmt)}"
    return f"{card.where(name)} row {index + 1}"


def _numbers(rows: list[tuple[str, ...]], card: TaskCard, column: str) -> np.ndarray:
    values = []
    for index, row in enumerate(rows):
        try:
            values.append(float(row[2]))
        except ValueError:
            raise DataError(f"{_at(card, 'file', index)}: {column} {row[2]!r} is not a number") from None
    return np.asarray(values, dtype=np.float64)


def score_pairs(scorer, sentences1: Sequence[str], sentences2: Sequence[str], gold) -> MetricsResult:
    """Spearman (main) and Pearson x 100 of the scorer's similarities against gold scores, with the
    pairs kept as items (a bootstrap interval needs them)."""
    from scipy.stats import pearsonr, spearmanr

    gold = np.asarray(gold, dtype=np.float64)
    predicted = np.asarray(scorer.score(list(sentences1), list(sentences2)), dtype=np.float64)
    return MetricsResult(
        "spearman",
        {"spearman": 100 * float(spearmanr(gold, predicted)[0]), "pearson": 100 * float(pearsonr(gold, predicted)[0])},
        n=len(gold),
        extra={"items": pair_items("spearman", gold, predicted, items_key(zip(sentences1, sentences2)))},
    )


def score_scored_pairs(scorer, card: TaskCard) -> MetricsResult:
    rows = _rows(card, "file", card.columns)
    if len(rows) < 2:
        raise DataError(f"{card.where('file')}: needs at least 2 pairs")
    gold = _numbers(rows, card, card.columns[2])
    return score_pairs(scorer, [r[0] for r in rows], [r[1] for r in rows], gold)


def best_threshold_f1(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float, float]:
    """(F1, accuracy, threshold) of the best "similar when score >= t" rule over the observed scores."""
    order = np.argsort(-scores, kind="stable")
    sorted_scores, sorted_labels = scores[order], labels[order]
    positives = sorted_labels.sum()
    true_pos = np.cumsum(sorted_labels)
    predicted = np.arange(1, len(scores) + 1)
    last_of_tie = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]  # a threshold takes whole ties
    f1 = np.where(last_of_tie, 2 * true_pos / (predicted + positives), -1.0)
    best = int(np.argmax(f1))
    true_neg = (len(scores) - positives) - (predicted[best] - true_pos[best])
    accuracy = (true_pos[best] + true_neg) / len(scores)
    return float(f1[best]), float(accuracy), float(sorted_scores[best])


def score_labelled_pairs(scorer, card: TaskCard) -> MetricsResult:
    from sklearn.metrics import average_precision_score

    rows = _rows(card, "file", card.columns)
    labels = _numbers(rows, card, card.columns[2])
    if not set(np.unique(labels)) <= {0.0, 1.0} or len(np.unique(labels)) < 2:
        raise DataError(f"{card.where('file')}: column {card.columns[2]!r} must hold both labels 0 and 1")
    scores = np.asarray(scorer.score([r[0] for r in rows], [r[1] for r in rows]), dtype=np.float64)
    f1, accuracy, threshold = best_threshold_f1(labels, scores)
    return MetricsResult(
        "ap",
        {"ap": 100 * float(average_precision_score(labels, scores)), "f1": 100 * f1, "accuracy": 100 * accuracy},
        n=len(rows),
        extra={"f1_threshold": threshold, "items": pair_items("ap", labels, scores, items_key(r[:2] for r in rows))},
    )


def _id_texts(card: TaskCard, name: str, with_title: bool) -> dict[str, str]:
    """id -> text of a corpus or queries key (BEIR's ``_id``, ``text``[, ``title``] rows), the title
    put before the text."""
    table = card.dataset(name)
    if table is not None:
        where = card.where(name)
        title = with_title and "title" in table.column_names
        table = source_columns(table, ["_id", "text", *(["title"] if title else [])], None, None, where)
        texts = {}  # as the JSONL files are read: an empty text or title is kept, the title before the text
        for row in table:
            text = str(row["text"] or "")
            texts[str(row["_id"])] = f"{row['title']} {text}".strip() if title and row["title"] else text
        if not texts:
            raise DataError(f"{where}: no rows")
        return texts
    path = card.path(name)
    texts = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, text = str(row["_id"]), str(row["text"])
        except (ValueError, KeyError, TypeError):
            raise DataError(f"{path}:{number}: expected a JSON object with '_id' and 'text'") from None
        title = str(row.get("title") or "") if with_title else ""
        texts[key] = f"{title} {text}".strip() if title else text
    if not texts:
        raise DataError(f"{path}: no rows")
    return texts


def read_qrels(card: TaskCard) -> dict[str, dict[str, float]]:
    """query id -> {document id: its graded relevance} for the judgements above 0 (relevant; trec_eval
    reads integer grades, where that is 1 and above); the grades are kept as nDCG's gains."""
    rows = _rows(card, "qrels", ["query-id", "corpus-id", "score"], fmt="tsv")
    relevant: dict[str, dict[str, float]] = defaultdict(dict)
    for index, (query, doc, score) in enumerate(rows):
        try:
            grade = float(score)
        except ValueError:
            raise DataError(f"{_at(card, 'qrels', index, 'tsv')}: score {score!r} is not a number") from None
        if not math.isfinite(grade):
            raise DataError(f"{_at(card, 'qrels', index, 'tsv')}: score {score!r} is not a finite number")
        if grade > 0:
            relevant[query][doc] = grade
    return dict(relevant)


def known_judgements(
    relevant: dict[str, dict[str, float]], queries: dict[str, str], corpus: dict[str, str], card: TaskCard
) -> tuple[dict[str, dict[str, float]], int]:
    """The relevance judgements whose query and document exist, and how many were left out; with
    ``unknown_ids: error`` (the default) any unknown id is an error naming it: a judgement that can
    never be met would score 0 silently."""
    unknown_queries = sorted(q for q in relevant if q not in queries)
    unknown_docs = sorted({d for docs in relevant.values() for d in docs if d not in corpus})
    if not unknown_queries and not unknown_docs:
        return relevant, 0
    if card.unknown_ids == "error":
        what = (
            f"query id {unknown_queries[0]!r} is not in {card.name_of('queries')}"
            if unknown_queries
            else f"corpus id {unknown_docs[0]!r} is not in {card.name_of('corpus')}"
        )
        count = len(unknown_queries) + len(unknown_docs)
        raise DataError(
            f"{card.where('qrels')}: {what} ({count} unknown id(s); fix the ids, or set "
            "'unknown_ids: skip' in the card to leave them out and count them)"
        )
    kept = {q: {d: g for d, g in docs.items() if d in corpus} for q, docs in relevant.items() if q in queries}
    left_out = sum(len(docs) for docs in relevant.values()) - sum(len(docs) for docs in kept.values())
    return kept, left_out


def ranking_metrics(
    ranked: Sequence[float], relevant: int | Sequence[float], k: int, map_kind: str = "trec"
) -> dict[str, float]:
    """MAP@k, nDCG@10, MRR@10 and Recall@k of one ranked list, as trec_eval defines them (map_cut,
    ndcg_cut, recip_rank cut at 10, recall): ``ranked`` the graded relevance of each ranked document
    (0: not relevant; booleans are grades 0 / 1), ``relevant`` the grades of every relevant document of
    the query (or their count, each of grade 1). nDCG's gain is the grade itself (trec_eval's); the
    others read relevance as a grade above 0. AP@k is divided by the relevant documents (``trec``) or
    by the hits inside the top k (``useb``; 0 without a hit)."""
    grades = np.asarray(ranked, dtype=np.float64)
    judged = np.ones(relevant) if isinstance(relevant, int | np.integer) else np.asarray(relevant, dtype=np.float64)
    n_relevant = int((judged > 0).sum())
    hits = grades > 0
    top = hits[:k]
    precision = np.cumsum(top) / np.arange(1, len(top) + 1)
    denominator = n_relevant if map_kind == "trec" else top.sum()
    ap = float(precision[top].sum() / denominator) if denominator else 0.0
    gains = grades[:10] / np.log2(np.arange(2, min(10, len(grades)) + 2))
    best = np.sort(judged[judged > 0])[::-1][:10]
    ideal = (best / np.log2(np.arange(2, len(best) + 2))).sum()
    first = np.flatnonzero(hits[:10])
    return {
        f"map@{k}": ap,
        "ndcg@10": float(gains.sum() / ideal) if ideal else 0.0,
        "mrr@10": float(1 / (first[0] + 1)) if len(first) else 0.0,
        f"recall@{k}": float(top.sum() / n_relevant) if n_relevant else 0.0,
    }


def score_retrieval(scorer, card: TaskCard, device="cpu") -> MetricsResult:
    from sentlab.evaluation.useb import query_matrix, top_k, unit_rows

    corpus = _id_texts(card, "corpus", with_title=True)
    queries = _id_texts(card, "queries", with_title=False)
    relevant, left_out = known_judgements(read_qrels(card), queries, corpus, card)
    asked = [q for q in queries if relevant.get(q)]
    if not asked:
        raise DataError(f"{card.where('qrels')}: no query of {card.where('queries')} has a relevant document")
    prompts = card.prompts(scorer)
    doc_ids = list(corpus)
    docs = unit_rows(scorer.encode(prompted([corpus[d] for d in doc_ids], prompts["document"])))
    rows = query_matrix(
        scorer.encode, prompted([queries[q] for q in asked], prompts["query"]), getattr(scorer, "query_rows", None)
    )
    _, index = top_k(rows, docs, max(card.k, 10), device=device)
    per_query = [
        ranking_metrics(
            [relevant[q].get(doc_ids[j], 0.0) for j in index[i]], list(relevant[q].values()), card.k, card.map
        )
        for i, q in enumerate(asked)
    ]
    scores = {name: 100 * float(np.mean([m[name] for m in per_query])) for name in per_query[0]}
    key = items_key([q, sorted(relevant[q].items())] for q in asked)
    return MetricsResult(
        card.headline,
        scores,
        n=len(asked),
        extra={
            "corpus": len(doc_ids),
            "queries_without_judgements": len(queries) - len(asked),
            "judgements_with_unknown_ids": left_out,
            "prompts": prompts,
            "items": mean_items((m[card.headline] for m in per_query), key),
        },
    )


def _text_list(value, where: str, field: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(f"{where}: {field!r} must be a list of non-empty texts")
    return value


def _reranking_rows(card: TaskCard) -> list[tuple[str, dict]]:
    """(where, row) of a reranking card's queries: the JSONL file's objects by line, or the source's rows."""
    table = card.dataset("file")
    if table is not None:
        table = source_columns(table, card.columns, None, None, card.where("file"))
        return [(f"{card.where('file')} row {index + 1}", row) for index, row in enumerate(table)]
    path = card.path("file")
    rows = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        rows.append((f"{path}:{number}", row))
    return rows


def score_reranking(scorer, card: TaskCard) -> MetricsResult:
    from sentlab.evaluation.useb import ranked_precision_metrics

    query_field, positive_field, negative_field = card.columns
    samples, skipped = [], 0
    for where, row in _reranking_rows(card):
        try:
            query = row[query_field]
        except (KeyError, TypeError):
            raise DataError(
                f"{where}: expected a JSON object with {query_field!r}, {positive_field!r} and {negative_field!r}"
            ) from None
        if not isinstance(query, str) or not query.strip():
            raise DataError(f"{where}: {query_field!r} must be a non-empty text")
        positives = _text_list(row.get(positive_field) or [], where, positive_field)
        negatives = _text_list(row.get(negative_field) or [], where, negative_field)
        if not positives or not negatives:
            skipped += 1
            continue
        samples.append((query, positives, negatives))
    if not samples:
        raise DataError(f"{card.where('file')}: no query has both a positive and a negative candidate")
    prompts = card.prompts(scorer)
    queries = prompted([q for q, pos, neg in samples for _ in range(len(pos) + len(neg))], prompts["query"])
    candidates = prompted([c for _, pos, neg in samples for c in (*pos, *neg)], prompts["document"])
    scores = np.asarray(scorer.score(queries, candidates), dtype=np.float64)  # one call: each text encoded once
    ap, reciprocal_rank, start = [], [], 0
    for _, pos, neg in samples:
        chunk = scores[start : start + len(pos) + len(neg)]
        start += len(chunk)
        ranked = np.argsort(-chunk, kind="stable") < len(pos)  # the positives come first in each chunk
        metrics = ranked_precision_metrics(ranked)  # USEB's AskUbuntu metrics: AP over all candidates
        ap.append(metrics["map"])
        reciprocal_rank.append(metrics["mrr"] if metrics["mrr"] >= 0.1 else 0.0)  # MRR@10: first hit in the top 10
    key = items_key([q, pos, neg] for q, pos, neg in samples)
    return MetricsResult(
        "map",
        {"map": 100 * float(np.mean(ap)), "mrr@10": 100 * float(np.mean(reciprocal_rank))},
        n=len(samples),
        extra={"queries_without_both_labels": skipped, "prompts": prompts, "items": mean_items(ap, key)},
    )


def _labelled_sentences(card: TaskCard, name: str) -> tuple[list[str], np.ndarray, list[str]]:
    rows = _rows(card, name, card.columns)
    if not rows:
        raise DataError(f"{card.where(name)}: no rows")
    names = sorted({r[1] for r in rows})
    return [r[0] for r in rows], np.asarray([names.index(r[1]) for r in rows]), names


def score_classification(scorer, card: TaskCard, kfold: int = 10, n_jobs: int | None = None) -> MetricsResult:
    from sklearn.metrics import f1_score

    from sentlab.evaluation.transfer import kfold_selected_accuracy, nested_cv_accuracy

    texts, labels, names = _labelled_sentences(card, "file")
    if len(names) < 2:
        raise DataError(f"{card.where('file')}: column {card.columns[1]!r} needs at least two labels")
    embed = lambda sentences: np.asarray(scorer.encode(sentences), dtype=np.float64)  # noqa: E731
    if card.test is None:
        scores = nested_cv_accuracy(embed(texts), labels, kfold, n_jobs=n_jobs)
        return MetricsResult(
            "accuracy",
            {"accuracy": scores["accuracy"]},
            n=len(texts),
            extra={"protocol": "nested-cv", "kfold": kfold, "C": scores["C"]},
        )
    test_texts, test_raw, test_names = _labelled_sentences(card, "test")
    unknown = sorted(set(test_names) - set(names))
    if unknown:
        raise DataError(f"{card.where('test')}: labels not in {card.name_of('file')}: {', '.join(unknown[:5])}")
    test_labels = np.asarray([names.index(test_names[i]) for i in test_raw])
    scores, predicted = kfold_selected_accuracy(
        embed(texts), labels, embed(test_texts), test_labels, kfold, n_jobs=n_jobs
    )
    correct = (predicted == test_labels).astype(np.float64)
    return MetricsResult(
        "accuracy",
        {
            "accuracy": 100 * float(correct.mean()),
            "f1_macro": 100 * float(f1_score(test_labels, predicted, average="macro")),
        },
        n=len(test_texts),
        extra={
            "protocol": "kfold-selected",
            "kfold": kfold,
            "C": scores["C"],
            "items": mean_items(correct, items_key(zip(test_texts, test_labels.tolist()))),
        },
    )


def score_task_card(scorer, card: TaskCard, device="cpu", interval: bool = True) -> MetricsResult:
    """The card's scores; with ``interval``, the 95% bootstrap interval of the headline too."""
    if card.kind == "scored-pairs":
        result = score_scored_pairs(scorer, card)
    elif card.kind == "labelled-pairs":
        result = score_labelled_pairs(scorer, card)
    elif card.kind == "retrieval":
        result = score_retrieval(scorer, card, device)
    elif card.kind == "reranking":
        result = score_reranking(scorer, card)
    else:
        result = score_classification(scorer, card)
    return with_interval(result) if interval else result


def with_interval(result: MetricsResult) -> MetricsResult:
    """Add the 95% bootstrap interval of the headline over the result's items (when it keeps them)."""
    items = result.extra.get("items")
    if items is not None and result.n >= 2:
        result.extra["ci95"] = {result.main_metric: list(bootstrap_interval(items))}
    return result


class TaskCardEvaluator(SentenceEvaluator):
    """A task card as the trainer's dev evaluator (``eval.dev_task: my-dev.yaml``): the card's headline
    as a fraction (``eval_<card name>_<main metric>``, e.g. ``eval_tickets-dev_map@100``), so the
    trainer keeps the checkpoint that is best on the user's own dev set. ``scorer_factory`` turns the
    model being trained into a pair scorer (cosine by default; RSE passes its relational scorer)."""

    def __init__(self, card: TaskCard, scorer_factory=None, batch_size: int = 128):
        super().__init__()
        self.card = card
        self.name = card.name
        self.batch_size = batch_size
        self.scorer_factory = scorer_factory or self._cosine

    def _cosine(self, model):
        from sentlab.evaluation.scoring import CosineScorer

        return CosineScorer(model, batch_size=self.batch_size, name=self.name)

    def scored_by(self, scorer_factory) -> TaskCardEvaluator:
        return TaskCardEvaluator(self.card, scorer_factory, self.batch_size)

    @property
    def main_metric(self) -> str:
        return self.card.headline

    def __call__(self, model, output_path=None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        result = score_task_card(self.scorer_factory(model), self.card, device=model.device, interval=False)
        self.primary_metric = result.main_metric
        metrics = self.prefix_name_to_metrics({k: v / 100 for k, v in result.scores.items()}, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
