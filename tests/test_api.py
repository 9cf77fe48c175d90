"""The Python API: ``sentlab.train`` / ``load`` / ``evaluate`` as a user calls them."""

from __future__ import annotations

import random

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

import sentlab
from sentlab.evaluation.results import EvalReport
from tests.conftest import DEVICE, WORDS, tiny_config, write_scored_pairs_card


@pytest.fixture(scope="module")
def trained(tiny_backbone, tmp_path_factory):
    """One tiny SimCSE run through ``sentlab.train`` with section overrides."""
    root = tmp_path_factory.mktemp("api")
    corpus = root / "corpus.txt"
    rng = random.Random(0)
    corpus.write_text(
        "".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + "\n" for _ in range(96)),
        encoding="utf-8",
    )
    cfg = tiny_config(tiny_backbone, corpus, root / "run")
    run = sentlab.train(cfg, evaluate=False, train={"max_steps": 2, "seed": 3}, model={"pooler": "mean"})
    return run, corpus, root


def test_train_applies_section_overrides_and_saves_a_plain_model(trained):
    run, _, _ = trained
    assert run.config.train.max_steps == 2 and run.config.train.seed == 3 and run.config.model.pooler == "mean"
    assert run.results is None and (run.model_path / "modules.json").is_file()
    SentenceTransformer(str(run.model_path), device=str(DEVICE))


def test_load_picks_the_scorer_the_folder_calls_for(trained, tmp_path):
    import shutil

    from sentlab.evaluation.relational import RelationTable

    run, _, _ = trained
    plain = sentlab.load(run.model_path)
    assert plain.kind == "plain"
    vectors = plain.encode(["a b", "c d"], normalize_embeddings=True)
    assert plain.similarity(["a b"], ["c d"])[0] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)

    rse_folder = tmp_path / "rse"
    shutil.copytree(run.model_path, rse_folder)
    dimension = plain.encoder.get_embedding_dimension()
    RelationTable(["entailment"], np.ones((1, dimension), np.float32), {"entailment": 1.0}).save(rse_folder)
    rse = sentlab.load(rse_folder)
    assert rse.kind == "rse"
    # h + r against t: not the plain cosine once r is not 0
    assert rse.similarity(["a b"], ["c d"])[0] != pytest.approx(plain.similarity(["a b"], ["c d"])[0], abs=1e-4)


def test_evaluate_scores_task_cards_and_returns_the_typed_report(trained, tmp_path):
    run, corpus, _ = trained
    card = write_scored_pairs_card(tmp_path, corpus, "my-task")
    report = sentlab.evaluate(run.model_path, task_cards=[card])
    assert isinstance(report, EvalReport) and list(report.tasks) == ["my-task"]
    assert report.tasks["my-task"].n == 30 and -100 <= report.tasks["my-task"].main <= 100
    same = sentlab.evaluate(SentenceTransformer(str(run.model_path), device=str(DEVICE)), task_cards=[card])
    assert same.tasks["my-task"].main == pytest.approx(report.tasks["my-task"].main, abs=1e-6)


def test_evaluate_without_data_is_a_one_line_error(trained, tmp_path):
    run, _, _ = trained
    with pytest.raises(sentlab.SentlabError, match=r"no data for task family 'sts'.*--data-dir.*sentlab data list"):
        sentlab.evaluate(run.model_path, tasks=["sts"], data_dir=tmp_path / "empty")


def test_train_by_preset_name_with_overrides(tiny_backbone, corpus_file, tmp_path):
    run = sentlab.train(
        "simcse-unsup-minilm-cpu",
        evaluate=False,
        data_dir=tmp_path,
        model={"name": str(tiny_backbone), "max_seq_length": 16},
        data={"train": str(corpus_file), "limit": None},
        train={"output_dir": str(tmp_path / "run"), "max_steps": 2, "batch_size": 8, "progress_bar": False},
        eval={"dev_task": "none"},
    )
    assert run.config.about is not None and run.config.about.hardware == "cpu"
    assert (run.model_path / "modules.json").is_file()


def test_load_scores_a_rankencoder_folder_with_eq7(trained, tmp_path):
    """A RankEncoder folder is scored with its own lambda_inf and index (Eq. 7), as RankScorer does."""
    from sentlab.rank.index import CorpusIndex
    from sentlab.rank.model import RankEncoder

    run, corpus, _ = trained
    encoder = SentenceTransformer(str(run.model_path), device=str(DEVICE))
    index = CorpusIndex.build(encoder, corpus.read_text().splitlines()[:40], "tiny")
    folder = RankEncoder(encoder, index, 0.5).save(tmp_path / "rank")
    loaded = sentlab.load(folder)
    assert loaded.kind == "rankencoder" and "lambda_inf=0.5" in loaded.scorer.name
    pair = (["a b c"], ["c d e"])
    expected = RankEncoder(encoder, index, 0.5).scorer().score(*pair)[0]
    # the same vectors through two scorer objects: float32 sums in the same order, 1e-6 covers any
    # difference in batching (values are cosines in [-1, 1])
    assert loaded.similarity(*pair)[0] == pytest.approx(float(expected), abs=1e-6)
    plain = sentlab.load(run.model_path).similarity(*pair)[0]
    assert loaded.similarity(*pair)[0] != pytest.approx(plain, abs=1e-6)  # Eq. 7 is not the cosine


def test_evaluate_refuses_an_unknown_family_before_loading_the_model(tmp_path):
    with pytest.raises(sentlab.SentlabError, match="unknown task family 'stss'"):
        sentlab.evaluate(tmp_path / "no-model-here", tasks=["sts", "stss"])
    with pytest.raises(sentlab.SentlabError, match="unknown task family 'stss'"):
        sentlab.evaluate(tmp_path / "no-model-here", tasks="stss")


def test_load_and_evaluate_pin_float32_math(trained, tmp_path):
    """fp32 means IEEE fp32: a process whose oneDNN / CUDA switches were set to bf16 / TF32 gets them
    back to IEEE from sentlab.load and sentlab.evaluate, as from sentlab eval."""
    import torch

    run, corpus, _ = trained
    card = write_scored_pairs_card(tmp_path, corpus, "card")
    backends = torch.backends
    saved = (backends.cuda.matmul.fp32_precision, backends.mkldnn.matmul.fp32_precision)
    try:
        for call in (
            lambda: sentlab.load(run.model_path),
            lambda: sentlab.evaluate(SentenceTransformer(str(run.model_path), device=str(DEVICE)), task_cards=[card]),
        ):
            backends.cuda.matmul.fp32_precision, backends.mkldnn.matmul.fp32_precision = "tf32", "bf16"
            call()
            assert backends.cuda.matmul.fp32_precision == backends.mkldnn.matmul.fp32_precision == "ieee"
    finally:
        backends.cuda.matmul.fp32_precision, backends.mkldnn.matmul.fp32_precision = saved
