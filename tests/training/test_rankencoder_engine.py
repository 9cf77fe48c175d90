"""RankEncoder re-training through the engine, end to end on tiny models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sentlab.encoders.loading import build_encoder
from sentlab.errors import DataError
from sentlab.methods import validate_config
from sentlab.rank.index import CorpusIndex
from sentlab.rank.model import RankEncoder
from sentlab.training import engine
from sentlab.training.config import TrainConfig
from tests.conftest import DEVICE, make_tiny_backbone, tiny_config

PROBE = ["a man plays the guitar", "a dog runs in the park"]


def rank_config(e2, e1, corpus, out, data_dir=None, rank=None, **train) -> TrainConfig:
    tree = tiny_config(e2, corpus, out, data_dir, **train).to_tree()
    tree["method"] = "rankencoder"
    tree["rank"] = {
        "base_encoder": str(e1),
        "corpus": str(corpus),
        "tau_lower": None,
        "tau_upper": None,
        "lambda_train": 1.0,
        **(rank or {}),
    }
    return validate_config(tree)


def test_rankencoder_run_end_to_end(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path):
    cfg = rank_config(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path / "run", max_steps=6)
    paths = engine.train(cfg, evaluate=False)
    train_vectors = np.load(paths.base_train_vectors / "vectors.npy")
    assert train_vectors.shape[0] == 96
    provenance = json.loads((paths.base_train_vectors / "complete.json").read_text())
    assert provenance["rows"] == 96 and len(provenance["sentences_sha256"]) == 64
    # where the frozen table was read, read back from the loss at the first step (a CPU reads it in place)
    expected = "host" if DEVICE.type == "cpu" else "device"
    assert json.loads(paths.runtime.read_text())["frozen_tables"] == {"_base_rows": expected}
    assert f"frozen table _base_rows read on the {expected}" in paths.log.read_text()
    e1 = build_encoder(str(tiny_backbone_no_dropout), "cls")
    # other batch shapes than the run's (256 vs 3 rows, other padding): float32 rounding of O(1) values
    np.testing.assert_allclose(
        train_vectors[:3],
        e1.encode(corpus_file.read_text().splitlines()[:3], normalize_embeddings=True),
        rtol=1e-5,
        atol=1e-6,
    )
    CorpusIndex.load(paths.base_index).check_encoder(e1)
    records = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    assert len([r for r in records if "loss" in r]) == 6
    assert all({"l_cl_last", "l_r_last"} <= set(r) for r in records if "loss" in r)  # Fig. 8's two curves
    rank_encoder = RankEncoder.load(paths.model)  # E2 + E2's own index, fingerprint-checked
    assert rank_encoder.lambda_inf == 0.1 and len(rank_encoder.index) == 96
    plain = SentenceTransformer(str(paths.model))
    np.testing.assert_array_equal(plain.encode(PROBE), rank_encoder.encoder.encode(PROBE))
    assert not np.allclose(plain.encode(PROBE), build_encoder(str(tiny_backbone), "cls").encode(PROBE))
    modules = json.loads((paths.model / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling"]


def test_resume_reuses_e1_vectors(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path):
    cfg = rank_config(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path / "run", max_steps=4, save_steps=2)
    paths = engine.train(cfg, evaluate=False)
    stamps = (
        (paths.base_train_vectors / "vectors.npy").stat().st_mtime_ns,
        (paths.base_index / "vectors.npy").stat().st_mtime_ns,
    )
    longer = rank_config(
        tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path / "run", max_steps=6, save_steps=2
    )
    engine.train(longer, resume=True, evaluate=False, allow_changed=True)  # a longer run of the same training
    assert (
        (paths.base_train_vectors / "vectors.npy").stat().st_mtime_ns,
        (paths.base_index / "vectors.npy").stat().st_mtime_ns,
    ) == stamps
    steps = [json.loads(line).get("step") for line in paths.metrics.read_text().splitlines()]
    assert max(s for s in steps if s) == 6


def test_prebuilt_index_of_another_encoder_is_refused(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path):
    other = build_encoder(str(make_tiny_backbone(tmp_path / "other", seed=3)), "cls")
    CorpusIndex.build(other, ["a dog", "a cat"], "other").save(tmp_path / "idx")
    cfg = rank_config(
        tiny_backbone,
        tiny_backbone_no_dropout,
        corpus_file,
        tmp_path / "run",
        max_steps=2,
        rank={"corpus": None, "index": str(tmp_path / "idx")},
    )
    with pytest.raises(DataError, match="not the encoder in use"):
        engine.train(cfg, evaluate=False)


def test_rank_section_is_validated(tiny_backbone, corpus_file, tmp_path):
    with pytest.raises(ValueError, match="exactly one of rank.corpus and rank.index"):
        rank_config(tiny_backbone, tiny_backbone, corpus_file, tmp_path, rank={"index": "x"})
    tree = tiny_config(tiny_backbone, corpus_file, tmp_path).to_tree()
    tree["method"] = "rankencoder"
    with pytest.raises(ValueError, match="needs a 'rank' section"):
        validate_config(tree)


def test_promptbert_base_objective(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path):
    """The second base: E2 with PromptBERT's template pooler trains under the rank loss."""
    tree = rank_config(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path / "run", max_steps=2).to_tree()
    tree["model"]["pooler"] = "prompt"
    paths = engine.train(validate_config(tree), evaluate=False)
    rank_encoder = RankEncoder.load(paths.model)
    assert type(rank_encoder.encoder[0]).__name__ == "PromptTransformer"
    assert rank_encoder.scorer(lambda_inf=0.5).score(PROBE[:1], PROBE[1:]).shape == (1,)
