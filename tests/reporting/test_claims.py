"""Claims judged from results files with items: constructed seeds and items, so the verdict is known."""

import json

import numpy as np
import pytest

from sentlab.data.sts import STS_TASKS
from sentlab.errors import DataError
from sentlab.evaluation.uncertainty import mean_items
from sentlab.reporting.claims import Claim, compare, task_items, write_claims

BASE = {task: np.random.default_rng(k).random(60) for k, task in enumerate(STS_TASKS)}


def results(shift: float, noise_seed: int | None = None) -> dict:
    """A results file whose every STS task's items are BASE + ``shift`` (+ small item noise)."""
    rng = np.random.default_rng(noise_seed)
    tasks = {}
    for task, values in BASE.items():
        noisy = values + shift + (0.01 * rng.standard_normal(len(values)) if noise_seed is not None else 0.0)
        tasks[task] = {"spearman": 0.0, "extra": {"items": mean_items(noisy, task)}}
    return {"model": f"shift {shift}", "tasks": tasks}


CLAIM = Claim("x", "a paper", "method", "baseline", "sts_avg", paper=5.0)


def test_the_sts_average_is_judged_over_all_seven_tasks_as_parts():
    items = task_items(results(0.1), "sts_avg")
    assert items["statistic"] == "parts" and len(items["parts"]) == len(STS_TASKS)
    one = compare(Claim("x", "p", "m", "b", "STS-B"), [results(0.1)], [results(0.0)])
    assert one["difference"] == pytest.approx(10.0)  # 0.1 on every item, x 100


def test_a_gain_on_every_seed_holds_a_loss_does_not_and_disagreeing_seeds_are_inconclusive():
    baseline = [results(0.0)]
    gain = compare(CLAIM, [results(0.05, s) for s in range(3)], baseline)
    assert gain["verdict"] == "holds" and gain["difference"] == pytest.approx(5.0, abs=0.2)
    assert gain["paper_margin"] == 5.0 and len(gain["per_seed"]) == 3
    loss = compare(CLAIM, [results(-0.05, s) for s in range(3)], baseline)
    assert loss["verdict"] == "does not hold"
    # seeds that disagree by more than the items' interval: another seed could reverse the sign
    split = compare(CLAIM, [results(0.05, 0), results(-0.04, 1), results(0.06, 2)], baseline)
    assert split["verdict"] == "inconclusive"
    # one seed: training randomness is not measured, never a verdict
    assert compare(CLAIM, [results(0.05, 0)], baseline)["verdict"] == "inconclusive"


def test_results_without_items_are_a_one_line_error():
    bare = {"model": "m", "tasks": {task: {"spearman": 1.0, "extra": {}} for task in STS_TASKS}}
    with pytest.raises(DataError, match="m: no items for STS12 .*sentlab eval --items"):
        task_items(bare, "sts_avg")


def test_written_claims_have_the_table_the_json_and_the_figure(tmp_path):
    rows = [compare(CLAIM, [results(0.05, s) for s in range(3)], [results(0.0)])]
    write_claims(tmp_path / "out", rows, {"seeds": [0, 1, 2]}, ["## More\n\ntext"])
    saved = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert saved["claims"][0]["verdict"] == "holds" and saved["seeds"] == [0, 1, 2]
    table = (tmp_path / "out" / "claims.md").read_text()
    assert "| x | a paper | method > baseline on sts_avg |" in table and "holds" in table and "## More" in table
    assert (tmp_path / "out" / "claims.png").stat().st_size > 0
