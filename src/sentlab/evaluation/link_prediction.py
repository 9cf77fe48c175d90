"""RSE's in-domain relation prediction (Wang and Li, App. B, Table 7): link prediction as in knowledge
graph completion (Sun et al., 2019).

For each held-out triple (s_i, r_k, s_j) every candidate tail s is scored by f(s_i, s, r_k) =
cos(h_i + r_k, h_s), and the true tail's rank is 1 + the number of candidates scoring strictly
higher. Reported per relation and over all triples ("all"): MR (mean rank), MRR, Hits@1/3/10.

Choices, as the paper leaves them open:

* candidates: every distinct tail of the held-out split (``"split"``, the knowledge-graph
  convention of ranking against all entities) or only the tails of the triple's relation
  (``"relation"``);
* filtered setting (Sun et al. report filtered metrics): the other true tails of the same head and
  relation (two captions of one image, say) are not competitors, and neither is the head itself;
* a model without relation vectors (the start model) is scored with r_k = 0: plain cosine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from sentlab.data.relations import Triple
from sentlab.errors import DataError
from sentlab.evaluation.relational import RelationTable
from sentlab.evaluation.useb import unit_rows

CANDIDATES = ("split", "relation")
HITS_AT = (1, 3, 10)


def tail_ranks(
    encode: Callable[[Sequence[str]], np.ndarray],
    table: RelationTable,
    triples: Sequence[Triple],
    candidates: str = "split",
    block: int = 512,
) -> np.ndarray:
    """The filtered rank of each triple's true tail (see the module docstring)."""
    if candidates not in CANDIDATES:
        raise DataError(f"unknown candidate set {candidates!r} (choose from {', '.join(CANDIDATES)})")
    if not triples:
        raise DataError("no held-out triples to rank")
    unknown = sorted({t.relation for t in triples} - set(table.names))
    if unknown:
        raise DataError(
            f"held-out relation(s) {', '.join(unknown)} have no relation vector "
            f"(the model has {', '.join(table.names)})"
        )
    tails = list(dict.fromkeys(t.tail for t in triples))
    column = {s: i for i, s in enumerate(tails)}
    heads = list(dict.fromkeys(t.head for t in triples))
    row_of = {s: i for i, s in enumerate(heads)}
    tail_rows = unit_rows(encode(tails), np.float64)
    head_rows = np.asarray(encode(heads), dtype=np.float64)
    true_tails: dict[tuple[str, str], set[int]] = defaultdict(set)
    outside: dict[str, np.ndarray] = {}  # candidates="relation": the columns that are not the relation's tails
    for t in triples:
        true_tails[(t.head, t.relation)].add(column[t.tail])
        outside.setdefault(t.relation, np.ones(len(tails), dtype=bool))[column[t.tail]] = False
    vectors = table.vectors.astype(np.float64)
    relation_row = {name: k for k, name in enumerate(table.names)}
    ranks = np.empty(len(triples), dtype=np.int64)
    for start in range(0, len(triples), block):
        part = triples[start : start + block]
        queries = unit_rows(
            head_rows[[row_of[t.head] for t in part]] + vectors[[relation_row[t.relation] for t in part]], np.float64
        )
        scores = queries @ tail_rows.T
        for i, t in enumerate(part):
            true = scores[i, column[t.tail]]
            excluded = [c for c in true_tails[(t.head, t.relation)] if c != column[t.tail]]
            if t.head in column:
                excluded.append(column[t.head])
            scores[i, excluded] = -np.inf
            if candidates == "relation":
                scores[i, outside[t.relation]] = -np.inf
            ranks[start + i] = 1 + int((scores[i] > true).sum())
    return ranks


def rank_metrics(ranks: np.ndarray) -> dict[str, float]:
    """MR, MRR and Hits@k (fractions, as Table 7 prints them) of a set of ranks."""
    ranks = np.asarray(ranks, dtype=np.float64)
    out = {"mr": float(ranks.mean()), "mrr": float((1.0 / ranks).mean()), "n": int(len(ranks))}
    out.update({f"hits@{k}": float((ranks <= k).mean()) for k in HITS_AT})
    return out


def link_prediction(
    encode: Callable[[Sequence[str]], np.ndarray],
    table: RelationTable,
    triples: Sequence[Triple],
    candidates: str = "split",
) -> dict[str, dict[str, float]]:
    """Table 7: metrics per relation (in the order relations first appear) and over ``all`` triples."""
    ranks = tail_ranks(encode, table, triples, candidates)
    relation_of = np.asarray([t.relation for t in triples])
    out = {name: rank_metrics(ranks[relation_of == name]) for name in dict.fromkeys(t.relation for t in triples)}
    out["all"] = rank_metrics(ranks)
    return out
