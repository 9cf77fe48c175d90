"""EvalRank (Wang, Kuo and Li 2022; RSE's ranking evaluation), cosine setting of its toolkit.

Data (``<data>/evalrank/``, the layout of the EvalRank repository's ``data/sent_evalrank``):
``pos_pair.txt`` (sentence \\t sentence, one positive pair a line; both directions listed) and
``background_sent.txt`` (one sentence a line).

Protocol:

1. The sentence set is every sentence of the pairs, then the background sentences, each once.
2. Their vectors are centred (the set's mean subtracted) and L2-normalised.
3. For a pair (s1, s2), the rank of s2 is 1 + the number of sentences other than s1 and s2 whose
   cosine to s1 is strictly higher than cos(s1, s2). (The toolkit counts every sentence scoring
   above the pair, s1 itself included at cosine 1, and floors the rank at 1: the same number.)
4. MRR = mean 1 / rank, Hits@k = share of pairs with rank <= k; reported x 100 with the mean rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

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


def pair_ranks(vectors: np.ndarray, pairs: np.ndarray, block: int = 512) -> np.ndarray:
    """Rank of each pair's partner (step 3) from centred, normalised ``vectors`` (float32)."""
    table = torch.as_tensor(vectors)
    ranks = np.empty(len(pairs), dtype=np.int64)
    for start in range(0, len(pairs), block):
        first, second = (torch.as_tensor(pairs[start:start + block, c]) for c in (0, 1))
        sims = table[first] @ table.T
        positive = (table[first] * table[second]).sum(1, keepdim=True)
        rows = torch.arange(len(first))
        sims[rows, first] = -torch.inf  # neither s1 nor s2 competes
        sims[rows, second] = -torch.inf
        ranks[start:start + block] = (1 + (sims > positive).sum(1)).numpy()
    return ranks


def score_evalrank(vectors: VectorFn, data: EvalRankData) -> MetricsResult:
    raw = np.asarray(vectors(data.sentences), dtype=np.float32)
    centred = unit_rows(raw - raw.mean(axis=0, keepdims=True))
    row = {s: i for i, s in enumerate(data.sentences)}
    ranks = pair_ranks(centred, np.asarray([(row[a], row[b]) for a, b in data.pairs]))
    scores = {"mrr": 100 * float(np.mean(1.0 / ranks)), "mean_rank": float(np.mean(ranks))}
    scores.update({f"hits@{k}": 100 * float(np.mean(ranks <= k)) for k in HITS_AT})
    return MetricsResult("mrr", scores, n=len(data.pairs), extra={"n_sentences": len(data.sentences)})


def evaluate_evalrank(vectors: VectorFn, root: str | Path | None = None, report: EvalReport | None = None,
                      model_name: str = "model") -> EvalReport:
    report = report or EvalReport(model=model_name)
    report.tasks["EvalRank"] = score_evalrank(vectors, load_evalrank(root))
    return report
