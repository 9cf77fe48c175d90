"""NLI triplets from SentEval's SNLI layout (``s1.<split>``, ``s2.<split>``, ``labels.<split>``).

Each premise with an entailed hypothesis and a contradicting one gives one (anchor, positive,
hard negative) row — the layout SimCSE and sentence-transformers' NLI recipes train on. A premise
with several entailments / contradictions pairs them in file order; premises lacking either are
skipped.
"""

from __future__ import annotations

from pathlib import Path

from sentlab.data.readers import read_lines
from sentlab.errors import DataError

LABELS = ("entailment", "neutral", "contradiction")


def read_snli_triplets(folder: str | Path, split: str = "dev") -> list[tuple[str, str, str]]:
    folder = Path(folder)
    s1, s2, labels = (read_lines(folder / f"{name}.{split}") for name in ("s1", "s2", "labels"))
    if not len(s1) == len(s2) == len(labels):
        raise DataError(f"{folder}: s1/s2/labels.{split} have {len(s1)}/{len(s2)}/{len(labels)} lines")
    by_premise: dict[str, dict[str, list[str]]] = {}
    for line_no, (premise, hypothesis, label) in enumerate(zip(s1, s2, labels), start=1):
        label = label.strip()
        if label not in LABELS:
            raise DataError(f"{folder / f'labels.{split}'}:{line_no}: unknown label {label!r} "
                            f"(expected one of {', '.join(LABELS)})")
        by_premise.setdefault(premise.strip(), {}).setdefault(label, []).append(hypothesis.strip())
    rows = []
    for premise, groups in by_premise.items():
        for positive, negative in zip(groups.get("entailment", []), groups.get("contradiction", [])):
            rows.append((premise, positive, negative))
    if not rows:
        raise DataError(f"{folder}: no premise has both an entailment and a contradiction")
    return rows
