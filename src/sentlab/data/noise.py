"""Input noise for TSDAE (Wang et al. 2021, Sec. 3 and App. A, Tables 5-6), word by word.

A sentence is split on whitespace into words (the paper speaks of words; the authors' scripts use
NLTK's tokenizer, which needs a data download and would also count punctuation as words). Each
word is *selected* independently with probability ``ratio``; then, by noise type:

* ``delete``  - selected words are removed; at least one word is always kept (ratio 0.6 deletes
  60 % of the words in expectation — some copies of the example script keep 60 % instead);
* ``swap``    - the selected words are shuffled among their own positions;
* ``mask``    - each selected word becomes the tokenizer's mask token;
* ``replace`` - each selected word becomes a word drawn uniformly from ``vocabulary`` (the
  training sentences' words);
* ``add``     - a word drawn from ``vocabulary`` is inserted before each selected word.

:class:`NoisyPairs` draws the noise afresh each time a row is read (a new draw for every epoch)
from a generator seeded by (seed, row, how many times the row was read before), so a run is
reproducible by its seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

NOISE_TYPES = ("delete", "swap", "mask", "replace", "add")


def add_noise(
    words: Sequence[str],
    kind: str,
    ratio: float,
    rng: np.random.Generator,
    mask_token: str = "[MASK]",
    vocabulary: Sequence[str] = (),
) -> list[str]:
    """``words`` with noise of type ``kind`` applied to a ``ratio`` share of them (see module doc)."""
    if kind not in NOISE_TYPES:
        raise ValueError(f"unknown noise type {kind!r} (choose from {', '.join(NOISE_TYPES)})")
    words = list(words)
    n = len(words)
    if n == 0:
        return words
    selected = rng.random(n) < ratio
    if kind == "delete":
        if selected.all():
            selected[rng.integers(n)] = False  # keep one word
        return [w for w, drop in zip(words, selected) if not drop]
    if kind == "swap":
        positions = np.flatnonzero(selected)
        out = list(words)
        for target, source in zip(positions, rng.permutation(positions)):
            out[target] = words[source]
        return out
    if kind == "mask":
        return [mask_token if s else w for w, s in zip(words, selected)]
    if not vocabulary:
        raise ValueError(f"noise {kind!r} needs a vocabulary to draw words from")
    if kind == "replace":
        return [vocabulary[rng.integers(len(vocabulary))] if s else w for w, s in zip(words, selected)]
    out = []
    for w, s in zip(words, selected):
        if s:
            out.append(vocabulary[rng.integers(len(vocabulary))])
        out.append(w)
    return out


class PerReadRandom:
    """A fresh generator each time a row is read, seeded by (seed, row, how many times the row was
    read before): new draws every epoch, the same draws for the same seed."""

    def __init__(self, seed: int):
        self.seed = seed
        self.reads: dict[int, int] = defaultdict(int)

    def __call__(self, row: int) -> np.random.Generator:
        rng = np.random.default_rng([self.seed, row, self.reads[row]])
        self.reads[row] += 1
        return rng


class NoisyPairs:
    """A ``datasets`` transform: rows ``{"sentence", "label": row index}`` -> ``{"noisy", "sentence"}``.

    Install with ``dataset.set_transform(NoisyPairs(...))``; the ``noisy`` column comes first, so
    the loss receives (noised, original) feature dicts in that order.
    """

    def __init__(self, kind: str, ratio: float, seed: int, mask_token: str = "[MASK]", vocabulary: Sequence[str] = ()):
        if kind not in NOISE_TYPES:
            raise ValueError(f"unknown noise type {kind!r} (choose from {', '.join(NOISE_TYPES)})")
        self.kind, self.ratio = kind, ratio
        self.mask_token, self.vocabulary = mask_token, list(vocabulary)
        self.random = PerReadRandom(seed)

    def noise(self, sentence: str, row: int) -> str:
        rng = self.random(row)
        return " ".join(add_noise(sentence.split(), self.kind, self.ratio, rng, self.mask_token, self.vocabulary))

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        noisy = [self.noise(s, int(row)) for s, row in zip(batch["sentence"], batch["label"])]
        return {"noisy": noisy, "sentence": list(batch["sentence"])}


def corpus_vocabulary(sentences: Sequence[str], limit: int = 100_000) -> list[str]:
    """The distinct whitespace words of ``sentences`` in first-seen order (at most ``limit``)."""
    seen: dict[str, None] = {}
    for sentence in sentences:
        for word in sentence.split():
            if word not in seen:
                seen[word] = None
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)
