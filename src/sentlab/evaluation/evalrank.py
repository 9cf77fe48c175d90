"""EvalRank (Wang, Kuo and Li 2022; RSE's ranking evaluation), cosine setting of its toolkit.

Data (``<data>/evalrank/``, the layout of the EvalRank repository's ``data/sent_evalrank``):
``pos_pair.txt`` (sentence \\t sentence, one positive pair a line; both directions listed) and
``background_sent.txt`` (one sentence a line).

Protocol (BinWang28/EvalRank-Embedding-Evaluation, ``src/s_evaluation.py``, ``eval_for_ranking``):

1. The sentence set is every sentence of the pairs, then the background sentences, each once.
2. Their vectors are centred (the set's mean subtracted) and L2-normalised.
3. Each pair (s1, s2) gets a rank; MRR = mean 1 / rank, Hits@k = share of pairs with rank <= k,
   reported x 100 with the mean rank.

Two ranks are reported, labelled, because the toolkit's differs from its own definition:

* ``toolkit`` (``mrr``, ``hits@k``, ``mean_rank``): the toolkit's computation, float32 as numpy does
  it: the pair score ``np.dot(s1, s2)`` is computed on its own, every sentence of the set (s1 and
  s2 included) is scored by one ``np.dot(all, s1)``, and rank = max(1, #sentences scoring strictly
  above the pair). s1 (cosine 1) always counts, and the floor at 1 cancels it; s2 counts whenever
  its entry in the big product rounds above the separately computed pair score (``extra``
  counts the pairs where the two ranks differ; docs/results.md has MiniLM's): an artifact, but the
  one every published EvalRank / RSE number carries, so this figure is the one to put beside a
  paper's. The products run single-threaded, so
  the figure does not move with the thread count; another CPU's BLAS can move it, as it moves the
  toolkit's own number.
* ``corrected`` (``mrr_corrected``, ...): rank = 1 + #sentences other than s1 and s2 scoring strictly
  above the pair, every score (the pair's included) taken from one float64 product row. Near-ties
  (a competitor within float32 rounding of the pair score) are decided by float64 values, the same
  on any BLAS and thread count; a sentence whose vector equals s2's ties
  with the pair exactly and does not count.

Asymmetric scorers (RSE's relational score f(s1, s, r) = Σ_k w_k cos(h1 + r_k, h), given as query
rows) rank every sentence s by the first sentence's query row against the unit rows of the raw
vectors: no centring, because the relation vectors translate the uncentred space they were trained
in; ``extra["centred"]`` says which was done.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentlab.data.readers import read_lines
from sentlab.errors import DataError
from sentlab.evaluation.results import EvalReport, MetricsResult
from sentlab.evaluation.useb import VectorFn, unit_rows
from sentlab.paths import data_dir

EVALRANK_FOLDER = "evalrank"
EVALRANK_FILES = ("pos_pair.txt", "background_sent.txt")
HITS_AT = (1, 3, 10)


@dataclass
class EvalRankData:
    pairs: list[tuple[str, str]]
    sentences: list[str]  # pair sentences first, then the background, each once


def missing_data(root: str | Path | None = None) -> str | None:
    folder = data_dir(root) / EVALRANK_FOLDER
    absent = [name for name in EVALRANK_FILES if not (folder / name).is_file()]
    return f"missing {', '.join(str(folder / n) for n in absent)}" if absent else None


def load_evalrank(root: str | Path | None = None) -> EvalRankData:
    folder = data_dir(root) / EVALRANK_FOLDER
    pairs = []
    path = folder / "pos_pair.txt"
    for line_no, line in enumerate(read_lines(path), start=1):
        parts = line.strip().split("\t")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise DataError(f"{path}:{line_no}: expected 'sentence<TAB>sentence'")
        pairs.append((parts[0], parts[1]))
    if not pairs:
        raise DataError(f"{path}: file has no pairs")
    background = [line.strip() for line in read_lines(folder / "background_sent.txt")]
    sentences = list(dict.fromkeys([s for pair in pairs for s in pair] + background))
    return EvalRankData(pairs, sentences)


def pair_ranks(
    vectors: np.ndarray, pairs: np.ndarray, block: int = 256, queries: np.ndarray | None = None
) -> np.ndarray:
    """Corrected ranks (see the module docstring) of each pair's partner from centred, unit ``vectors``
    (the first sentence's row taken from ``queries`` when given)."""
    table = np.asarray(vectors, dtype=np.float64)
    asking = table if queries is None else np.asarray(queries, dtype=np.float64)
    ranks = np.empty(len(pairs), dtype=np.int64)
    for start in range(0, len(pairs), block):
        first, second = pairs[start : start + block, 0], pairs[start : start + block, 1]
        sims = asking[first] @ table.T
        rows = np.arange(len(first))
        positive = sims[rows, second][:, None].copy()
        sims[rows, first] = -np.inf  # neither s1 nor s2 competes
        sims[rows, second] = -np.inf
        ranks[start : start + block] = 1 + (sims > positive).sum(axis=1)
    return ranks


def toolkit_ranks(vectors: np.ndarray, pairs: np.ndarray, queries: np.ndarray | None = None) -> np.ndarray:
    """The toolkit's ranks (see the module docstring): its float32 numpy products, one pair at a time."""
    from threadpoolctl import threadpool_limits

    table = np.ascontiguousarray(vectors, dtype=np.float32)
    asking = table if queries is None else np.ascontiguousarray(queries, dtype=np.float32)
    ranks = np.empty(len(pairs), dtype=np.int64)
    with threadpool_limits(limits=1):
        for k, (a, b) in enumerate(pairs):
            s1, s2 = asking[a : a + 1], table[b : b + 1]
            positive = np.dot(s1, s2.T).squeeze()
            background = np.dot(table, s1.T).squeeze()
            ranks[k] = max(1, int((background > positive).sum()))
    return ranks


def _rank_scores(ranks: np.ndarray, suffix: str = "") -> dict[str, float]:
    scores = {f"mrr{suffix}": 100 * float(np.mean(1.0 / ranks)), f"mean_rank{suffix}": float(np.mean(ranks))}
    scores.update({f"hits@{k}{suffix}": 100 * float(np.mean(ranks <= k)) for k in HITS_AT})
    return scores


def score_evalrank(vectors: VectorFn, data: EvalRankData, query_rows: VectorFn | None = None) -> MetricsResult:
    raw = np.asarray(vectors(data.sentences), dtype=np.float32)
    row = {s: i for i, s in enumerate(data.sentences)}
    pairs = np.asarray([(row[a], row[b]) for a, b in data.pairs])
    queries = None
    if query_rows is None:
        table = unit_rows(raw - raw.mean(axis=0, keepdims=True))
    else:
        table = unit_rows(raw)
        heads = np.unique(pairs[:, 0])
        queries = np.zeros_like(table)
        queries[heads] = query_rows([data.sentences[i] for i in heads])
    toolkit, corrected = toolkit_ranks(table, pairs, queries), pair_ranks(table, pairs, queries=queries)
    scores = {**_rank_scores(toolkit), **_rank_scores(corrected, "_corrected")}
    return MetricsResult(
        "mrr",
        scores,
        n=len(data.pairs),
        extra={
            "n_sentences": len(data.sentences),
            "centred": query_rows is None,
            "protocols": {
                "toolkit": "the EvalRank toolkit's float32 computation (s2 may outrank its own pair by rounding)",
                "corrected": "s1 and s2 excluded, float64 scores (mrr_corrected, hits@k_corrected, mean_rank_corrected)",
            },
            "pairs_where_toolkit_differs": int((toolkit != corrected).sum()),
        },
    )


def evaluate_evalrank(
    vectors: VectorFn,
    root: str | Path | None = None,
    report: EvalReport | None = None,
    model_name: str = "model",
    query_rows: VectorFn | None = None,
) -> EvalReport:
    report = report or EvalReport(model=model_name)
    report.tasks["EvalRank"] = score_evalrank(vectors, load_evalrank(root), query_rows)
    return report
