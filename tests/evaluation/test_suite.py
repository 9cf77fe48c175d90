"""Task families: parsing, data presence, skipping with reasons."""

from __future__ import annotations

import numpy as np
import pytest

from sentlab.errors import DataError, SentlabError
from sentlab.evaluation.results import EvalReport
from sentlab.evaluation.suite import FAMILIES, SuiteInputs, missing_tasks, parse_families, run_families
from tests.angles import angle_vectors
from tests.evaluation.test_evalrank import ANGLES
from tests.fake_data import write_evalrank


class AngleScorer:
    name = "angles"

    def __init__(self, angles):
        self.encode = angle_vectors(angles)


def test_parse_families():
    assert parse_families("all") == list(FAMILIES)
    assert parse_families("useb, evalrank,useb") == ["useb", "evalrank"]
    with pytest.raises(SentlabError, match="unknown task family 'usb'"):
        parse_families("sts,usb")


def test_missing_tasks_name_the_files(tmp_path):
    missing = missing_tasks("transfer", tmp_path)
    assert sorted(missing) == sorted(FAMILIES["transfer"]) and "rt-polarity.pos" in missing["MR"]
    write_evalrank(tmp_path)
    assert missing_tasks("evalrank", tmp_path) == {}


def test_all_families_run_what_is_there_and_list_the_rest(tmp_path):
    write_evalrank(tmp_path)
    inputs = SuiteInputs(AngleScorer(ANGLES), features=lambda s: np.zeros((len(s), 2)), data_dir=tmp_path)
    report = run_families(list(FAMILIES), inputs, EvalReport(model="angles"))
    assert list(report.tasks) == ["EvalRank"]
    skipped = report.summary["skipped"]
    assert {"STS12", "STS12-ranking", "MR", "AskUbuntu", "CQADupStack"} <= set(skipped)
    assert "EvalRank" not in skipped and set(report.settings["seconds"]) == {"evalrank"}


def test_a_family_asked_for_alone_without_data_is_an_error(tmp_path):
    inputs = SuiteInputs(AngleScorer(ANGLES), features=lambda s: s, data_dir=tmp_path)
    with pytest.raises(DataError, match="no data for task family 'useb'"):
        run_families(["useb"], inputs, EvalReport(model="x"))


def test_a_models_own_task_prompts_reach_the_sts_and_transfer_families_and_are_recorded(tiny_backbone, tmp_path):
    """A model whose prompts name a task (embeddinggemma's STS and Classification) gets them in the STS and
    transfer families; the report says which prompt ran; a model without them encodes plain."""
    from sentlab.encoders import build_encoder
    from sentlab.evaluation.scoring import CosineScorer
    from tests.fake_data import write_sts, write_transfer

    root = write_sts(tmp_path / "data")
    write_transfer(root)
    model = build_encoder(str(tiny_backbone), "mean")
    model.prompts = {"query": "query: ", "STS": "sts: ", "Classification": "classify: "}
    seen: list[str] = []

    class Spy(CosineScorer):
        def encode(self, sentences):
            seen.extend(sentences)
            return super().encode(sentences)

    def features(sentences):
        seen.extend(sentences)
        return model.encode(list(sentences))

    inputs = SuiteInputs(Spy(model), features=features, data_dir=root, kfold=2)
    report = run_families(["sts"], inputs, EvalReport(model="tiny"))
    assert seen and all(text.startswith("sts: ") for text in seen)
    assert report.settings["prompts"] == {"sts": {"name": "STS", "text": "sts: "}}
    seen.clear()
    report = run_families(["transfer"], inputs, EvalReport(model="tiny"))
    assert seen and all(text.startswith("classify: ") for text in seen)
    assert report.settings["prompts"]["transfer"]["name"] == "Classification"
    # the stored form (--embedding-precision int8) quantizes the prompted texts with their own sample's ranges
    from sentlab.evaluation.quantized import QuantizedEmbeddings
    from sentlab.evaluation.scoring import EmbeddingCache

    stored = QuantizedEmbeddings(EmbeddingCache(model), None, "int8", ["a dog runs", "the man sits", "a cat eats"])
    run_families(["sts"], SuiteInputs(CosineScorer(stored), features=features, data_dir=root), EvalReport(model="q"))
    assert stored.stored_form()["calibration"]["prompts"] == ["sts: "]
    seen.clear()
    model.prompts = {"query": "query: "}  # a role prompt names no task: the families encode plain
    report = run_families(["sts"], inputs, EvalReport(model="tiny"))
    assert seen and not any(text.startswith(("sts: ", "query: ")) for text in seen)
    assert "prompts" not in report.settings


def test_a_models_own_task_type_prompts_reach_each_useb_task_and_are_recorded(tiny_backbone, tmp_path):
    """Each USEB task gets the model's prompts as MTEB chooses them for its task type: a reranking or
    retrieval task's queries and candidates their sides' (``TYPE-query``, ``TYPE``, then ``query``), a pair
    classification task's both texts ``PairClassification``; the report says which ran."""
    from sentlab.encoders import build_encoder
    from sentlab.evaluation.scoring import CosineScorer
    from tests.fake_data import write_askubuntu, write_cqadupstack, write_twitterpara

    model = build_encoder(str(tiny_backbone), "mean")
    seen: list[str] = []

    class Spy(CosineScorer):
        def encode(self, sentences):
            seen.extend(sentences)
            return super().encode(sentences)

    def run(write, task, prompts):
        model.prompts = prompts
        seen.clear()
        root = tmp_path / task
        write(root)
        report = run_families(["useb"], SuiteInputs(Spy(model), features=None, data_dir=root), EvalReport(model="t"))
        assert list(report.tasks) == [task]
        return report.settings.get("prompts", {}).get("useb", {}).get(task), {t.split(": ")[0] for t in seen}

    gemma = {"Retrieval-query": "rq: ", "Retrieval-document": "rd: ", "Reranking": "rr: ", "query": "q: "}
    gemma["PairClassification"] = "pc: "
    said, firsts = run(write_askubuntu, "AskUbuntu", gemma)  # no Reranking-query: Reranking on both sides
    assert said == {"query": {"name": "Reranking", "text": "rr: "}, "document": {"name": "Reranking", "text": "rr: "}}
    assert firsts == {"rr"}
    said, firsts = run(write_cqadupstack, "CQADupStack", gemma)  # its own side's prompt before each
    assert said["query"] == {"name": "Retrieval-query", "text": "rq: "} and said["document"]["text"] == "rd: "
    assert firsts == {"rq", "rd"}
    said, firsts = run(write_twitterpara, "TwitterPara", gemma)  # a pair's two texts alike
    assert said["query"] == said["document"] == {"name": "PairClassification", "text": "pc: "} and firsts == {"pc"}
    e5 = {"query": "query: ", "document": "passage: "}  # role prompts only: MTEB's last choice on a side
    said, firsts = run(write_cqadupstack, "CQADupStack", e5)
    assert said["query"]["text"] == "query: " and said["document"]["text"] == "passage: "
    assert firsts == {"query", "passage"}
    said, firsts = run(write_twitterpara, "TwitterPara", e5)  # a pair has no query side: plain
    assert said is None and not firsts & {"query", "passage"}
