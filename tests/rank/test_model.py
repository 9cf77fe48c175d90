"""Eq. 7 scoring (exact at lambda 0 and 1) and the RankEncoder folder (save / load, plain ST load)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer

from sentlab.errors import DataError
from sentlab.evaluation.scoring import CosineScorer
from sentlab.rank.index import StaleIndexError
from sentlab.rank.model import RankEncoder, RankScorer
from tests.conftest import DEVICE

LEFT = ["a man plays the guitar", "a dog runs in the park", "the child reads a book", "a man plays the guitar"]
RIGHT = ["a woman plays the piano", "the cat sits on the car", "a girl reads a book", "a bird flies in the sky"]


@pytest.fixture
def same_inputs(encoder, monkeypatch):
    """Make every scoring path rank identical similarity rows, and record them.

    Embeddings come from one encoding of LEFT + RIGHT (a cache), and each query row's corpus
    similarities come from its own 1 x d product, so the values no longer depend on which other
    rows share a batch. (Without this, float32 rounding differs between batch shapes, CPUs and BLAS
    builds, and near-tied corpus cosines swap ranks: a Spearman moves by ~1e-4.)
    Returns {sentence embedding bytes: similarity row} for the reference.
    """
    import sentlab.rank.model as rank_model
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.rank.vectors import rank_vectors

    cache = EmbeddingCache(encoder)
    cache.encode([*LEFT, *RIGHT])
    rows: dict[bytes, np.ndarray] = {}

    def row_by_row(queries, corpus, normalized=False):
        out = []
        for q in queries:
            rows[q.cpu().numpy().tobytes()] = (q[None].float() @ corpus.float().T)[0].cpu().numpy()
            out.append(rank_vectors(q[None], corpus, normalized=normalized))
        return torch.cat(out)

    monkeypatch.setattr(rank_model, "rank_vectors", row_by_row)
    return cache, rows


def naive_rank_similarity(cache, rows, s1, s2):
    """scipy's Spearman of the two sentences' recorded corpus-similarity rows."""
    # normalised on the device the scorer normalised on, so the rows' keys are the same bytes
    q = F.normalize(torch.from_numpy(cache.encode([s1, s2])).to(cache.model.device), dim=-1).cpu()
    return spearmanr(rows[q[0].cpu().numpy().tobytes()], rows[q[1].cpu().numpy().tobytes()])[0]


def test_lambda_zero_is_exactly_cosine(encoder, index):
    scores = RankScorer(encoder, index, lambda_inf=0.0).score(LEFT, RIGHT)
    np.testing.assert_array_equal(scores, CosineScorer(encoder).score(LEFT, RIGHT))


def test_lambda_one_is_exactly_the_rank_correlation(same_inputs, index):
    cache, rows = same_inputs
    scores = RankScorer(cache, index, lambda_inf=1.0, pair_chunk=2).score(LEFT, RIGHT)
    expected = [naive_rank_similarity(cache, rows, a, b) for a, b in zip(LEFT, RIGHT)]
    # same similarity rows on both sides, so the same ranks; what is left is the float32 inner
    # product of two unit rank vectors of n = 400 entries: |error| <= n * 2**-24 = 2.4e-5 at worst
    np.testing.assert_allclose(scores, expected, atol=2.5e-5)


def test_mixed_similarity_eq7_and_encode_agree(same_inputs, encoder, index):
    cache, _ = same_inputs
    lam = 0.3
    scorer = RankScorer(cache, index, lambda_inf=lam)
    mixed = scorer.score(LEFT, RIGHT)
    cos = CosineScorer(cache).score(LEFT, RIGHT)
    ranked = RankScorer(cache, index, lambda_inf=1.0).score(LEFT, RIGHT)
    np.testing.assert_allclose(mixed, lam * ranked + (1 - lam) * cos, atol=1e-12)  # the same numbers, mixed
    a, b = scorer.encode(LEFT), scorer.encode(RIGHT)
    assert a.shape == (len(LEFT), len(index) + encoder.get_embedding_dimension())
    # the same ranks and cosines, summed in another order in float32 over 400 + 32 entries: < 3e-5
    np.testing.assert_allclose((a * b).sum(axis=1), mixed, atol=3e-5)


def test_lambda_outside_unit_interval_is_refused(encoder, index):
    with pytest.raises(DataError, match="lambda_inf"):
        RankScorer(encoder, index, lambda_inf=1.5)


def test_rankencoder_folder_round_trip(encoder, index, tmp_path):
    folder = RankEncoder(encoder, index, lambda_inf=0.2).save(tmp_path / "re")
    plain = SentenceTransformer(str(folder), device=str(DEVICE))
    np.testing.assert_array_equal(plain.encode(LEFT), encoder.encode(LEFT))
    loaded = RankEncoder.load(folder, device=str(DEVICE))
    assert loaded.lambda_inf == 0.2 and loaded.index.sentences == index.sentences
    np.testing.assert_array_equal(
        loaded.scorer().score(LEFT, RIGHT), RankEncoder(encoder, index, 0.2).scorer().score(LEFT, RIGHT)
    )


def test_rankencoder_folder_with_a_foreign_index_is_refused(encoder, index, tmp_path):
    folder = RankEncoder(encoder, index).save(tmp_path / "re")
    model = SentenceTransformer(str(folder), device=str(DEVICE))
    with torch.no_grad():  # the encoder changes after the index was built: the index is stale
        model[0].auto_model.embeddings.word_embeddings.weight.add_(0.01)
    model.save(str(folder))
    with pytest.raises(StaleIndexError):
        RankEncoder.load(folder, device=str(DEVICE))
    (folder / "rankencoder.json").write_text(json.dumps({"lambda": 1}), encoding="utf-8")
    with pytest.raises(DataError, match="lambda_inf"):
        RankEncoder.load(folder, device=str(DEVICE))
