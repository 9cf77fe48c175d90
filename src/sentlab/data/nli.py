"""NLI triplets from SentEval's SNLI layout (``s1.<split>``, ``s2.<split>``, ``labels.<split>``).

Each premise with an entailed hypothesis and a contradicting one gives one (anchor, positive,
hard negative) row — the layout SimCSE and sentence-transformers' NLI recipes train on. A premise
with several entailments / contradictions pairs them in file order; premises lacking either are
skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sentlab.data.readers import read_lines
from sentlab.errors import DataError

LABELS = ("entailment", "neutral", "contradiction")


def pair_by_premise(rows: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(premise, hypothesis, label) rows -> (premise, entailment, contradiction) triplets: each premise's
    entailed and contradicting hypotheses paired in order; other labels are ignored."""
    by_premise: dict[str, dict[str, list[str]]] = {}
    for premise, hypothesis, label in rows:
        by_premise.setdefault(premise, {}).setdefault(label, []).append(hypothesis)
    return [
        (premise, positive, negative)
        for premise, groups in by_premise.items()
        for positive, negative in zip(groups.get("entailment", []), groups.get("contradiction", []))
    ]


def read_snli_triplets(folder: str | Path, split: str = "dev") -> list[tuple[str, str, str]]:
    folder = Path(folder)
    s1, s2, labels = (read_lines(folder / f"{name}.{split}") for name in ("s1", "s2", "labels"))
    if not len(s1) == len(s2) == len(labels):
        raise DataError(f"{folder}: s1/s2/labels.{split} have {len(s1)}/{len(s2)}/{len(labels)} lines")
    for line_no, label in enumerate(labels, start=1):
        if label.strip() not in LABELS:
            raise DataError(
                f"{folder / f'labels.{split}'}:{line_no}: unknown label {label.strip()!r} "
                f"(expected one of {', '.join(LABELS)})"
            )
    rows = pair_by_premise((p.strip(), h.strip(), y.strip()) for p, h, y in zip(s1, s2, labels))
    if not rows:
        raise DataError(f"{folder}: no premise has both an entailment and a contradiction")
    return rows
