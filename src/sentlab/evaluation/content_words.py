"""The most relevant content word of a relevant pair (TSDAE paper, Sec. 7.2, Fig. 4).

For a pair (a, b) labelled relevant, among all words w of a or b::

    ŵ = argmax_w ( cossim(a, b) - min( cossim(a \\ w, b), cossim(a, b \\ w) ) )

where ``a \\ w`` is a with every occurrence of w removed (words = whitespace tokens, as in the
noise of :mod:`sentlab.data.noise`). The words are reported, and — when spaCy with an English model
is installed — the distribution of their part-of-speech tags in the paper's classes (IN, PRP, SYM,
VB-AUX, VB-NAUX, DT, CC, NN, JJ, RB, CD, OTHER); without a tagger the result says so in ``pos_note``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

POS_CLASSES = ("IN", "PRP", "SYM", "VB-AUX", "VB-NAUX", "DT", "CC", "NN", "JJ", "RB", "CD", "OTHER")
SPACY_MODEL = "en_core_web_sm"


def without(words: Sequence[str], word: str) -> str:
    return " ".join(w for w in words if w != word)


def most_relevant_words(encode: Callable[[list[str]], np.ndarray], pairs: Sequence[tuple[str, str]]) -> list[dict]:
    """For each pair: ŵ, the sentence it was taken from (the one whose removal gave the minimum), the
    similarity drop, and the pair's cosine."""
    variants: list[str] = []
    plan = []
    for a, b in pairs:
        wa, wb = a.split(), b.split()
        candidates = list(dict.fromkeys(wa + wb))
        plan.append((a, b, wa, wb, candidates))
        variants += [a, b] + [without(wa, w) for w in candidates] + [without(wb, w) for w in candidates]
    distinct = list(dict.fromkeys(variants))
    vectors = encode(distinct)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    row = {text: i for i, text in enumerate(distinct)}

    def cos(x: str, y: str) -> float:
        return float(vectors[row[x]] @ vectors[row[y]])

    out = []
    for a, b, wa, wb, candidates in plan:
        base = cos(a, b)
        best = None
        for w in candidates:
            from_a, from_b = cos(without(wa, w), b), cos(a, without(wb, w))
            drop = base - min(from_a, from_b)
            if best is None or drop > best["drop"]:
                best = {"word": w, "drop": drop, "sentence": a if from_a <= from_b else b}
        out.append({**best, "cosine": base})
    return out


def pos_tagger() -> tuple[Callable[[str, str], str] | None, str]:
    """(tag(sentence, word) -> POS class, note); (None, why) when no tagger is installed."""
    try:
        import spacy

        nlp = spacy.load(SPACY_MODEL)
    except (ImportError, OSError):
        return None, (
            f"no POS tagger installed (pip install spacy && python -m spacy download {SPACY_MODEL}); "
            "words reported without their POS distribution"
        )

    def tag(sentence: str, word: str) -> str:
        doc = nlp(sentence)
        for token in doc:
            if token.text == word or word.startswith(token.text):
                return pos_class(token.tag_, token.pos_)
        return "OTHER"

    return tag, f"POS tags by spaCy {SPACY_MODEL}"


def pos_class(tag: str, coarse: str) -> str:
    """A Penn Treebank tag (and spaCy's coarse POS, for auxiliaries) -> the paper's Fig. 4 class."""
    if tag.startswith("NN"):
        return "NN"
    if tag.startswith("VB") or tag == "MD":
        return "VB-AUX" if coarse == "AUX" or tag == "MD" else "VB-NAUX"
    for prefix in ("JJ", "RB", "PRP"):
        if tag.startswith(prefix):
            return prefix
    return tag if tag in ("IN", "DT", "CC", "CD", "SYM") else "OTHER"


def content_words_report(
    encode: Callable[[list[str]], np.ndarray], pairs: Sequence[tuple[str, str]], model_name: str
) -> dict[str, Any]:
    found = most_relevant_words(encode, pairs)
    tag, note = pos_tagger()
    report: dict[str, Any] = {
        "model": model_name,
        "n_pairs": len(pairs),
        "pos_note": note,
        "top_words": Counter(f["word"].lower() for f in found).most_common(30),
        "pairs": found,
    }
    if tag is not None:
        classes = Counter(tag(f["sentence"], f["word"]) for f in found)
        report["pos_distribution"] = {c: 100 * classes.get(c, 0) / len(found) for c in POS_CLASSES}
    return report


def plot_content_words(report: dict[str, Any], path) -> None:
    from sentlab.reporting.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    if "pos_distribution" in report:
        labels, values = list(report["pos_distribution"]), list(report["pos_distribution"].values())
        ax.set_ylabel("% of pairs")
        ax.set_title(f"POS of the most relevant word — {report['model']}")
    else:
        labels = [w for w, _ in report["top_words"][:20]]
        values = [c for _, c in report["top_words"][:20]]
        ax.set_ylabel("pairs")
        ax.set_title(f"most relevant words (no POS tagger) — {report['model']}")
    ax.bar(range(len(values)), values)
    ax.set_xticks(range(len(values)), labels, rotation=60, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
