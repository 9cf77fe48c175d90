"""RankCSE through the engine, end to end on tiny models (teacher = another tiny model)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from sentlab.encoders.loading import build_encoder
from sentlab.methods import validate_config
from sentlab.training import engine
from sentlab.training.config import TrainConfig
from tests.conftest import tiny_config

PROBE = ["a man plays the guitar", "a dog runs in the park"]


def rankcse_config(student, teachers, corpus, out, rankcse=None, **train) -> TrainConfig:
    tree = tiny_config(student, corpus, out, **train).to_tree()
    tree["method"] = "rankcse"
    tree["rankcse"] = {"teachers": [str(t) for t in teachers], **(rankcse or {})}
    return validate_config(tree)


@pytest.mark.parametrize("distillation", ["listnet", "listmle"])
def test_rankcse_run_end_to_end(tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path, distillation):
    cfg = rankcse_config(
        tiny_backbone,
        [tiny_backbone_no_dropout, tiny_backbone],
        corpus_file,
        tmp_path / "run",
        {"teacher_weights": [1 / 3, 2 / 3], "distillation": distillation},
        max_steps=4,
    )
    paths = engine.train(cfg, evaluate=False)
    for k, backbone in enumerate([tiny_backbone_no_dropout, tiny_backbone]):
        vectors = np.load(paths.teacher_vectors / f"teacher{k}" / "vectors.npy")
        teacher = build_encoder(str(backbone), "cls")
        expected = teacher.encode(corpus_file.read_text().splitlines()[:2], normalize_embeddings=True)
        # other batch shapes than the run's (other padding): float32 rounding of O(1) unit-vector entries
        np.testing.assert_allclose(vectors[:2], expected, rtol=1e-5, atol=1e-6)
    records = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    logged = [r for r in records if "loss" in r]
    assert len(logged) == 4 and all({"infonce_last", "consistency_last", "rank_last"} <= set(r) for r in logged)
    model = SentenceTransformer(str(paths.model))  # MLP head removed, plain ST folder
    assert not np.allclose(model.encode(PROBE), build_encoder(str(tiny_backbone), "cls").encode(PROBE))


def test_the_teachers_encode_in_their_setting_and_its_vectors_are_kept_apart(
    tiny_backbone, tiny_backbone_no_dropout, corpus_file, tmp_path
):
    """rankcse.teacher_setting onnx int8: the frozen vectors are the int8 teacher's, and their record
    names another fingerprint than torch fp32's, so neither is read for the other."""
    pytest.importorskip("onnxruntime")
    from sentlab.encoders.backends import accelerate

    made, vectors = {}, {}
    for setting in ("onnx int8", "torch fp32"):
        out = tmp_path / setting.replace(" ", "-")
        cfg = rankcse_config(
            tiny_backbone, [tiny_backbone_no_dropout], corpus_file, out, {"teacher_setting": setting}, max_steps=1
        )
        paths = engine.train(cfg, evaluate=False)
        folder = paths.teacher_vectors / "teacher0"
        vectors[setting] = np.load(folder / "vectors.npy")
        made[setting] = next(json.loads(f.read_text()) for f in folder.glob("*.json"))
    assert made["onnx int8"] != made["torch fp32"]
    from sentlab.training.config import as_fingerprinted

    # newer than the fingerprints written before it: at its default, out of the hashed tree
    assert "teacher_setting" not in as_fingerprinted(cfg.model_dump())["rankcse"]
    texts = corpus_file.read_text().splitlines()[:2]
    int8 = accelerate(build_encoder(str(tiny_backbone_no_dropout), "cls"), "onnx", "int8")
    # the same int8 session in other batch shapes: int8 rounding moves unit-vector entries by about 1e-3
    np.testing.assert_allclose(vectors["onnx int8"][:2], int8.encode(texts, normalize_embeddings=True), atol=1e-2)
    assert not np.allclose(vectors["onnx int8"], vectors["torch fp32"], atol=1e-4)


def test_rankcse_config_is_validated(tiny_backbone, corpus_file, tmp_path):
    with pytest.raises(ValueError, match="one weight per teacher, summing to 1"):
        rankcse_config(tiny_backbone, [tiny_backbone], corpus_file, tmp_path, {"teacher_weights": [0.5]})
    with pytest.raises(ValueError, match="every term of Eq. 6 is switched off"):
        rankcse_config(
            tiny_backbone, [tiny_backbone], corpus_file, tmp_path, {"use_infonce": False, "beta": 0, "gamma": 0}
        )
    tree = tiny_config(tiny_backbone, corpus_file, tmp_path).to_tree()
    tree["method"] = "rankcse"
    with pytest.raises(ValueError, match="needs a 'rankcse' section"):
        validate_config(tree)
