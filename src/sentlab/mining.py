"""Hard negatives for (anchor, positive) pairs: sentence-transformers' ``mine_hard_negatives`` (its
rank range, score cap, absolute margin, the relative margin of NV-Retriever's positive-aware mining
(Moreira et al. 2024: a negative must score below ``(1 - margin)`` times its positive), top or
seeded random sampling, faiss where asked, the model's query / document prompts, a cross-encoder's
rescoring of the candidates), with sentlab's
guard against false negatives the scores miss: a candidate whose text is its anchor's or one of the
anchor's positives (compared by :func:`same_text_key`) is passed over before the negatives are
chosen, so the next candidate takes its place. sentence-transformers is asked for spare candidates
an anchor for that (in its rank order; the range it searches is the one it would search for the
negatives asked). The triplets are the ``anchor, positive, negative`` columns the ``supervised``
method reads with ``supervised.loss: mnrl``."""

from __future__ import annotations

import random
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass

from datasets import Dataset
from sentence_transformers import SentenceTransformer

from sentlab.encoders.prompts import role_prompt
from sentlab.errors import ConfigError, DataError

# marks a text may carry or leave out without changing its words: Hebrew points and cantillation,
# Arabic harakat, Quranic marks and the tatweel (vowel signs of Indic scripts are letters' parts: kept)
OPTIONAL_MARKS = re.compile(
    "[\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u0640\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed]"
)
# punctuation that changes what a word means (C#, 100%, AT&T, a/b) and is never trimmed from a word
MEANINGFUL = frozenset("#%&@*/\\+$")


def _trim(token: str) -> str:
    """``token`` without the punctuation around it (quotes, brackets, full stops), meaningful signs kept."""

    def edge(char: str) -> bool:
        return unicodedata.category(char).startswith("P") and char not in MEANINGFUL

    start, end = 0, len(token)
    while start < end and edge(token[start]):
        start += 1
    while end > start and edge(token[end - 1]):
        end -= 1
    return token[start:end]


def same_text_key(text: str) -> str:
    """``text`` compared blind to case, Unicode width and composition (NFKC), spacing, the punctuation
    around words and optional diacritics (Arabic harakat, Hebrew points); "What is C++?" and "What is
    C#?", "$100" and "100%", or two Hindi words a vowel sign apart stay different."""
    text = OPTIONAL_MARKS.sub("", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(word for word in map(_trim, text.split()) if word)


def candidate_range(
    num_negatives: int, range_min: int, range_max: int | None, max_positives: int, narrowed: bool
) -> int:
    """The ``range_max`` sentence-transformers searches: the one given, else (its rule)
    ``range_min + 10 x num_negatives + max_positives`` when a margin or score cap narrows the candidates,
    ``range_min + num_negatives + max_positives`` otherwise (``max_positives``: the most positives an
    anchor has in the data)."""
    if range_max is not None:
        return range_max
    return range_min + (10 if narrowed else 1) * num_negatives + max_positives


def check_settings(
    num_negatives: int,
    range_min: int,
    range_max: int | None,
    max_score: float | None,
    absolute_margin: float | None,
    relative_margin: float | None,
    cross_encoder: bool = False,
) -> None:
    """Settings sentence-transformers would refuse with a traceback, or take to mean nothing: one line."""
    if cross_encoder and max_score is None and absolute_margin is None and relative_margin is None:
        raise ConfigError(
            "--cross-encoder: its scores are read by a margin or a score cap, and none is set (--relative-margin "
            "none, no --absolute-margin, no --max-score): it would change nothing; set one"
        )
    import math

    if num_negatives < 1:
        raise ConfigError(f"--num-negatives {num_negatives}: at least 1")
    if range_min < 0:
        raise ConfigError(f"--range-min {range_min}: must not be negative")
    if range_max is not None and range_max - range_min < num_negatives:
        raise ConfigError(
            f"--range-min {range_min} --range-max {range_max}: the range holds {max(range_max - range_min, 0)} "
            f"candidates, fewer than --num-negatives {num_negatives}"
        )
    for name, value in (("--max-score", max_score), ("--absolute-margin", absolute_margin)):
        if value is not None and not math.isfinite(value):
            raise ConfigError(f"{name} {value}: must be a finite number")
    if relative_margin is not None and not 0 <= relative_margin < 1:
        raise ConfigError(f"--relative-margin {relative_margin}: must be in [0, 1) (none turns it off)")


@dataclass
class Mining:
    """What a mining run did (printed and written beside the triplets)."""

    pairs: int
    triplets: int  # (anchor, positive, negative) choices made: a row each as triplets
    anchors_with_a_negative: int
    same_text_passed_over: int  # candidates the guard passed over that would have been chosen
    short_for_the_same_text: int  # negatives missing because the guard left too few candidates
    settings: dict
    output_format: str = "triplet"
    rows: int = 0  # rows written: triplets, or n-tuples (one a pair that got every negative asked)
    pairs_short_of_negatives: int = 0  # n-tuple: pairs left out for fewer negatives than asked

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
    seed: int = 0,
    use_faiss: bool = False,
    batch_size: int = 32,
    query_prompt_name: str | None = None,
    corpus_prompt_name: str | None = None,
    query_prompt: str | None = None,
    corpus_prompt: str | None = None,
    cache_folder: str | None = None,
    output_format: str = "triplet",
    cross_encoder=None,
    cross_encoder_name: str | None = None,
) -> tuple[Dataset, Mining]:
    """Triplets (anchor, positive, negative) for ``pairs`` (columns ``anchor``, ``positive``), one a
    negative, or with ``output_format="n-tuple"`` one row a pair, (anchor, positive, negative_1 ...
    negative_n), so a pair is not repeated over rows (a pair that got fewer than ``num_negatives`` is
    left out, and counted: an n-tuple's columns are the same for every row); the
    corpus negatives come from is ``corpus``, else the pairs' positives. ``seed`` seeds the random
    sampling (recorded in the report's settings); ``cache_folder`` keeps sentence-transformers' embeddings
    of the anchors and candidates for a second mining of the same pairs. ``cross_encoder`` (a
    sentence-transformers ``CrossEncoder``, :mod:`sentlab.encoders.cross_encoder`) rescores the
    candidates the model found and the positives: the margins and ``max_score`` then hold against its
    scores (the false-negative filter of a reranker), and the hardest are taken in its order;
    ``cross_encoder_name`` is how the report names it."""
    from sentence_transformers.util import mine_hard_negatives

    if len(pairs) == 0:
        raise DataError("no pairs to mine negatives for")
    check_settings(
        num_negatives, range_min, range_max, max_score, absolute_margin, relative_margin, cross_encoder is not None
    )
    if output_format not in ("triplet", "n-tuple"):
        raise ConfigError(f"--format {output_format}: choose triplet or n-tuple")
    for side, name, text in (("query", query_prompt_name, query_prompt), ("corpus", corpus_prompt_name, corpus_prompt)):
        if name is not None and text is not None:
            raise ConfigError(f"--{side}-prompt-name and --{side}-prompt: give one of the two")
        if name is not None and name not in model.prompts:
            known = ", ".join(model.prompts) or "none"
            raise ConfigError(f"--{side}-prompt-name {name}: the model has no such prompt (its prompts: {known})")
    # the model's own (an e5 model's passage prompt too, role_prompt); None where it has none, so that
    # sentence-transformers applies a default prompt as it would
    if query_prompt_name is None and query_prompt is None:
        query_prompt = role_prompt(model, "query") or None
    if corpus_prompt_name is None and corpus_prompt is None:
        corpus_prompt = role_prompt(model, "document") or None
    positives = defaultdict(set)
    for anchor, positive in zip(pairs["anchor"], pairs["positive"]):
        positives[same_text_key(anchor)].add(same_text_key(positive))
    narrowed = max_score is not None or absolute_margin is not None or relative_margin is not None
    max_positives = max(Counter(pairs["anchor"]).values())
    window = candidate_range(num_negatives, range_min, range_max, max_positives, narrowed)
    spare = min(num_negatives + max_positives, window - range_min - num_negatives)  # for the guard to pass over
    settings = dict(
        num_negatives=num_negatives,
        range_min=range_min,
        range_max=range_max,
        max_score=max_score,
        absolute_margin=absolute_margin,
        relative_margin=relative_margin,
        sampling_strategy=sampling,
        use_faiss=use_faiss,
        query_prompt_name=query_prompt_name,
        corpus_prompt_name=corpus_prompt_name,
        query_prompt=query_prompt,
        corpus_prompt=corpus_prompt,
    )
    state = random.getstate()
    random.seed(seed)  # sentence-transformers samples with the global generator
    try:
        mined = mine_hard_negatives(
            pairs,
            model,
            anchor_column_name="anchor",
            positive_column_name="positive",
            corpus=corpus,
            output_format="triplet",
            batch_size=batch_size,
            verbose=False,
            cache_folder=cache_folder,
            cross_encoder=cross_encoder,
            **{**settings, "num_negatives": num_negatives + spare, "range_max": window},
        )
    finally:
        random.setstate(state)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)  # each pair's candidates, in rank order
    for i, (anchor, positive) in enumerate(zip(mined["anchor"], mined["positive"])):
        groups[anchor, positive].append(i)
    negatives = [same_text_key(text) for text in mined["negative"]]
    pick = random.Random(seed)
    keep, chosen_by_pair, passed_over, short = [], [], 0, 0
    for (anchor, _), rows in groups.items():
        a = same_text_key(anchor)
        good = [i for i in rows if negatives[i] != a and negatives[i] not in positives[a]]
        if sampling == "random":  # the spare candidates were drawn at random too: draw the kept ones again
            chosen = sorted(pick.sample(good, k=min(num_negatives, len(good))))
        else:
            chosen = good[:num_negatives]
        passed_over += sum(1 for i in rows if i not in good and (not chosen or i < chosen[-1]))
        short += max(0, min(num_negatives, len(rows)) - len(chosen))
        keep += chosen
        chosen_by_pair.append(chosen)
    triplets = mined.select(sorted(keep))
    rows, left_out = triplets, 0
    if output_format == "n-tuple":
        whole = [c for c in chosen_by_pair if len(c) == num_negatives]
        # every distinct pair read that got fewer negatives, none included (no candidate: not mined at all)
        left_out = len(set(zip(pairs["anchor"], pairs["positive"]))) - len(whole)
        anchors, positives_, texts = mined["anchor"], mined["positive"], mined["negative"]
        columns = {"anchor": [anchors[c[0]] for c in whole], "positive": [positives_[c[0]] for c in whole]}
        for k in range(num_negatives):
            columns[f"negative_{k + 1}"] = [texts[c[k]] for c in whole]
        rows = Dataset.from_dict(columns)
    report = Mining(
        pairs=len(pairs),
        triplets=len(triplets),
        anchors_with_a_negative=len(set(triplets["anchor"])),
        same_text_passed_over=passed_over,
        short_for_the_same_text=short,
        settings={
            **settings,
            "range_max": window,
            "seed": seed if sampling == "random" else None,
            "corpus": "given" if corpus is not None else "the positives",
            "cross_encoder": cross_encoder_name if cross_encoder is not None else None,
        },
        output_format=output_format,
        rows=len(rows),
        pairs_short_of_negatives=left_out,
    )
    return rows, report
