"""RankCSE's figures: the numbers behind them and that the PNGs are written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentlab.cli import main
from sentlab.errors import DataError
from sentlab.evaluation.results import EvalReport
from sentlab.reporting.plots import (
    alignment_uniformity_points,
    cosine_by_gold_bucket,
    plot_alignment_uniformity,
    plot_cosine_buckets,
)
from tests.evaluation.test_sts import TableScorer


def test_alignment_uniformity_plane(tmp_path):
    files = []
    for name, (a, u) in {"m1": (0.2, -3.0), "m2": (0.3, -2.0)}.items():
        path = tmp_path / f"{name}.json"
        EvalReport(model=name, summary={"alignment": a, "uniformity": u, "sts_avg": 70.0}).write(path)
        files.append(path)
    points = alignment_uniformity_points(files)
    assert [(p["model"], p["alignment"], p["uniformity"]) for p in points] == [("m1", 0.2, -3.0), ("m2", 0.3, -2.0)]
    assert plot_alignment_uniformity(points, tmp_path / "out").stat().st_size > 0
    assert json.loads((tmp_path / "out" / "alignment_uniformity.json").read_text()) == points
    EvalReport(model="bare").write(tmp_path / "bare.json")
    with pytest.raises(DataError, match="no alignment"):
        alignment_uniformity_points([tmp_path / "bare.json"])
    assert main(["plot", "alignment-uniformity", str(tmp_path / "missing.json"), "--output", str(tmp_path)]) == 2


def test_cosine_buckets_group_pairs_by_gold(fake_sts_dir, tmp_path):
    from sentlab.data.sts import load_sts_task

    dev = load_sts_task("STS-B", fake_sts_dir, split="dev")
    scores = {(a, b): float(i) for i, (a, b) in enumerate(zip(dev.sentences1, dev.sentences2))}
    result = cosine_by_gold_bucket(TableScorer(scores), fake_sts_dir)
    assert sum(b["n_pairs"] for b in result["buckets"]) == len(dev)
    for bucket in result["buckets"]:
        low, high = bucket["gold_range"]
        expected = [float(i) for i, g in enumerate(dev.scores) if low <= g < high or (high == 5 and g == 5)]
        assert bucket["cosines"] == expected
        if expected:
            assert bucket["mean"] == pytest.approx(np.mean(expected))
    assert plot_cosine_buckets([result, result], tmp_path / "out").stat().st_size > 0


def test_relation_plots_write_png_and_json(tmp_path):
    import json

    import numpy as np

    from sentlab.reporting.plots import plot_relation_similarity, plot_scores_by_relation

    path = plot_relation_similarity(["a", "b"], np.asarray([[1.0, 0.25], [0.25, 1.0]]), tmp_path)
    assert path.is_file() and json.loads((tmp_path / "relation_similarity.json").read_text())["cosine"][0][1] == 0.25
    scores = {"a": {"CQADupStack": 20.0, "TwitterPara": 70.0}, "mix": {"CQADupStack": 21.0}}
    assert plot_scores_by_relation(scores, tmp_path).is_file()
    assert json.loads((tmp_path / "scores_by_relation.json").read_text()) == scores
