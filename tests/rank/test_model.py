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

LEFT = ["a man plays the guitar", "a dog runs in the park", "the child reads a book", "a man plays the guitar"]
RIGHT = ["a woman plays the piano", "the cat sits on the car", "a girl reads a book", "a bird flies in the sky"]




def naive_rank_similarity(encoder, index, s1, s2):
    """scipy's Spearman of the two sentences' cosine lists over the corpus.

    The cosines are float32 products, as sentlab computes them: in float64 a few near-equal
    cosines order differently than in float32, which moves the correlation by ~1e-5.
    """
    v = F.normalize(torch.from_numpy(encoder.encode([s1, s2], convert_to_numpy=True)), dim=-1)
    sims = (v @ torch.from_numpy(np.asarray(index.vectors)).T).numpy()
    return spearmanr(sims[0], sims[1])[0]


def test_lambda_zero_is_exactly_cosine(encoder, index):
    scores = RankScorer(encoder, index, lambda_inf=0.0).score(LEFT, RIGHT)
    np.testing.assert_array_equal(scores, CosineScorer(encoder).score(LEFT, RIGHT))


def test_lambda_one_is_exactly_the_rank_correlation(encoder, index):
    scores = RankScorer(encoder, index, lambda_inf=1.0, pair_chunk=2).score(LEFT, RIGHT)
    expected = [naive_rank_similarity(encoder, index, a, b) for a, b in zip(LEFT, RIGHT)]
    np.testing.assert_allclose(scores, expected, atol=1e-5)


def test_mixed_similarity_eq7_and_encode_agree(encoder, index):
    lam = 0.3
    scorer = RankScorer(encoder, index, lambda_inf=lam)
    mixed = scorer.score(LEFT, RIGHT)
    cos = CosineScorer(encoder).score(LEFT, RIGHT)
    ranked = RankScorer(encoder, index, lambda_inf=1.0).score(LEFT, RIGHT)
    np.testing.assert_allclose(mixed, lam * ranked + (1 - lam) * cos, atol=1e-12)
    a, b = scorer.encode(LEFT), scorer.encode(RIGHT)
    assert a.shape == (len(LEFT), len(index) + encoder.get_embedding_dimension())
    np.testing.assert_allclose((a * b).sum(axis=1), mixed, atol=1e-5)


def test_lambda_outside_unit_interval_is_refused(encoder, index):
    with pytest.raises(DataError, match="lambda_inf"):
        RankScorer(encoder, index, lambda_inf=1.5)


def test_rankencoder_folder_round_trip(encoder, index, tmp_path):
    folder = RankEncoder(encoder, index, lambda_inf=0.2).save(tmp_path / "re")
    plain = SentenceTransformer(str(folder), device="cpu")
    np.testing.assert_array_equal(plain.encode(LEFT), encoder.encode(LEFT))
    loaded = RankEncoder.load(folder, device="cpu")
    assert loaded.lambda_inf == 0.2 and loaded.index.sentences == index.sentences
    np.testing.assert_array_equal(loaded.scorer().score(LEFT, RIGHT), RankEncoder(encoder, index, 0.2).scorer().score(LEFT, RIGHT))


def test_rankencoder_folder_with_a_foreign_index_is_refused(encoder, index, tmp_path):
    folder = RankEncoder(encoder, index).save(tmp_path / "re")
    model = SentenceTransformer(str(folder), device="cpu")
    with torch.no_grad():  # the encoder changes after the index was built: the index is stale
        model[0].auto_model.embeddings.word_embeddings.weight.add_(0.01)
    model.save(str(folder))
    with pytest.raises(StaleIndexError):
        RankEncoder.load(folder, device="cpu")
    (folder / "rankencoder.json").write_text(json.dumps({"lambda": 1}), encoding="utf-8")
    with pytest.raises(DataError, match="lambda_inf"):
        RankEncoder.load(folder, device="cpu")
