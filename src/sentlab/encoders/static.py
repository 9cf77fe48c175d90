"""A static student of any sentence encoder: a vector per token, averaged (model2vec's recipe).

Three steps, each a library's own code:

1. **Distillation** (model2vec's ``distill_from_model``, Tulkens & van Dongen 2024): the teacher's
   transformer embeds every token of its vocabulary alone, PCA reduces the vectors to ``pca_dims``
   and Zipf / SIF weighting (``sif_coefficient``) down-weights frequent tokens. The vocabulary is
   extended with the most frequent words of the user's corpus (tokenlearn's ``create_vocab``) that the
   tokenizer lacks, each embedded whole.
2. **Training on the corpus against the teacher** (tokenlearn's ``train_model``): the teacher's
   sentence embeddings of the corpus, reduced by PCA to ``pca_dims``, are regressed (MSE) from the
   weighted mean of the student's token vectors through a linear layer; the token vectors and their
   weights are trained, the layer is dropped, and each token's vector keeps its weight folded in.
   tokenlearn keeps the state of lowest loss on its held-out tenth of the corpus.
3. **Training on labelled pairs** is ``sentlab train`` with the ``supervised`` method and the saved
   student as ``model.name`` (sentence-transformers trains its ``StaticEmbedding``).

The student is saved as an ordinary sentence-transformers model (``StaticEmbedding``, then
``Normalize`` when the teacher normalises) that ``SentenceTransformer(path)`` loads, and in model2vec's
own format in ``model2vec/`` inside it (``StaticModel.from_pretrained``). ``model2vec`` and
``tokenlearn`` are the ``static`` extra; without them this is one line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from sentlab.errors import ConfigError, SentlabError, extra_hint

MODEL2VEC_FOLDER = "model2vec"
POOLING = {"mean": "mean", "cls": "first", "lasttoken": "last"}  # sentence-transformers' -> model2vec's


def require_static_extra() -> None:
    """A one-line error naming the extra when model2vec or tokenlearn is not installed."""
    missing = [name for name in ("model2vec", "tokenlearn") if importlib.util.find_spec(name) is None]
    if missing:
        raise SentlabError(
            f"a static student needs {' and '.join(missing)} ({extra_hint('static')}: model2vec, tokenlearn)"
        )


def is_static(model: SentenceTransformer) -> bool:
    """Whether ``model`` is a static embedding model (its first module a ``StaticEmbedding``)."""
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    try:
        first = model[0]
    except (TypeError, IndexError, KeyError):  # not a module pipeline (a stand-in, an exported model)
        return False
    return isinstance(first, StaticEmbedding)


STATIC_BATCH_SIZE = 4096  # sentlab encode's batch for a static model (docs/guides/static.md measures it)


@contextlib.contextmanager
def parallel_tokenizer() -> Iterator[None]:
    """The tokenizers library's own threads on while a static model encodes: its forward pass is a lookup
    and a sum, so tokenising is most of its time (sentlab's commands turn the threads off otherwise)."""
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before


def encode_static(
    model: SentenceTransformer, texts: Sequence[str], batch_size: int, normalize_embeddings: bool = False
) -> np.ndarray:
    """A static model's embeddings of ``texts`` as float32 numpy through sentence-transformers' ``encode``
    in one call (not in sentlab's batches by token length, which would tokenise every text twice), the
    tokenizer's threads on."""
    with parallel_tokenizer():
        out = model.encode(
            list(texts),
            batch_size=batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
            normalize_embeddings=normalize_embeddings,
        )
    return np.asarray(out, dtype=np.float32)


def teacher_pooling(teacher: SentenceTransformer) -> str:
    """The teacher's pooling as model2vec names it (a token's vector is taken the way the teacher pools)."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    modes = [m.pooling_mode for m in teacher if isinstance(m, Pooling)]
    mode = modes[0] if modes else "mean"
    if mode not in POOLING:
        raise ConfigError(f"a static student: the teacher pools by {mode}; model2vec distils mean, cls or lasttoken")
    return POOLING[mode]


def corpus_vocabulary(texts: Sequence[str], size: int) -> list[str]:
    """The ``size`` most frequent words and punctuation runs of ``texts``, lower-cased (tokenlearn's
    ``create_vocab``); model2vec adds those its tokenizer lacks as whole tokens."""
    from tokenlearn.utils import create_vocab

    return create_vocab(texts=list(texts), vocab_size=size) if size else []


def distill(
    teacher: SentenceTransformer,
    vocabulary: Sequence[str] = (),
    pca_dims: int = 256,
    sif_coefficient: float = 1e-4,
):
    """model2vec's distillation of ``teacher`` (a ``StaticModel``, float32), on the teacher's device."""
    transformer = teacher[0]
    if not hasattr(transformer, "auto_model"):
        raise ConfigError(
            "a static student is distilled from a transformer encoder; this model's first module is not one"
        )
    width = transformer.auto_model.config.hidden_size
    try:
        return _distill_from_model(teacher, transformer, vocabulary, pca_dims, width, sif_coefficient)
    except ValueError as err:
        if "not enough values to unpack" not in str(err):
            raise
        raise ConfigError(
            "model2vec distils subword tokenizers only (WordPiece, BPE, Unigram); this teacher's splits no word"
        ) from None


def _distill_from_model(teacher, transformer, vocabulary, pca_dims, width, sif_coefficient):
    from model2vec.distill import distill_from_model

    return distill_from_model(
        transformer.auto_model,
        transformer.tokenizer,
        vocabulary=list(vocabulary) or None,
        device=str(teacher.device),
        pca_dims=min(pca_dims, width),
        sif_coefficient=sif_coefficient,
        quantize_to="float32",
        pooling=teacher_pooling(teacher),
    )


def train_on_corpus(student, texts: Sequence[str], targets: np.ndarray, pca_dims: int, device: str, seed: int):
    """tokenlearn's training of ``student`` toward the teacher's embeddings ``targets`` of ``texts``
    (the targets reduced by PCA to the student's width; see the module doc). Seeded: the PCA's
    randomised solver and the batches' order are drawn from ``seed``."""
    import torch
    from tokenlearn.train import train_model

    if len(texts) < 20:
        raise ConfigError(f"training a static student on the corpus needs 20 sentences or more, not {len(texts)}")
    if student.tokenizer.token_to_id("[PAD]") is None:
        raise ConfigError("tokenlearn's training pads with [PAD], which this tokenizer has not")
    np.random.seed(seed)
    torch.manual_seed(seed)
    # the targets' PCA (tokenlearn's) keeps at most one component a sentence; the student keeps its width
    width = min(pca_dims, student.embedding.shape[1], targets.shape[1], len(texts))
    return train_model(
        with_weights_folded(student), list(texts), np.asarray(targets, dtype=np.float32), device=device, pca_dims=width
    )


def with_weights_folded(student):
    """``student`` with its per-token weights (model2vec's Zipf / SIF weighting, kept apart from the
    vectors) and its token mapping folded into one vector a token: tokenlearn trains ``embedding``
    alone, and would drop them."""
    from model2vec import StaticModel

    weights, mapping = getattr(student, "weights", None), getattr(student, "token_mapping", None)
    if weights is None and mapping is None:
        return student
    vectors = student.embedding if mapping is None else student.embedding[mapping]
    if weights is not None:
        vectors = vectors * np.asarray(weights, dtype=vectors.dtype)[:, None]
    return StaticModel(vectors=vectors.astype(np.float32), tokenizer=student.tokenizer, config=student.config)


def save_student(student, output: Path, normalize: bool) -> SentenceTransformer:
    """``student`` in model2vec's format (``output/model2vec``) and as a sentence-transformers model at
    ``output`` (``StaticEmbedding`` built from that folder by sentence-transformers, then ``Normalize``
    when the teacher normalises); returns the sentence-transformers model."""
    from sentence_transformers.sentence_transformer.modules import Normalize, StaticEmbedding

    output.mkdir(parents=True, exist_ok=True)
    # the teacher's tokenizer may pad to a fixed length (all-MiniLM-L6-v2's pads to 128), which model2vec
    # would average in as tokens; a static model reads whole texts, neither padded nor cut
    student.tokenizer.no_padding()
    student.tokenizer.no_truncation()
    student.normalize = normalize  # model2vec normalises by default; its copy encodes as the saved model does
    student.config["normalize"] = normalize
    student.save_pretrained(str(output / MODEL2VEC_FOLDER))
    embedding = StaticEmbedding.from_model2vec(str(output / MODEL2VEC_FOLDER))
    model = SentenceTransformer(modules=[embedding, *([Normalize()] if normalize else [])], device="cpu")
    model.save(str(output))
    return model
