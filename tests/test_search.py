"""Search over stored codes (sentlab.search.CodeIndex): the codes' ranking against a naive second
implementation, the float rescoring, a saved index read back identically, a half-written one refused,
and the centred codes against sentence-transformers' own uint8 / binary search on the same passages."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.errors import DataError
from sentlab.search import META, CodeIndex


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def collection() -> tuple[np.ndarray, np.ndarray]:
    """Clustered unit passages off the origin (as sentence embeddings are) and queries near some of them."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(40, 64)) + 0.5
    passages = unit(centres[rng.integers(0, 40, 2000)] + rng.normal(size=(2000, 64)) * 0.8)
    queries = unit(passages[rng.integers(0, 2000, 100)] + rng.normal(size=(100, 64)) * 0.05)
    return passages, queries


def exact_top(passages, queries, k=10) -> np.ndarray:
    return np.argsort(-(queries @ passages.T), axis=1, kind="stable")[:, :k]


def kept(found, exact) -> float:
    return float(np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, exact)]))


def test_uint8_codes_rank_as_the_float_query_against_the_decoded_passages(collection):
    import faiss

    passages, queries = collection
    index = CodeIndex.build(passages, "uint8")
    trained = faiss.vector_to_array(index.index.sq.trained).reshape(2, -1)  # each dimension's low and width
    codes = index.index.sa_encode(passages).astype(np.float64)
    decoded = trained[0] + (codes + 0.5) / 255 * trained[1]  # the middle of each code's step
    naive = np.argsort(-(queries.astype(np.float64) @ decoded.T), axis=1, kind="stable")[:, :20]
    # the same ranking; a near-tie may order two passages differently between float32 and float64 sums
    assert kept(index.candidates(queries, 20), naive) > 0.99
    assert index.bytes_a_passage == 64


def test_ubinary_codes_are_each_dimension_above_the_passages_mean_ranked_by_hamming(collection):
    passages, queries = collection
    index = CodeIndex.build(passages, "ubinary")
    mean = passages.mean(axis=0)
    distances = ((queries > mean)[:, None, :] != (passages > mean)[None, :, :]).sum(axis=2)
    found = index.candidates(queries, 20)
    # faiss's order of passages at the same distance is its own: compare the distances reached
    np.testing.assert_array_equal(np.take_along_axis(distances, found, axis=1), np.sort(distances, axis=1)[:, :20])
    assert index.bytes_a_passage == 8


@pytest.mark.parametrize("precision", ["uint8", "ubinary"])
def test_the_candidates_are_ranked_again_by_the_float_query(precision, collection):
    passages, queries = collection
    index = CodeIndex.build(passages, precision)
    ids, scores = index.search(queries, top_k=10, rescore=4)
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", queries, passages[ids]), rtol=1e-5, atol=1e-6)
    assert (np.diff(scores, axis=1) <= 1e-7).all()  # best first
    candidates = index.candidates(queries, 40)
    assert all(set(row) <= set(c) for row, c in zip(ids, candidates))  # only among the codes' 40 best


def test_uint8_codes_searched_with_the_float_query_keep_more_than_sentence_transformers_search(collection):
    """The same passages and float queries, twice top_k rescored: recall@10 kept against float32. (Its
    rescoring reads the codes, CodeIndex's the float rows: both differences are in the comparison.)"""
    from sentence_transformers.util.quantization import quantize_embeddings, semantic_search_faiss

    passages, queries = collection
    exact = exact_top(passages, queries)
    ours, _ = CodeIndex.build(passages, "uint8").search(queries, top_k=10, rescore=2)
    ranges = np.vstack([passages.min(0), passages.max(0)])
    stored = quantize_embeddings(passages, "uint8", ranges=ranges)
    hits, _ = semantic_search_faiss(
        queries, corpus_embeddings=stored, corpus_precision="uint8", top_k=10, ranges=ranges, rescore=True
    )
    theirs = [[hit["corpus_id"] for hit in row] for row in hits]
    assert kept(ours, exact) > 0.95 and kept(ours, exact) > kept(theirs, exact)


def test_binary_codes_centred_on_the_passages_find_more_than_signs_alone(collection):
    """The centring alone, all else equal (the same index and rescoring): bits above the passages' mean
    against bits above 0, for passages that all lie off the origin, as sentence embeddings do."""
    import faiss

    passages, queries = collection
    exact = exact_top(passages, queries)
    centred = CodeIndex.build(passages, "ubinary")
    signs = faiss.IndexBinaryFlat(passages.shape[1])
    signs.add(np.packbits(passages > 0, axis=1))
    uncentred = CodeIndex(signs, "ubinary", passages, np.zeros(passages.shape[1], dtype=np.float32))
    assert kept(centred.candidates(queries, 20), exact) > kept(uncentred.candidates(queries, 20), exact)
    assert kept(centred.search(queries)[0], exact) > kept(uncentred.search(queries)[0], exact)


@pytest.mark.parametrize("precision", ["uint8", "ubinary"])
def test_a_saved_index_reads_back_identically_and_a_half_written_one_is_refused(precision, collection, tmp_path):
    passages, queries = collection
    built = CodeIndex.build(passages, precision)
    built.save(tmp_path / "index")
    loaded = CodeIndex.load(tmp_path / "index")
    assert isinstance(loaded.floats, np.memmap) and len(loaded) == len(passages)
    for a, b in zip(built.search(queries), loaded.search(queries)):
        np.testing.assert_array_equal(a, b)
    np.save(tmp_path / "index" / "floats.npy", passages[:10])  # files that disagree with index.json
    with pytest.raises(DataError, match="disagree"):
        CodeIndex.load(tmp_path / "index")
    (tmp_path / "index" / META).unlink()  # a writing that stopped before its last file
    with pytest.raises(DataError, match="not a whole index"):
        CodeIndex.load(tmp_path / "index")


def test_bad_input_is_one_line(collection):
    passages, queries = collection
    with pytest.raises(DataError, match="one of uint8, ubinary"):
        CodeIndex.build(passages, "int4")
    with pytest.raises(DataError, match="not a multiple of 8"):
        CodeIndex.build(passages[:, :60], "ubinary")
    with pytest.raises(DataError, match="the index holds 64 dimensions"):
        CodeIndex.build(passages, "uint8").search(queries[:, :32])
