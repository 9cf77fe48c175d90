"""sentlab adapt end to end on a tiny model: every arm trains under one budget, the report gives a
recommendation with its interval, and a rerun reuses what is done."""

import json

import pytest

from sentlab import cli
from sentlab.errors import ConfigError, DataError
from sentlab.reporting import adapt as adapt_report


@pytest.fixture
def user_task(tmp_path, corpus_file):
    lines = corpus_file.read_text().splitlines()
    rows = "".join(f"{lines[i]}\t{lines[i + 1]}\t{i % 5}\n" for i in range(0, 60, 2))
    (tmp_path / "pairs.tsv").write_text("s1\ts2\tscore\n" + rows, encoding="utf-8")
    card = tmp_path / "mine.yaml"
    card.write_text("name: mine\nkind: scored-pairs\nfile: pairs.tsv\ncolumns: [s1, s2, score]\n", encoding="utf-8")
    return card


def adapt_args(tiny_backbone, corpus_file, card, out, *extra):
    return ["adapt", "--text", str(corpus_file), "--task-card", str(card), "--output", str(out),
            "--model", str(tiny_backbone), "--methods", "tsdae,simcse", "--steps", "4", "--batch-size", "4",
            "--eval-steps", "2", "--general", "none", "--quiet", *extra]


def test_adapt_trains_every_arm_reports_and_resumes(tiny_backbone, corpus_file, user_task, tmp_path, capsys,
                                                   monkeypatch):
    out = tmp_path / "adapt"
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["rows"]) == {"start", "tsdae", "simcse"}
    for arm in ("tsdae", "simcse"):
        assert json.loads((out / "arms" / arm / "seed-42" / "trained.json").read_text())["steps"] == 4
        cell = report["rows"][arm]["mine"]
        assert cell["ci95"][0] <= cell["mean"] <= cell["ci95"][1]
    assert (out / "adapt.png").is_file()
    line = report["recommendation"]
    assert line.startswith(("Use ", "Keep the start model")) and "95% CI" in line
    assert "recommendation" in capsys.readouterr().out.lower()

    from sentlab.training import engine

    def no_training(*args, **kwargs):
        raise AssertionError("a finished arm was trained again")

    original_train = engine.train
    monkeypatch.setattr(engine, "train", no_training)
    (out / "report.json").unlink()
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) == 0  # all reused
    assert json.loads((out / "report.json").read_text())["rows"]["tsdae"]["mine"] == report["rows"]["tsdae"]["mine"]

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
    records = [json.loads(line) for line in (out / "arms" / "simcse" / "seed-42" / "metrics.jsonl").read_text().splitlines()
               if "eval_mine_spearman" in line]
    best = max(records, key=lambda r: r["eval_mine_spearman"])["step"]
    assert info["kept_step"] == best and info["steps"] == 4


def test_adapt_refuses_other_settings_in_the_same_folder(tiny_backbone, corpus_file, user_task, tmp_path, capsys):
    out = tmp_path / "adapt"
    out.mkdir()
    (out / "adapt.json").write_text(json.dumps({
        "text": str(corpus_file), "text_sha256": "0", "model": "x", "pooler": "mean", "max_seq_length": 128,
        "batch_size": 4, "budget": {"steps": 4, "sentences": None, "minutes": None}, "dev_card": None,
        "general": "none", "data_dir": None, "eval_steps": 2}))
    assert cli.main(adapt_args(tiny_backbone, corpus_file, user_task, out)) != 0
    assert "made with other settings (text_sha256, model)" in capsys.readouterr().err


def test_unknown_arm_and_budget_errors(tiny_backbone, corpus_file, user_task, tmp_path, capsys):
    args = adapt_args(tiny_backbone, corpus_file, user_task, tmp_path / "a")
    args[args.index("tsdae,simcse")] = "tsdae,rse"
    assert cli.main(args) != 0
    assert "unknown method 'rse' for adapt" in capsys.readouterr().err
    from sentlab.adapt import Budget

    with pytest.raises(ConfigError, match="exactly one budget"):
        Budget(steps=3, minutes=1.0)


def test_margin_over_seeds_needs_every_seed_beyond_the_noise():
    from sentlab.evaluation.results import EvalReport, MetricsResult
    from sentlab.evaluation.uncertainty import mean_items

    def report(values):
        items = mean_items(values, "k")
        return EvalReport("m", {"t": MetricsResult("map", {"map": 100 * sum(values) / len(values)}, len(values),
                                                   extra={"items": items})})

    base = [0.1 * i for i in range(10)]
    results = {"start": {0: report(base)},
               "a": {1: report([v + 0.1 for v in base]), 2: report([v + 0.1 for v in base])},
               "b": {1: report([v + 0.1 for v in base]), 2: report(base)}}
    assert adapt_report.margin(results, "a", "start", "t")["beyond_noise"]
    mixed = adapt_report.margin(results, "b", "start", "t")
    assert mixed["difference"] == pytest.approx(5.0) and not mixed["beyond_noise"]  # seed 2 shows no gain
    assert "mean over 2 seeds" in adapt_report.describe_margin(mixed)


@pytest.mark.parametrize("budget, steps, limit, minutes", [
    ({"steps": 10}, 10, 40, None),           # 10 steps of 4: the first 40 sentences, each once
    ({"sentences": 30}, 8, 32, None),        # ceil(30 / 4) steps
    ({"steps": 100}, 100, None, None),       # more than the text holds: every sentence, several epochs
    ({"minutes": 2.5}, -1, None, 2.5),       # the clock stops training
])
def test_each_budget_becomes_the_same_steps_for_every_arm(tmp_path, budget, steps, limit, minutes):
    from sentlab.adapt import ARMS, AdaptPlan, AdaptSettings, Budget, arm_config

    settings = AdaptSettings(text="t.txt", text_sha256="0", model="minilm", pooler="mean", max_seq_length=64,
                             batch_size=4, budget=vars(Budget(**budget)), dev_card=None, general="none",
                             data_dir=None, eval_steps=5)
    plan = AdaptPlan(settings, [], list(ARMS), [1], tmp_path)
    configs = [arm_config(plan, arm, 1, tmp_path / "train.txt", n_sentences=50) for arm in ARMS]
    assert {(c.train.max_steps, c.data.limit, c.train.max_minutes, c.train.batch_size) for c in configs} == {
        (steps, limit, minutes, 4)}
    assert [c.method for c in configs] == ["tsdae", "ct", "mlm", "simcse-unsup", "bert-flow"]


@pytest.mark.parametrize("shift, start", [(-0.1, "Keep the start model for t: every method lowered map"),
                                          (0.1, "Use a for t: map 55.00 vs 45.00 for the start model, +10.00")])
def test_recommendation_states_the_margin(shift, start):
    from sentlab.evaluation.results import EvalReport, MetricsResult
    from sentlab.evaluation.uncertainty import mean_items

    def report(values):
        return EvalReport("m", {"t": MetricsResult("map", {"map": 100 * sum(values) / len(values)}, len(values),
                                                   extra={"items": mean_items(values, "k")})})

    base = [0.1 * i for i in range(10)]
    results = {"start": {0: report(base)}, "a": {1: report([v + shift for v in base])},
               "b": {1: report([v + shift / 2 for v in base])}}
    line, facts = adapt_report.recommend(adapt_report.summarise(results, ["t"]), results, "t", [])
    assert line.startswith(start)
    assert facts["best_arm"] == ("a" if shift > 0 else "b")


def test_noise_only_gain_keeps_the_start_model():
    import numpy as np

    from sentlab.evaluation.results import EvalReport, MetricsResult
    from sentlab.evaluation.uncertainty import mean_items

    rng = np.random.default_rng(0)
    base = rng.random(40)
    noisy = np.clip(base + rng.normal(0.01, 0.2, 40), 0, 1)  # +1 point on average, swamped by per-item noise

    def report(values):
        return EvalReport("m", {"t": MetricsResult("map", {"map": 100 * float(np.mean(values))}, len(values),
                                                   extra={"items": mean_items(values, "k")})})

    results = {"start": {0: report(base)}, "a": {1: report(noisy)}}
    line, _ = adapt_report.recommend(adapt_report.summarise(results, ["t"]), results, "t", [])
    assert line.startswith("Keep the start model for t: no method improved map beyond the noise")


def test_the_general_tasks(tiny_backbone, data_dir):
    from sentlab.adapt import _general
    from sentlab.encoders import build_encoder
    from sentlab.evaluation import CosineScorer
    from sentlab.evaluation.sts import evaluate_sts

    scorer = CosineScorer(build_encoder(str(tiny_backbone), "mean"))
    stsb = _general("sts-b", scorer, str(data_dir))["STS-B"]
    low, high = stsb.extra["ci95"]["spearman"]
    assert low <= stsb.main <= high and stsb.n == 1379
    average = _general("sts", scorer, str(data_dir))["STS avg"]
    assert average.main == evaluate_sts(scorer, data_dir, extras=False).summary["sts_avg"]


@pytest.mark.parametrize("content, message", [
    (b"one sentence\n\nanother\n", "text.txt:2: empty line"),
    (b"only one sentence\n", "needs at least 2 sentences"),
    (b"fine\n\xff\n", "text.txt:2: line is not valid UTF-8"),
])
def test_bad_training_text_is_a_one_line_error(tmp_path, content, message):
    from sentlab.adapt import read_training_text

    (tmp_path / "text.txt").write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_training_text(tmp_path / "text.txt")
