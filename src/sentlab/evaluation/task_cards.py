"""Your own evaluation tasks, declared as data (issue 14): a task card is a small YAML file naming
the files, the columns and the kind of task; paths are relative to the card's folder.

Kinds (scored through any pair scorer, so RankEncoder's Eq. 7 and RSE's relational score work too):

* ``scored-pairs`` - ``file`` with ``columns: [text1, text2, score]``: Spearman (main) and Pearson
  x 100 between the scores and the model's similarities, as STS;
* ``labelled-pairs`` - ``file`` with ``columns: [text1, text2, label]`` (label 0 / 1): average
  precision (main, scikit-learn, as USEB's TwitterPara) and the best-threshold F1 and accuracy over
  the model's similarities (as SentEval's MRPC reports F1), x 100;
* ``retrieval`` - the BEIR / MTEB layout: ``corpus`` (jsonl: ``_id``, ``text``[, ``title``]),
  ``queries`` (jsonl: ``_id``, ``text``) and ``qrels`` (tsv with a header: ``query-id``,
  ``corpus-id``, ``score``; score > 0 is relevant): exact search of every query against the corpus,
  MAP@k (main, ``k`` default 100: precision at each relevant hit in the top k, over the query's
  relevant documents as trec_eval / BEIR; ``map: useb`` divides by the hits in the top k instead, as
  USEB's CQADupStack), nDCG@10, MRR@10 and Recall@k, x 100.

Example card::

    name: support-tickets
    kind: retrieval
    corpus: corpus.jsonl
    queries: queries.jsonl
    qrels: qrels/test.tsv
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sentlab.data.readers import read_table
from sentlab.errors import DataError
from sentlab.evaluation.results import MetricsResult

class TaskCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["scored-pairs", "labelled-pairs", "retrieval"]
    file: str | None = Field(None, description="pairs: a .tsv / .csv (with a header) or .jsonl file")
    columns: list[str] = Field(default_factory=list, description="pairs: [text1, text2, score or label]")
    corpus: str | None = None
    queries: str | None = None
    qrels: str | None = None
    k: int = Field(100, gt=0, description="retrieval: cut-off of MAP@k and Recall@k")
    map: Literal["trec", "useb"] = Field("trec", description="retrieval AP@k divided by the query's relevant "
                                                            "documents (trec, as BEIR / MTEB) or by its hits in "
                                                            "the top k (useb, as USEB's CQADupStack)")
    folder: Path = Field(Path("."), exclude=True)

    def path(self, name: str) -> Path:
        value = getattr(self, name)
        if not value:
            raise DataError(f"task card {self.name}: kind {self.kind} needs '{name}'")
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
    if card.kind != "retrieval" and len(card.columns) != 3:
        raise DataError(f"{path}: columns: kind {card.kind} needs [text1, text2, {'score' if card.kind == 'scored-pairs' else 'label'}]")
    return card


def _numbers(rows: list[tuple[str, ...]], path: Path, column: str) -> np.ndarray:
    try:
        return np.asarray([float(r[2]) for r in rows], dtype=np.float64)
    except ValueError as err:
        raise DataError(f"{path}: column {column!r} is not a number ({err})") from None


def score_scored_pairs(scorer, card: TaskCard) -> MetricsResult:
    from scipy.stats import pearsonr, spearmanr

    path = card.path("file")
    rows = read_table(path, card.columns)
    if len(rows) < 2:
        raise DataError(f"{path}: needs at least 2 pairs")
    gold = _numbers(rows, path, card.columns[2])
    predicted = np.asarray(scorer.score([r[0] for r in rows], [r[1] for r in rows]), dtype=np.float64)
    return MetricsResult("spearman", {"spearman": 100 * float(spearmanr(gold, predicted)[0]),
                                      "pearson": 100 * float(pearsonr(gold, predicted)[0])}, n=len(rows))


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

    path = card.path("file")
    rows = read_table(path, card.columns)
    labels = _numbers(rows, path, card.columns[2])
    if not set(np.unique(labels)) <= {0.0, 1.0} or len(np.unique(labels)) < 2:
        raise DataError(f"{path}: column {card.columns[2]!r} must hold both labels 0 and 1")
    scores = np.asarray(scorer.score([r[0] for r in rows], [r[1] for r in rows]), dtype=np.float64)
    f1, accuracy, threshold = best_threshold_f1(labels, scores)
    return MetricsResult("ap", {"ap": 100 * float(average_precision_score(labels, scores)), "f1": 100 * f1,
                                "accuracy": 100 * accuracy}, n=len(rows), extra={"f1_threshold": threshold})


def _jsonl_texts(path: Path, with_title: bool) -> dict[str, str]:
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    texts = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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


def read_qrels(path: Path) -> dict[str, set[str]]:
    rows = read_table(path, ["query-id", "corpus-id", "score"], fmt="tsv")
    relevant: dict[str, set[str]] = defaultdict(set)
    for query, doc, score in rows:
        try:
            if float(score) > 0:
                relevant[query].add(doc)
        except ValueError:
            raise DataError(f"{path}: score {score!r} is not a number") from None
    return dict(relevant)


def ranking_metrics(hits: Sequence[bool], n_relevant: int, k: int, map_kind: str = "trec") -> dict[str, float]:
    """MAP@k, nDCG@10, MRR@10 and Recall@k of one ranked list (binary relevance); AP@k divided by
    min(relevant, k) (``trec``) or by the hits inside the top k (``useb``; 0 without a hit)."""
    hits = np.asarray(hits, dtype=bool)
    top = hits[:k]
    precision = np.cumsum(top) / np.arange(1, len(top) + 1)
    denominator = min(n_relevant, k) if map_kind == "trec" else top.sum()
    ap = float(precision[top].sum() / denominator) if denominator else 0.0
    gains = hits[:10] / np.log2(np.arange(2, min(10, len(hits)) + 2))
    ideal = (1 / np.log2(np.arange(2, min(10, n_relevant) + 2))).sum()
    first = np.flatnonzero(hits[:10])
    return {f"map@{k}": ap, "ndcg@10": float(gains.sum() / ideal) if ideal else 0.0,
            "mrr@10": float(1 / (first[0] + 1)) if len(first) else 0.0,
            f"recall@{k}": float(top.sum() / n_relevant) if n_relevant else 0.0}


def score_retrieval(scorer, card: TaskCard, device="cpu") -> MetricsResult:
    from sentlab.evaluation.useb import query_matrix, top_k, unit_rows

    corpus = _jsonl_texts(card.path("corpus"), with_title=True)
    queries = _jsonl_texts(card.path("queries"), with_title=False)
    relevant = read_qrels(card.path("qrels"))
    asked = [q for q in queries if relevant.get(q)]
    if not asked:
        raise DataError(f"{card.path('qrels')}: no query of {card.path('queries')} has a relevant document")
    doc_ids = list(corpus)
    docs = unit_rows(scorer.encode([corpus[d] for d in doc_ids]))
    rows = query_matrix(scorer.encode, [queries[q] for q in asked], getattr(scorer, "query_rows", None))
    _, index = top_k(rows, docs, max(card.k, 10), device=device)
    per_query = [ranking_metrics([doc_ids[j] in relevant[q] for j in index[i]], len(relevant[q]), card.k, card.map)
                 for i, q in enumerate(asked)]
    scores = {name: 100 * float(np.mean([m[name] for m in per_query])) for name in per_query[0]}
    return MetricsResult(f"map@{card.k}", scores, n=len(asked),
                         extra={"corpus": len(doc_ids), "queries_without_judgements": len(queries) - len(asked)})


def score_task_card(scorer, card: TaskCard, device="cpu") -> MetricsResult:
    if card.kind == "scored-pairs":
        return score_scored_pairs(scorer, card)
    if card.kind == "labelled-pairs":
        return score_labelled_pairs(scorer, card)
    return score_retrieval(scorer, card, device)
