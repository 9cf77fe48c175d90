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
