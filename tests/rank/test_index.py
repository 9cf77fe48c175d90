"""Corpus index: save / load round trip, provenance checks, memory map, sharded encoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentlab.encoders.loading import build_encoder
from sentlab.errors import DataError
from sentlab.rank.index import CorpusIndex, StaleIndexError, corpus_sha256, encoder_fingerprint

SENTENCES = [
    "a man plays the guitar",
    "a woman plays the piano",
    "the dog runs in the park",
    "a child reads a book",
    "the cat sits on the car",
    "a bird flies in the sky",
]


def test_build_save_load_round_trip(encoder, tmp_path):
    index = CorpusIndex.build(encoder, SENTENCES, "tiny")
    np.testing.assert_allclose(np.linalg.norm(index.vectors, axis=1), 1.0, rtol=1e-5)
    expected = encoder.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    # same batch, normalised by sentlab vs by sentence-transformers: one float32 division apart
    np.testing.assert_allclose(index.vectors, expected, rtol=1e-6, atol=1e-7)
    index.save(tmp_path / "idx")
    loaded = CorpusIndex.load(tmp_path / "idx")
    assert isinstance(loaded.vectors, np.memmap)
    assert loaded.sentences == SENTENCES
    np.testing.assert_array_equal(np.asarray(loaded.vectors), index.vectors)
    assert loaded.encoder_name == "tiny" and loaded.corpus_sha256 == corpus_sha256(SENTENCES)
    loaded.check_encoder(encoder)
    loaded.check_corpus(SENTENCES)
    assert torch.equal(loaded.tensor("cpu"), torch.from_numpy(index.vectors))


def test_index_of_another_encoder_is_refused(encoder, tmp_path):
    from tests.conftest import DEVICE, make_tiny_backbone

    index = CorpusIndex.build(encoder, SENTENCES, "tiny")
    other_weights = make_tiny_backbone(tmp_path / "other", dropout=0.0, seed=1)
    other = build_encoder(str(other_weights), "mean", device=str(DEVICE))  # same architecture, other weights
    with pytest.raises(StaleIndexError, match="not the encoder in use"):
        index.check_encoder(other)
    same_weights_other_pooler = build_encoder(str(encoder[0].auto_model.name_or_path), "cls", device=str(DEVICE))
    assert encoder_fingerprint(same_weights_other_pooler) != encoder_fingerprint(encoder)
    with pytest.raises(StaleIndexError, match="corpus differs"):
        index.check_corpus(SENTENCES[:-1])


def test_changed_and_missing_files_are_refused(encoder, tmp_path):
    CorpusIndex.build(encoder, SENTENCES, "tiny").save(tmp_path / "idx")
    sentences = tmp_path / "idx" / "sentences.arrow"
    sentences.write_bytes(sentences.read_bytes()[:-8])
    with pytest.raises(StaleIndexError, match="incomplete or changed"):
        CorpusIndex.load(tmp_path / "idx")
    CorpusIndex.build(encoder, SENTENCES, "tiny").save(tmp_path / "idx")
    (tmp_path / "idx" / "vectors.npy").unlink()
    with pytest.raises(StaleIndexError, match="incomplete or changed"):
        CorpusIndex.load(tmp_path / "idx")
    (tmp_path / "idx" / "index.json").unlink()
    with pytest.raises(DataError, match="index.json missing"):
        CorpusIndex.load(tmp_path / "idx")
    with pytest.raises(DataError, match="empty corpus"):
        CorpusIndex.build(encoder, [], "tiny")


def test_encoding_sharded_over_two_processes_equals_one_process(encoder):
    single = CorpusIndex.build(encoder, SENTENCES * 4, "tiny")
    sharded = CorpusIndex.build(encoder, SENTENCES * 4, "tiny", batch_size=4, devices=["cpu", "cpu"])
    # other batch sizes (4 vs 256) pad differently: float32 rounding of unit-vector entries, ~1e-7
    np.testing.assert_allclose(sharded.vectors, single.vectors, rtol=1e-5, atol=1e-6)


def test_sentences_are_hashed_and_encoded_a_chunk_at_a_time(encoder, monkeypatch):
    import hashlib

    from datasets import Dataset

    import sentlab.rank.index as index_module

    sentences = [f"{s} number {i}" for i, s in enumerate(SENTENCES * 3)]  # 18 distinct sentences
    naive = hashlib.sha256("".join(s + "\n" for s in sentences).encode()).hexdigest()
    whole = CorpusIndex.build(encoder, sentences, "tiny")
    monkeypatch.setattr(index_module, "BUILD_CHUNK", 5)  # 18 = 5 + 5 + 5 + 3
    encoded: list[int] = []
    original = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda texts, **kw: encoded.append(len(texts)) or original(texts, **kw))
    column = Dataset.from_dict({"sentence": sentences})["sentence"]  # lazy: what a loaded index holds
    chunked = CorpusIndex.build(encoder, column, "tiny")
    assert encoded == [5, 5, 5, 3]
    assert isinstance(chunked.vectors, np.memmap)
    assert corpus_sha256(iter(sentences)) == corpus_sha256(column) == chunked.corpus_sha256 == naive
    # chunks of 5 against one batch of 18: padded to other lengths, float32 rounding of unit vectors
    np.testing.assert_allclose(chunked.vectors, whole.vectors, rtol=1e-5, atol=1e-6)
    given = CorpusIndex.build(encoder, column, "tiny", sha256="f" * 64)  # a known hash is not recomputed
    assert given.corpus_sha256 == "f" * 64


def test_a_loaded_index_maps_its_own_files_and_a_cut_short_save_keeps_the_old_one(
    encoder, tmp_path, monkeypatch, isolated_cache
):
    """Loading reads the folder's own files and writes nothing (no cache, no copy of the corpus: a
    read-only model folder loads); a save cut short leaves the index it was to replace."""
    import sentlab.rank.index as index_module

    CorpusIndex.build(encoder, SENTENCES, "tiny").save(tmp_path / "idx")
    files = {p: p.stat().st_mtime_ns for p in (tmp_path / "idx").iterdir()}
    monkeypatch.setattr(index_module, "corpus_sha256", lambda _: pytest.fail("the record's hash is not reused"))
    loaded = CorpusIndex.load(tmp_path / "idx")
    assert list(isolated_cache.iterdir()) == []
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "idx").iterdir()} == files
    assert not isinstance(loaded.sentences, list)  # the lazy column of the memory-mapped table
    assert loaded.sentences[2] == SENTENCES[2] and len(loaded) == len(SENTENCES)
    vectors = np.array(loaded.vectors)
    loaded.save(tmp_path / "idx")  # over the files it maps: written beside them, then renamed
    again = CorpusIndex.load(tmp_path / "idx")
    assert list(again.sentences) == SENTENCES
    np.testing.assert_array_equal(np.asarray(again.vectors), vectors)

    def cut(_sentences):  # the process dies while the sentences are written
        yield 0, SENTENCES[:2]
        raise KeyboardInterrupt

    monkeypatch.setattr(index_module, "_chunks", cut)
    with pytest.raises(KeyboardInterrupt):
        CorpusIndex.build(encoder, SENTENCES[:3], "tiny").save(tmp_path / "idx")
    assert list(CorpusIndex.load(tmp_path / "idx").sentences) == SENTENCES  # the earlier index, whole
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial folder left


def test_saving_over_a_folder_that_is_not_an_index_is_refused(encoder, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(DataError, match="exists and is not an index"):
        CorpusIndex.build(encoder, SENTENCES, "tiny").save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_an_index_saved_in_format_1_still_loads(encoder, tmp_path):
    """Format 1 kept its sentences as sentences.txt (read through the cache); format 2 reads it."""
    import json

    index = CorpusIndex.build(encoder, SENTENCES, "tiny")
    folder = tmp_path / "v1"
    folder.mkdir()
    np.save(folder / "vectors.npy", index.vectors)
    (folder / "sentences.txt").write_text("".join(s + "\n" for s in SENTENCES), encoding="utf-8")
    meta = {"format_version": 1, "encoder": {"name": "tiny", "fingerprint": index.encoder_fingerprint}}
    meta |= {"corpus_sha256": index.corpus_sha256, "n_sentences": len(index), "dim": index.dim}
    (folder / "index.json").write_text(json.dumps(meta))
    loaded = CorpusIndex.load(folder)
    assert list(loaded.sentences) == SENTENCES
    np.testing.assert_array_equal(np.asarray(loaded.vectors), index.vectors)
