"""RankEncoder analyses on a tiny encoder and a small STS-B-shaped fixture."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from sentlab.data.sts import load_sts_task
from sentlab.evaluation.scoring import EmbeddingCache
from sentlab.rank.analysis import analyze, overlapping_neighbours, top_k_neighbours, vector_map
from sentlab.rank.model import RankEncoder
from tests.conftest import WORDS


@pytest.fixture(scope="module")
def stsb_dir(tmp_path_factory):
    rng = random.Random(2)
    root = tmp_path_factory.mktemp("data")
    folder = root / "senteval" / "downstream" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True)
    for split in ("dev", "test"):
        rows = []
        for i in range(80):
            a = " ".join(rng.choice(WORDS) for _ in range(6))
            b = " ".join(rng.choice(WORDS) for _ in range(6))
            rows.append(f"g\tf\t2012\t{i:04d}\t{rng.uniform(0, 5):.2f}\t{a}\t{b}")
        (folder / f"sts-{split}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_top_k_neighbours_match_a_full_sort(encoder, index):
    queries = encoder.encode(["a man plays the guitar", "the dog runs"])
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    sims = unit @ np.asarray(index.vectors).T
    found = top_k_neighbours(queries, index, 10)
    assert len({*found[0]}) == 10
    # the similarities of the neighbours found are the 10 largest (ids may differ only among near-ties)
    np.testing.assert_allclose(np.sort(np.take_along_axis(sims, found, 1)), np.sort(sims, 1)[:, -10:], atol=1e-5)


def test_overlapping_neighbours_match_a_naive_computation(encoder, index, stsb_dir):
    from scipy.stats import spearmanr

    pairs = load_sts_task("STS-B", stsb_dir, split="test")
    result = overlapping_neighbours(EmbeddingCache(encoder), index, pairs, k=20, min_pairs=5)
    assert sum(g["n_pairs"] for g in result["groups"]) == len(pairs)
    a = encoder.encode(pairs.sentences1, normalize_embeddings=True)
    b = encoder.encode(pairs.sentences2, normalize_embeddings=True)
    corpus = np.asarray(index.vectors)
    top = lambda v: set(np.argsort(-(corpus @ v), kind="stable")[:20])  # noqa: E731
    overlap = np.array([len(top(x) & top(y)) for x, y in zip(a, b)])
    cos = (a * b).sum(axis=1)
    assert any("spearman_E" in group for group in result["groups"])  # the checks below run for some groups
    for group in result["groups"]:
        low, high = group["cosine_range"]
        mask = (cos > low) & (cos <= high)
        assert group["n_pairs"] == mask.sum()
        if mask.any():
            assert group["mean_overlap"] == pytest.approx(overlap[mask].mean())
        if "spearman_E" in group:
            assert group["spearman_E"] == pytest.approx(100 * spearmanr(cos[mask], pairs.scores[mask])[0], abs=1e-3)
            assert group["gain"] == pytest.approx(group["spearman_RankEncoder_E"] - group["spearman_E"])


def test_vector_map_distances(encoder, index, stsb_dir):
    pairs = load_sts_task("STS-B", stsb_dir, split="test")
    result = vector_map(EmbeddingCache(encoder), index, pairs, n=40)
    assert result["n_sentences"] == 40
    for space in result["spaces"].values():
        assert np.asarray(space["coordinates"]).shape == (40, 2)
        assert 0 < space["mean_nearest_neighbour_distance"] <= space["mean_distance"]


def test_analyze_writes_json_and_png(encoder, index, stsb_dir, tmp_path):
    retrained = RankEncoder(encoder, index, 0.1)
    written = analyze(encoder, index, tmp_path / "out", stsb_dir, retrained=retrained)
    assert set(written) == {"similar_pairs", "overlapping_neighbours", "rank_geometry", "vector_map"}
    similar = json.loads(written["similar_pairs"].read_text())
    assert set(similar["variants"]) == {"E", "RankEncoder_E", "RankEncoder_E-retrain", "RankEncoder_E-retrain-inf"}
    assert similar["variants"]["E"] == similar["variants"]["RankEncoder_E-retrain"]  # same encoder, cosine
    geometry = json.loads(written["rank_geometry"].read_text())
    assert {"alignment", "uniformity"} <= set(geometry["RankEncoder_E"])
    assert (tmp_path / "out" / "overlapping_neighbours.png").stat().st_size > 0
    assert (tmp_path / "out" / "vector_map.png").stat().st_size > 0
