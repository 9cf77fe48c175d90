"""Hard negatives for (anchor, positive) pairs: sentence-transformers' ``mine_hard_negatives`` (its
rank range, score cap, absolute margin, the relative margin of NV-Retriever's positive-aware mining
(Moreira et al. 2024: a negative must score below ``(1 - margin)`` times its positive), top or
random sampling, faiss where asked), then sentlab's guard against false negatives the scores miss: a
mined negative whose text, compared case-, space- and punctuation-blind, is its anchor or one of the
anchor's positives is dropped and counted. The triplets are the ``anchor, positive, negative``
columns the ``supervised`` method reads with ``supervised.loss: mnrl``."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass

from datasets import Dataset
from sentence_transformers import SentenceTransformer

from sentlab.errors import DataError


def same_text_key(text: str) -> str:
    """``text`` compared blind to case, spacing and punctuation."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


@dataclass
class Mining:
    """What a mining run did (printed and written beside the triplets)."""

    pairs: int
    triplets: int
    anchors_with_a_negative: int
    dropped_as_the_same_text: int
    settings: dict

    def to_dict(self) -> dict:
        return asdict(self)


def mine(
    pairs: Dataset,
    model: SentenceTransformer,
    corpus: list[str] | None = None,
    num_negatives: int = 1,
    range_min: int = 0,
    range_max: int | None = None,
    max_score: float | None = None,
    absolute_margin: float | None = None,
    relative_margin: float | None = 0.05,
    sampling: str = "top",
    use_faiss: bool = False,
    batch_size: int = 32,
) -> tuple[Dataset, Mining]:
    """Triplets (anchor, positive, negative) for ``pairs`` (columns ``anchor``, ``positive``); the
    corpus negatives come from is ``corpus``, else the pairs' positives."""
    from sentence_transformers.util import mine_hard_negatives

    if len(pairs) == 0:
        raise DataError("no pairs to mine negatives for")
    settings = dict(
        num_negatives=num_negatives,
        range_min=range_min,
        range_max=range_max,
        max_score=max_score,
        absolute_margin=absolute_margin,
        relative_margin=relative_margin,
        sampling_strategy=sampling,
        use_faiss=use_faiss,
    )
    mined = mine_hard_negatives(
        pairs,
        model,
        anchor_column_name="anchor",
        positive_column_name="positive",
        corpus=corpus,
        output_format="triplet",
        batch_size=batch_size,
        verbose=False,
        **settings,
    )
    positives = defaultdict(set)
    for anchor, positive in zip(pairs["anchor"], pairs["positive"]):
        positives[same_text_key(anchor)].add(same_text_key(positive))
    keep, dropped = [], 0
    for i, (anchor, negative) in enumerate(zip(mined["anchor"], mined["negative"])):
        a, n = same_text_key(anchor), same_text_key(negative)
        if n == a or n in positives[a]:
            dropped += 1
        else:
            keep.append(i)
    triplets = mined.select(keep)
    report = Mining(
        pairs=len(pairs),
        triplets=len(triplets),
        anchors_with_a_negative=len(set(triplets["anchor"])),
        dropped_as_the_same_text=dropped,
        settings={**settings, "corpus": "given" if corpus is not None else "the positives"},
    )
    return triplets, report
