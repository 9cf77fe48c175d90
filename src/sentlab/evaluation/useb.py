"""USEB (TSDAE paper, Sec. 4.1 and its ``useb`` toolkit): titles only, cosine similarity.

Metrics, each x 100, as the toolkit computes them (with ``items``, each result also keeps what its
headline is computed from, ``extra["items"]``, :mod:`sentlab.evaluation.uncertainty`: per-query AP,
per-forum / per-set / per-relation parts):

* AskUbuntu - MAP over the 20 BM25 candidates of each test query (queries without a similar
  question are skipped); candidates are ranked by cosine, ties kept in BM25 order. AP of a query is
  the mean of precision@k over the ranks k of its relevant candidates. P@1, P@5 and MRR beside it.
* CQADupStack - per forum, every query searches the forum's whole title pool; MAP@100 is
  scikit-learn's average precision of the top-100 list (hits among those 100 only; 0 for a query
  with no hit in its top 100 - the toolkit's definition); the headline averages the forums. The
  search is exact: normalised float32 vectors, matrix products over blocks of queries and
  ``torch.topk`` (the pool never has to fit in one similarity matrix).
* TwitterPara - average precision (scikit-learn) of the cosine scores against the binary gold
  labels of TURL and of PIT-2015 (pairs with 3 votes left out), averaged; Spearman against the
  votes beside it.
* SciDocs - MAP (trec_eval's definition: precision at each relevant document's rank, summed and
  divided by the query's number of relevant documents; ranking by score, ties by document id
  descending as trec_eval breaks them) over the candidates of cite, co-cite, co-read and co-view,
  averaged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score

from sentlab.data.useb import (
    USEB_TASKS,
    ParaphrasePairs,
    RelevanceQuery,
    RerankQuery,
    RetrievalForum,
    load_askubuntu,
    load_cqadupstack,
    load_scidocs,
    load_twitterpara,
    missing_data,
    task_folder,
)
from sentlab.encoders.prompts import prompted
from sentlab.evaluation.results import EvalReport, MetricsResult
from sentlab.evaluation.uncertainty import (
    items_key,
    mean_items,
    pair_items,
    parts_items,
)

VectorFn = Callable[[Sequence[str]], np.ndarray]  # rows whose cosine is the model's similarity
MAP_CUTOFF = 100
# Asymmetric scorers (RSE's relational score) also give query rows: the score of (query, text) is the
# inner product of the query row with the text's unit row. Without them a query is a unit row too.


def unit_rows(vectors: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Rows scaled to length 1, as ``dtype`` (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=dtype)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def query_matrix(vectors: VectorFn, texts: Sequence[str], query_rows: VectorFn | None = None) -> np.ndarray:
    """The rows that score ``texts`` as queries: ``query_rows`` when the scorer has them, else unit rows."""
    return unit_rows(vectors(texts)) if query_rows is None else np.asarray(query_rows(texts), dtype=np.float32)


def _encode_unique(
    vectors: VectorFn, texts: Iterable[str], query_rows: VectorFn | None = None
) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    return dict(zip(unique, query_matrix(vectors, unique, query_rows))) if unique else {}


def _query_side(
    vectors: VectorFn, texts: Iterable[str], rows: dict[str, np.ndarray], query_rows: VectorFn | None
) -> dict[str, np.ndarray]:
    return rows if query_rows is None else _encode_unique(vectors, texts, query_rows)


def ranked_precision_metrics(relevant_in_order: Sequence[bool]) -> dict[str, float]:
    """AP, P@1, P@5 and reciprocal rank of one ranked candidate list (USEB's AskUbuntu metrics)."""
    hits = np.asarray(relevant_in_order, dtype=bool)
    precision_at = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return {
        "map": float(precision_at[hits].mean()),
        "p@1": float(precision_at[0]),
        "p@5": float(precision_at[min(4, len(hits) - 1)]),
        "mrr": float(1.0 / (np.argmax(hits) + 1)),
    }


def score_askubuntu(
    vectors: VectorFn, queries: list[RerankQuery], query_rows: VectorFn | None = None, items: bool = False
) -> MetricsResult:
    kept = [q for q in queries if q.relevant & set(q.candidate_ids)]
    rows = _encode_unique(vectors, [t for q in kept for t in (q.query, *q.candidates)])
    asked = _query_side(vectors, [q.query for q in kept], rows, query_rows)
    per_query = []
    for q in kept:
        scores = np.stack([rows[c] for c in q.candidates]) @ asked[q.query]
        order = np.argsort(-scores, kind="stable")  # ties stay in BM25 order
        per_query.append(ranked_precision_metrics([q.candidate_ids[i] in q.relevant for i in order]))
    scores = {k: 100 * float(np.mean([m[k] for m in per_query])) for k in ("map", "p@1", "p@5", "mrr")}
    extra: dict = {"n_queries_skipped_no_relevant_candidate": len(queries) - len(kept)}
    if items:
        extra["items"] = mean_items((m["map"] for m in per_query), items_key(q.query for q in kept))
    return MetricsResult("map", scores, n=len(kept), extra=extra)


def top_k(
    queries: np.ndarray, pool: np.ndarray, k: int, block: int = 1024, device: str | torch.device = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` inner products of each query row against the pool (scores, indices)."""
    pool_t = torch.as_tensor(pool, device=device)
    k = min(k, len(pool))
    scores, indices = [], []
    for start in range(0, len(queries), block):
        sims = torch.as_tensor(queries[start : start + block], device=device) @ pool_t.T
        top = torch.topk(sims, k, dim=1)
        scores.append(top.values.cpu().numpy())
        indices.append(top.indices.cpu().numpy())
    return np.concatenate(scores), np.concatenate(indices)


def map_at_k(top_scores: np.ndarray, top_hits: np.ndarray) -> float:
    """USEB's AP@k of one query from its top-k scores and hit flags (0 without a hit)."""
    return float(average_precision_score(top_hits, top_scores)) if top_hits.any() else 0.0


def score_cqadupstack(
    vectors: VectorFn,
    forums: dict[str, RetrievalForum],
    k: int = MAP_CUTOFF,
    device: str | torch.device = "cpu",
    query_rows: VectorFn | None = None,
    items: bool = False,
) -> MetricsResult:
    parts, per_forum = {}, []
    for name, forum in forums.items():
        query_ids, pool_ids = list(forum.queries), list(forum.corpus)
        q = query_matrix(vectors, [forum.queries[i] for i in query_ids], query_rows)
        d = unit_rows(vectors([forum.corpus[i] for i in pool_ids]))
        top_scores, top_index = top_k(q, d, k, device=device)
        aps = []
        for row, qid in enumerate(query_ids):
            hits = np.asarray([pool_ids[j] in forum.relevant[qid] for j in top_index[row]], dtype=int)
            aps.append(map_at_k(top_scores[row], hits))
        parts[name] = {"map@100": 100 * float(np.mean(aps)), "n_queries": len(query_ids), "pool": len(pool_ids)}
        if items:
            per_forum.append(mean_items(aps, items_key([name, *query_ids])))
    main = float(np.mean([p["map@100"] for p in parts.values()]))
    extra: dict = {"forums": sorted(forums)}
    if items:
        extra["items"] = parts_items(per_forum)
    return MetricsResult(
        "map@100", {"map@100": main}, n=sum(p["n_queries"] for p in parts.values()), parts=parts, extra=extra
    )


def score_twitterpara(
    vectors: VectorFn, sets: dict[str, ParaphrasePairs], query_rows: VectorFn | None = None, items: bool = False
) -> MetricsResult:
    parts, per_set = {}, []
    for name, pairs in sets.items():
        rows = _encode_unique(vectors, [*pairs.sentences1, *pairs.sentences2])
        first = _query_side(vectors, pairs.sentences1, rows, query_rows)  # the first tweet is the query
        cosine = np.asarray([float(first[a] @ rows[b]) for a, b in zip(pairs.sentences1, pairs.sentences2)])
        labels = np.asarray(pairs.labels)
        decided = labels >= 0
        parts[name] = {
            "ap": 100 * float(average_precision_score(labels[decided], cosine[decided])),
            "spearman": 100 * float(spearmanr(pairs.scores, cosine)[0]),
            "n_pairs": int(decided.sum()),
            "n_undecided": int((~decided).sum()),
        }
        if items:
            kept = np.flatnonzero(decided)
            per_set.append(
                pair_items(
                    "ap",
                    labels[decided],
                    cosine[decided],
                    items_key([name, *((pairs.sentences1[i], pairs.sentences2[i]) for i in kept)]),
                )
            )
    scores = {
        "ap": float(np.mean([p["ap"] for p in parts.values()])),
        "spearman": float(np.mean([p["spearman"] for p in parts.values()])),
    }
    return MetricsResult(
        "ap",
        scores,
        n=sum(p["n_pairs"] for p in parts.values()),
        parts=parts,
        extra={"items": parts_items(per_set)} if items else {},
    )


def trec_average_precision(scores: Sequence[float], doc_ids: Sequence[str], qrels: dict[str, int]) -> float:
    """trec_eval's AP: ranked by score (ties: larger doc id first); divided by all relevant docs."""
    n_relevant = sum(1 for r in qrels.values() if r > 0)
    if n_relevant == 0:
        return 0.0
    order = sorted(range(len(doc_ids)), key=lambda i: doc_ids[i], reverse=True)
    order.sort(key=lambda i: -scores[i])
    hits, total = 0, 0.0
    for rank, i in enumerate(order, start=1):
        if qrels.get(doc_ids[i], 0) > 0:
            hits += 1
            total += hits / rank
    return total / n_relevant


def score_scidocs(
    vectors: VectorFn,
    relations: dict[str, list[RelevanceQuery]],
    query_rows: VectorFn | None = None,
    items: bool = False,
) -> MetricsResult:
    rows = _encode_unique(vectors, [t for qs in relations.values() for q in qs for t in (q.query, *q.candidates)])
    asked = _query_side(vectors, [q.query for qs in relations.values() for q in qs], rows, query_rows)
    parts, per_relation = {}, []
    for name, queries in relations.items():
        aps = [
            trec_average_precision([float(rows[c] @ asked[q.query]) for c in q.candidates], q.candidate_ids, q.qrels)
            for q in queries
        ]
        parts[name] = {"map": 100 * float(np.mean(aps)), "n_queries": len(queries)}
        if items:
            per_relation.append(mean_items(aps, items_key([name, *(q.query for q in queries)])))
    main = float(np.mean([p["map"] for p in parts.values()]))
    return MetricsResult(
        "map",
        {"map": main},
        n=sum(p["n_queries"] for p in parts.values()),
        parts=parts,
        extra={"items": parts_items(per_relation)} if items else {},
    )


# each task's type as MTEB names it (AskUbuntuDupQuestions, CQADupstack*Retrieval, TwitterSemEval2015 /
# TwitterURLCorpus, SciDocsRR), and whether MTEB encodes its queries and documents as two sides (retrieval
# and reranking: a query prompt and a document prompt) or its texts alike (pair classification)
TASK_TYPES = {
    "AskUbuntu": "Reranking",
    "CQADupStack": "Retrieval",
    "TwitterPara": "PairClassification",
    "SciDocs": "Reranking",
}
TWO_SIDES = {"AskUbuntu": True, "CQADupStack": True, "TwitterPara": False, "SciDocs": True}


def _prompted(vectors: VectorFn, prompt: str) -> VectorFn:
    return (lambda texts: vectors(prompted(list(texts), prompt))) if prompt else vectors


def run_useb_task(
    name: str,
    vectors: VectorFn,
    data_dir: str | Path | None = None,
    device: str | torch.device = "cpu",
    query_rows: VectorFn | None = None,
    items: bool = False,
    prompts: tuple[str, str] = ("", ""),
) -> MetricsResult:
    """The task ``name`` scored with ``vectors`` (and RSE's ``query_rows``), ``prompts`` (query, document)
    put before its queries and its candidates (a pair's two texts: the same prompt)."""
    query, document = prompts
    if query or document:
        plain, plain_query = vectors, query_rows
        vectors = _prompted(plain, document)
        if plain_query is not None:
            query_rows = _prompted(plain_query, query)
        elif query != document:  # the query side: the model's unit rows of the query-prompted texts
            query_rows = lambda texts: unit_rows(plain(prompted(list(texts), query)))  # noqa: E731
    folder = task_folder(name, data_dir)
    if name == "AskUbuntu":
        return score_askubuntu(vectors, load_askubuntu(folder), query_rows, items=items)
    if name == "CQADupStack":
        return score_cqadupstack(vectors, load_cqadupstack(folder), device=device, query_rows=query_rows, items=items)
    if name == "TwitterPara":
        return score_twitterpara(vectors, load_twitterpara(folder), query_rows, items=items)
    return score_scidocs(vectors, load_scidocs(folder), query_rows, items=items)


def evaluate_useb(
    vectors: VectorFn,
    data_dir: str | Path | None = None,
    tasks: Iterable[str] = USEB_TASKS,
    report: EvalReport | None = None,
    device: str | torch.device = "cpu",
    model_name: str = "model",
    query_rows: VectorFn | None = None,
    items: bool = False,
    prompts: dict[str, tuple[str, str]] | None = None,
) -> EvalReport:
    """Run the USEB tasks whose data is present; the others go to ``summary["skipped"]`` with the
    reason. ``useb_avg`` (the TSDAE table's average) needs all four. ``prompts``: a task's query and
    document prompts (the model's own for the task's type, :data:`TASK_TYPES`), by task."""
    report = report or EvalReport(model=model_name)
    done = []
    for name in tasks:
        reason = missing_data(name, data_dir)
        if reason:
            report.summary.setdefault("skipped", {})[name] = reason
            continue
        given = (prompts or {}).get(name, ("", ""))
        report.tasks[name] = run_useb_task(name, vectors, data_dir, device, query_rows, items=items, prompts=given)
        done.append(report.tasks[name].main)
    if len(done) == len(USEB_TASKS):
        report.summary["useb_avg"] = float(np.mean(done))
    return report
