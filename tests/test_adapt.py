"""sentlab adapt end to end on a tiny model: every arm trains under one budget, the report gives a
recommendation with its interval, and a rerun reuses what is done."""

import json

import numpy as np
import pytest

from sentlab import cli
from sentlab.errors import ConfigError, DataError
from sentlab.reporting import adapt as adapt_report
from tests.conftest import write_scored_pairs_card


@pytest.fixture
def user_task(tmp_path, corpus_file):
    return write_scored_pairs_card(tmp_path, corpus_file, "mine")


def adapt_args(tiny_backbone, corpus_file, card, out, *extra):
    seeds = [] if "--seeds" in extra else ["--seeds", "42"]
    return [
        "adapt",
        "--text",
        str(corpus_file),
        "--task-card",
        str(card),
        "--output",
        str(out),
        "--model",
        str(tiny_backbone),
        "--methods",
        "tsdae,simcse",
        "--steps",
        "4",
        "--batch-size",
        "4",
        "--eval-steps",
        "2",
        "--general",
        "none",
        "--quiet",
        *seeds,
        *extra,
    ]


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_adapt_trains_every_arm_reports_and_resumes(
    tiny_backbone, corpus_file, user_task, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "adapt"
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["rows"]) == {"start", "tsdae", "simcse"}
    for arm in ("tsdae", "simcse"):
        assert json.loads((out / "arms" / arm / "seed-42" / "trained.json").read_text())["steps"] == 4
        cell = report["rows"][arm]["mine"]
        assert cell["ci95"][0] <= cell["mean"] <= cell["ci95"][1]
    assert (out / "adapt.png").is_file()
    # no --max-seq-length: every arm trains and is saved at the start model's own maximum length
    from sentlab.encoders import load_encoder

    own = load_encoder(str(tiny_backbone), pooler="mean").max_seq_length
    for arm in ("tsdae", "simcse"):
        saved = load_encoder(str(out / "arms" / arm / "seed-42" / "model")).max_seq_length
        assert saved == own != 128
    line = report["recommendation"]
    assert line.startswith(("Not decided", "Keep the start model")) and "95% CI over the items" in line
    assert "beyond the noise" not in line and "training randomness is not measured" in line  # one seed
    assert "chosen on 15 of mine's 30 items" in line and "confirmed on the other 15" in line
    assert "recommendation" in capsys.readouterr().out.lower()

    from sentlab.training import engine

    def no_training(*args, **kwargs):
        raise AssertionError("a finished arm was trained again")

    original_train = engine.train
    monkeypatch.setattr(engine, "train", no_training)
    (out / "report.json").unlink()
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) == 0  # all reused
    assert json.loads((out / "report.json").read_text())["rows"]["tsdae"]["mine"] == report["rows"]["tsdae"]["mine"]
    # the card's data changed under its name: every model is scored on it again, nothing is trained again
    tsv = user_task.with_suffix(".tsv")
    header, *rows = tsv.read_text().splitlines()
    tsv.write_text("\n".join([header, *(f"{r.rsplit(chr(9), 1)[0]}\t{4 - int(r.rsplit(chr(9), 1)[1])}" for r in rows)]))
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) == 0
    again = json.loads((out / "report.json").read_text())["rows"]
    for arm in ("start", "tsdae", "simcse"):  # the gold order reversed: each Spearman changes sign
        assert again[arm]["mine"]["mean"] == pytest.approx(-report["rows"][arm]["mine"]["mean"], abs=1e-6)

    # an arm killed after its checkpoints but before it was marked finished is resumed, not restarted
    calls = []

    def recording_train(cfg, resume=False, evaluate=True):
        calls.append((cfg.method, resume))
        return original_train(cfg, resume=resume, evaluate=evaluate)

    monkeypatch.setattr(engine, "train", recording_train)
    for name in ("trained.json", "evaluation.json"):
        (out / "arms" / "simcse" / "seed-42" / name).unlink()
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) == 0
    assert calls == [("simcse-unsup", True)]


def test_a_dev_card_keeps_each_arms_best_checkpoint(tiny_backbone, corpus_file, user_task, tmp_path):
    out = tmp_path / "adapt"
    args = adapt_args(tiny_backbone, corpus_file, user_task, out, "--dev-card", str(user_task))
    args[args.index("tsdae,simcse")] = "simcse"
    assert cli.main(args) == 0
    info = json.loads((out / "arms" / "simcse" / "seed-42" / "trained.json").read_text())
    records = [
        json.loads(line)
        for line in (out / "arms" / "simcse" / "seed-42" / "metrics.jsonl").read_text().splitlines()
        if "eval_mine_spearman" in line
    ]
    assert [r["step"] for r in records] == [0, 2, 4]  # step 0: the start model competes too
    # the best score; of equal ones the first checkpoint, and a checkpoint before the start
    best = max(records, key=lambda r: (r["eval_mine_spearman"], r["step"] != 0))["step"]
    assert info["kept_step"] == best and info["steps"] == 4


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_a_diverged_arm_is_reported_and_the_others_ranked(tiny_backbone, corpus_file, user_task, tmp_path, monkeypatch):
    from sentlab.errors import TrainingDivergedError
    from sentlab.training import engine

    original_train, calls = engine.train, []

    def simcse_diverges(cfg, resume=False, evaluate=True):  # as StopOnNonFiniteLoss raises it
        calls.append((cfg.method, cfg.train.seed, cfg.train.learning_rate))
        if cfg.method == "simcse-unsup" and cfg.train.learning_rate == 5e-5:
            raise TrainingDivergedError("training loss became nan at step 2; lower the learning rate", step=2)
        return original_train(cfg, resume=resume, evaluate=evaluate)

    monkeypatch.setattr(engine, "train", simcse_diverges)
    out = tmp_path / "adapt"
    args = adapt_args(tiny_backbone, corpus_file, user_task, out, "--seeds", "42,43")
    assert cli.main(args) == 0  # one arm's NaN does not stop the others
    assert calls == [("tsdae", 42, 3e-5), ("tsdae", 43, 3e-5), ("simcse-unsup", 42, 5e-5)]  # no seed 43 after it
    report = json.loads((out / "report.json").read_text())
    assert report["facts"]["diverged"]["simcse"]["step"] == 2 and report["facts"]["diverged"]["simcse"]["seed"] == 42
    assert "simcse" not in report["facts"]["ranking_on_choosing"] and "tsdae" in report["facts"]["ranking_on_choosing"]
    assert "Not ranked: simcse diverged at step 2 with seed 42" in report["recommendation"]
    assert "simcse@5e-06" in report["recommendation"]  # how to retry it, a tenth of the learning rate
    assert "| simcse | 2 |" in (out / "report.md").read_text() and "not ranked" in (out / "report.md").read_text()
    assert json.loads((out / "arms" / "simcse" / "seed-42" / "trained.json").read_text())["diverged"]["step"] == 2

    # rerun with the arm retried at another learning rate: nothing else is trained again
    calls.clear()
    args[args.index("tsdae,simcse")] = "tsdae,simcse,simcse@1e-5"
    assert cli.main(args) == 0
    assert calls == [("simcse-unsup", 42, 1e-5), ("simcse-unsup", 43, 1e-5)]
    report = json.loads((out / "report.json").read_text())
    assert "simcse@1e-5" in report["facts"]["ranking_on_choosing"] and "simcse" in report["facts"]["diverged"]
    assert (
        "infinite; retried as simcse@1e-5)" in report["recommendation"] and "To retry" not in report["recommendation"]
    )


@pytest.mark.parametrize("arm", ["simcse@abc", "simcse@-1", "simcse@nan", "rse@1e-4"])
def test_a_bad_arm_name_is_a_one_line_error(arm):
    from sentlab.adapt import arm_spec

    with pytest.raises(ConfigError, match="learning rate|unknown method 'rse'"):
        arm_spec(arm)


def test_adapt_refuses_other_settings_in_the_same_folder(tiny_backbone, corpus_file, user_task, tmp_path, capsys):
    out = tmp_path / "adapt"
    out.mkdir()
    (out / "adapt.json").write_text(
        json.dumps(
            {
                "text": str(corpus_file),
                "text_sha256": "0",
                "model": "x",
                "pooler": "mean",
                "max_seq_length": 128,
                "batch_size": 4,
                "budget": {"steps": 4, "sentences": None, "minutes": None},
                "dev_card": None,
                "general": "none",
                "data_dir": None,
                "eval_steps": 2,
            }
        )
    )
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) != 0
    assert "made with other settings (text_sha256, model" in capsys.readouterr().err


def test_unknown_arm_and_budget_errors(tiny_backbone, corpus_file, user_task, tmp_path, capsys):
    args = adapt_args(tiny_backbone, corpus_file, user_task, tmp_path / "a")
    args[args.index("tsdae,simcse")] = "tsdae,rse"
    assert cli.main(args) != 0
    assert "unknown method 'rse' for adapt" in capsys.readouterr().err
    from sentlab.adapt import Budget

    with pytest.raises(ConfigError, match="exactly one budget"):
        Budget(steps=3, minutes=1.0)


def report(values, task="t", key="k"):
    """An EvalReport with one mean-of-items task (a retrieval card's per-query AP)."""
    from sentlab.evaluation.results import EvalReport, MetricsResult
    from sentlab.evaluation.uncertainty import mean_items

    values = [float(v) for v in values]
    return EvalReport(
        "m",
        {
            task: MetricsResult(
                "map", {"map": 100 * sum(values) / len(values)}, len(values), extra={"items": mean_items(values, key)}
            )
        },
    )


def test_seeds_that_disagree_beyond_the_item_interval_are_never_beyond_the_noise():
    """Constructed: on 400 items every seed's shift is exact (item interval about +-0.1), but the seeds
    disagree (+2, -1, +2.5 points): a per-seed paired bootstrap calls each of them beyond the noise, in
    both directions; the margin over seeds and items must not."""
    from sentlab.evaluation.uncertainty import paired_difference

    base = np.random.default_rng(0).random(400) * 0.8
    results = {
        "start": {0: report(base)},
        "a": {s: report(base + shift) for s, shift in [(1, 0.02), (2, -0.01), (3, 0.025)]},
    }
    for seed in (1, 2, 3):
        single = paired_difference(
            results["a"][seed].tasks["t"].extra["items"], results["start"][0].tasks["t"].extra["items"]
        )
        assert not single.inside_noise  # each seed alone looks certain
    m = adapt_report.margin(results, "a", "start", "t")
    assert m["difference"] == pytest.approx(7 / 6, abs=1e-9) and not m["beyond_noise"]
    assert m["item_high"] - m["item_low"] < 0.5 < m["seed_high"] - m["seed_low"]  # the seeds make the width
    assert "inside the noise" in adapt_report.describe_margin(m)

    agree = {
        "start": results["start"],
        "a": {s: report(base + shift) for s, shift in [(1, 0.02), (2, 0.018), (3, 0.022)]},
    }
    assert adapt_report.margin(agree, "a", "start", "t")["beyond_noise"]


def test_one_seed_is_never_beyond_the_noise_and_says_what_to_run():
    base = np.linspace(0, 0.8, 100)
    results = {"start": {0: report(base)}, "a": {42: report(base + 0.1)}}
    m = adapt_report.margin(results, "a", "start", "t")
    assert m["low"] > 0 and not m["beyond_noise"] and not m["training_measured"]
    text = adapt_report.describe_margin(m)
    assert "training randomness is not measured" in text and "--seeds 42,43,44" in text


def test_the_choosing_and_confirming_items_are_disjoint_and_cover_the_card():
    from sentlab.evaluation.uncertainty import split_indices

    choose, confirm = split_indices(101)
    assert not set(choose) & set(confirm) and sorted(choose + confirm) == list(range(101))
    assert split_indices(101) == (choose, confirm)  # seeded: every row is split the same way
    results = {"start": {0: report(np.linspace(0, 1, 101))}, "a": {1: report(np.linspace(0, 1, 101) ** 2)}}
    choose_task, confirm_task = adapt_report.add_split(results, "t")
    start = results["start"][0].tasks
    assert start[choose_task].n + start[confirm_task].n == 101
    assert start[choose_task].extra["items"]["key"] != start[confirm_task].extra["items"]["key"]


def test_the_choice_is_made_on_one_half_and_the_margin_on_the_other():
    """Constructed: arm 'a' is far better on the choosing half only; the recommendation chooses it
    there, and its reported margin is the confirming half's (a loss), never the choosing half's gain."""
    from sentlab.evaluation.uncertainty import split_indices

    n = 200
    base = np.random.default_rng(1).random(n) * 0.5
    choose, confirm = split_indices(n)
    lucky = base.copy()
    lucky[choose] += 0.3
    lucky[confirm] -= 0.05
    results = {
        "start": {0: report(base)},
        "a": {s: report(lucky + 0.001 * s) for s in (1, 2, 3)},
        "b": {s: report(base - 0.1 + 0.001 * s) for s in (1, 2, 3)},
    }
    choose_task, confirm_task = adapt_report.add_split(results, "t")
    rows = adapt_report.summarise(results, [choose_task, confirm_task])
    line, facts = adapt_report.recommend(rows, results, choose_task, confirm_task, [], "t", "half", "other half")
    assert facts["chosen"] == "a" and facts["best_arm_vs_start"]["difference"] < 0
    assert line.startswith(
        "Keep the start model for t (chosen on half; confirmed on other half): a, best on the "
        "choosing items, is below it on the confirming items"
    )


@pytest.mark.parametrize(
    "shift, start",
    [
        (-0.1, "Keep the start model for t (chosen on c; confirmed on d): it scored best on the choosing items"),
        (0.1, "Use a for t (chosen on c; confirmed on d): map 55."),
    ],
)
def test_recommendation_states_the_margin(shift, start):
    base = [0.1 * i for i in range(10)]
    results = {
        "start": {0: report(base)},
        "a": {s: report([v + shift + 0.001 * s for v in base]) for s in (1, 2, 3)},
        "b": {s: report([v + shift / 2 for v in base]) for s in (1, 2, 3)},
    }
    line, facts = adapt_report.recommend(adapt_report.summarise(results, ["t"]), results, "t", "t", [], "t", "c", "d")
    assert line.startswith(start)
    assert facts["best_arm"] == ("a" if shift > 0 else "b")
    assert facts["decision"] == ("use" if shift > 0 else "keep the start model")


def test_noise_only_gain_keeps_the_start_model():
    rng = np.random.default_rng(0)
    base = rng.random(40)
    results = {
        "start": {0: report(base)},
        "a": {s: report(np.clip(base + rng.normal(0.01, 0.2, 40), 0, 1)) for s in (1, 2, 3)},
    }
    line, facts = adapt_report.recommend(adapt_report.summarise(results, ["t"]), results, "t", "t", [], "t")
    assert facts["decision"] == "keep the start model" and not facts["best_arm_vs_start"]["beyond_noise"]
    assert "does not beat it beyond the noise" in line


@pytest.mark.parametrize(
    "budget, steps, limit, minutes",
    [
        ({"steps": 10}, 10, 40, None),  # 10 steps of 4: the first 40 sentences, each once
        ({"sentences": 30}, 8, 32, None),  # ceil(30 / 4) steps
        ({"steps": 100}, 100, None, None),  # more than the text holds: every sentence, several epochs
        ({"minutes": 2.5}, -1, None, 2.5),  # the clock stops training
    ],
)
def test_each_budget_becomes_the_same_steps_for_every_arm(tmp_path, budget, steps, limit, minutes):
    from sentlab.adapt import ARMS, AdaptPlan, AdaptSettings, Budget, arm_config

    settings = AdaptSettings(
        text="t.txt",
        text_sha256="0",
        model="minilm",
        pooler="mean",
        max_seq_length=64,
        batch_size=4,
        budget=vars(Budget(**budget)),
        dev_card=None,
        general="none",
        data_dir=None,
        eval_steps=5,
    )
    plan = AdaptPlan(settings, [], list(ARMS), [1], tmp_path)
    configs = [arm_config(plan, arm, 1, tmp_path / "train.txt", n_sentences=50) for arm in ARMS]
    assert {(c.train.max_steps, c.data.limit, c.train.max_minutes, c.train.batch_size) for c in configs} == {
        (steps, limit, minutes, 4)
    }
    assert [c.method for c in configs] == ["tsdae", "ct", "mlm", "simcse-unsup", "bert-flow"]


class LengthScorer:
    """A scorer without float noise: a pair's score is minus the difference of the sentences' lengths
    (ties included), so a second implementation of the average agrees exactly."""

    name = "length"

    def score(self, sentences1, sentences2):
        import numpy as np

        return -np.abs(np.array([len(a) for a in sentences1]) - np.array([len(b) for b in sentences2])).astype(float)


def test_the_general_tasks(tiny_backbone, data_dir):
    """``--general sts`` is the mean over the seven tasks of Spearman x 100 on all of a task's pairs
    (STS12-16 pooled over their subsets), computed here again with scipy from the pairs themselves."""
    from scipy.stats import spearmanr

    from sentlab.adapt import _general
    from sentlab.data.sts import STS_TASKS, load_sts_task
    from sentlab.encoders import build_encoder
    from sentlab.evaluation import CosineScorer

    scorer = CosineScorer(build_encoder(str(tiny_backbone), "mean"))
    stsb = _general("sts-b", scorer, str(data_dir))["STS-B"]
    low, high = stsb.extra["ci95"]["spearman"]
    assert low <= stsb.main <= high and stsb.n == 1379
    average = _general("sts", LengthScorer(), str(data_dir))["STS avg"]
    by_task = {}
    for name in STS_TASKS:
        pairs = load_sts_task(name, data_dir)
        by_task[name] = 100 * spearmanr(LengthScorer().score(pairs.sentences1, pairs.sentences2), pairs.scores)[0]
    assert len(by_task) == 7 and average.extra["tasks"] == pytest.approx(by_task, abs=1e-9)
    assert average.main == pytest.approx(sum(by_task.values()) / 7, abs=1e-9)  # the same numbers, summed apart


@pytest.mark.parametrize(
    "content, message",
    [
        (b"one sentence\n\nanother\n", "text.txt:2: empty line"),
        (b"only one sentence\n", "needs at least 2 sentences"),
        (b"fine\n\xff\n", "text.txt:2: line is not valid UTF-8"),
    ],
)
def test_bad_training_text_is_a_one_line_error(tmp_path, content, message):
    from sentlab.adapt import read_training_text

    (tmp_path / "text.txt").write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_training_text(tmp_path / "text.txt")


def test_adapt_refuses_remote_code_unless_trusted_and_every_arm_runs_it(
    tiny_backbone, corpus_file, user_task, tmp_path
):
    from sentlab.encoders import load_encoder
    from tests.encoders.test_loading_options import remote_code_backbone

    backbone = remote_code_backbone(tiny_backbone, tmp_path / "marked")
    out = tmp_path / "adapt"
    args = adapt_args(backbone, corpus_file, user_task, out, "--methods", "simcse")
    assert cli.main(args) != 0 and not (out / "report.json").exists()  # refused before any training
    assert cli.main([*args, "--trust-remote-code"]) == 0
    trained = load_encoder(out / "arms" / "simcse" / "seed-42" / "model", trust_remote_code=True)
    assert type(trained[0].auto_model).__name__ == "MarkedModel"  # the model's own code ran
    assert json.loads((out / "report.json").read_text())["rows"].keys() == {"start", "simcse"}


def test_a_local_start_model_retrained_in_place_is_another_start(
    tiny_backbone, corpus_file, user_task, tmp_path, capsys
):
    """The folder's arms and scores are the start model's as its files were: a start retrained at the same
    path is refused in one line, not taken for the old one."""
    import shutil

    from tests.conftest import make_tiny_backbone, the_error

    start = tmp_path / "start"
    shutil.copytree(tiny_backbone, start)
    args = adapt_args(start, corpus_file, user_task, tmp_path / "adapt", "--methods", "simcse")
    args[args.index("--steps") + 1] = "2"
    args.remove("tsdae,simcse")
    args.remove("--methods")
    assert cli.main(args) == 0
    make_tiny_backbone(start, seed=7)
    assert cli.main(args) != 0
    assert "made with other settings (model_sha256)" in the_error(capsys.readouterr().err)
