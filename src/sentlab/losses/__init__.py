"""sentlab's losses: each one a ``torch.nn.Module`` over a sentence-transformers model, for
``SentenceTransformerTrainer`` (or sentlab's engine, which builds them from a config).

=====================  =====================================  ==========================================
loss                   paper                                  inputs
=====================  =====================================  ==========================================
:class:`SimCSELoss`    SimCSE Eq. 1 (unsup.) / Eq. 5 (sup.)   (sentence) or (anchor, positive[, negative])
:class:`RankCSELoss`   RankCSE Eq. 6                          (sentence, label = row in teacher vectors)
:class:`RankEncoderLoss` RankEncoder Eq. 5                    (sentence, label = row in E1's vectors)
:class:`TSDAELoss`     TSDAE Sec. 3.1                         (noisy, original): :func:`noisy_pairs`
:class:`MLMLoss`       BERT's masked LM (TSDAE Sec. 5.2)      (sentence)
:class:`FlowNLLLoss`   BERT-flow (TSDAE Sec. 5.5)             (sentence)
:class:`RSELoss`       RSE Eq. 1-2                            (head, tail[, negative], label = relation)
:class:`GradientCache` Gao et al. 2021: any of the above     as the wrapped loss
                       but TSDAE, MLM and BERT-flow, chunked
=====================  =====================================  ==========================================

The extra inputs are built with public helpers: :func:`indexed_sentences` gives the ``label`` column
of row numbers that RankCSE and RankEncoder use to find each sentence's frozen vectors, and the
frozen vectors themselves are ``teacher.encode(sentences)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from datasets import Dataset

from sentlab.losses.flow import FlowNLLLoss
from sentlab.losses.gradcache import GradientCache, innermost
from sentlab.losses.mlm import MLMLoss
from sentlab.losses.rankcse import RankCSELoss
from sentlab.losses.rankencoder import RankEncoderLoss
from sentlab.losses.rse import CachedRSELoss, RSELoss  # noqa: F401 - CachedRSELoss: deprecated, for 0.2.x
from sentlab.losses.simcse import SimCSELoss, info_nce
from sentlab.losses.tsdae import TSDAELoss


def indexed_sentences(sentences: Sequence[str]) -> Dataset:
    """A dataset of ``sentence`` and ``label`` = its row number (RankCSE's and RankEncoder's inputs:
    the loss reads row ``label`` of the frozen vectors)."""
    return Dataset.from_dict({"sentence": list(sentences), "label": list(range(len(sentences)))})


def noisy_pairs(
    sentences: Sequence[str], noise: str = "delete", ratio: float = 0.6, seed: int = 0, mask_token: str = "[MASK]"
) -> Dataset:
    """TSDAE's inputs: ``(noisy, sentence)`` rows, the noise drawn afresh each time a row is read
    (:class:`sentlab.data.noise.NoisyPairs`; TSDAE App. A: deletion at 0.6 is best)."""
    from sentlab.data.noise import NoisyPairs, corpus_vocabulary

    vocabulary = corpus_vocabulary(list(sentences)) if noise in ("replace", "add") else ()
    dataset = indexed_sentences(sentences)
    dataset.set_transform(NoisyPairs(noise, ratio, seed, mask_token=mask_token, vocabulary=vocabulary))
    return dataset


__all__ = [  # CachedRSELoss stays importable for its version of deprecation, not exported
    "FlowNLLLoss",
    "GradientCache",
    "MLMLoss",
    "RSELoss",
    "RankCSELoss",
    "RankEncoderLoss",
    "SimCSELoss",
    "TSDAELoss",
    "indexed_sentences",
    "info_nce",
    "innermost",
    "noisy_pairs",
]
