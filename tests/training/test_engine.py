import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import TrainerCallback

from sentlab.encoders import build_encoder
from sentlab.errors import ConfigError, TrainingDivergedError
from sentlab.methods import validate_config
from sentlab.training import engine
from tests.conftest import tiny_config, write_scored_pairs_card

PROBE = ["a man plays the guitar", "the dog runs in the park", "a girl reads a book"]


def test_train_end_to_end_writes_a_loadable_run(tiny_backbone, corpus_file, fake_sts_dir, tmp_path):
    # the tiny random start scores higher on the fake STS-B dev than any checkpoint: without
    # start_is_candidate the best checkpoint is kept (tests/training/test_start_settings.py: with it)
    cfg = tiny_config(
        tiny_backbone, corpus_file, tmp_path / "run", fake_sts_dir, max_steps=12, eval_steps=4, start_is_candidate=False
    )
    before = build_encoder(str(tiny_backbone), "cls").encode(PROBE)
    paths = engine.train(cfg, evaluate=False)
    for path in (paths.config, paths.metrics, paths.loss_plot, paths.model / "modules.json"):
        assert path.is_file(), path
    modules = json.loads((paths.model / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling"]  # MLP head removed
    card = (paths.model / "README.md").read_text()  # the rebuilt model kept the trained one's card data
    assert "loss:SimCSELoss" in card and "Gao, Yao, Chen. SimCSE" in card and "## Trained with sentlab" in card
    records = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    assert any(engine.DEV_METRIC in r for r in records)
    assert not any("eval_samples_per_second" in r for r in records)  # no eval dataset: no made-up speed
    losses = [r["loss"] for r in records if "loss" in r]
    assert len(losses) == 12 and np.mean(losses[-3:]) < np.mean(losses[:3])
    assert all(r["seconds_per_step"] > 0 for r in records if "loss" in r)
    reloaded = SentenceTransformer(str(paths.model))
    after = reloaded.encode(PROBE, convert_to_tensor=True).cpu()
    assert not np.allclose(after.cpu().numpy(), before)  # it trained
    # the saved folder is the trained backbone and [CLS] pooling, with no MLP head: read by transformers
    # alone (not through sentence-transformers or sentlab's loader, which would share a wrong save)
    from transformers import AutoModel, AutoTokenizer

    folder = paths.model / modules[0]["path"]
    tokenizer, backbone = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    with torch.no_grad():
        cls = backbone(**tokenizer(PROBE, padding=True, return_tensors="pt")).last_hidden_state[:, 0]
    # the same weights and inputs, batched alike: float32 rounding only
    torch.testing.assert_close(after, cls, atol=1e-5, rtol=1e-5)


class CrashAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt("simulated kill")


def train_until_killed(cfg, step: int, monkeypatch) -> None:
    """Run ``cfg`` and kill it (KeyboardInterrupt) as step ``step`` begins."""
    original_build = engine.build_trainer

    def build_with_crash(*args, **kwargs):
        trainer = original_build(*args, **kwargs)
        trainer.add_callback(CrashAt(step))
        return trainer

    monkeypatch.setattr(engine, "build_trainer", build_with_crash)
    with pytest.raises(KeyboardInterrupt):
        engine.train(cfg, evaluate=False)
    monkeypatch.setattr(engine, "build_trainer", original_build)


def test_resume_continues_and_matches_an_uninterrupted_run(tiny_backbone, corpus_file, tmp_path, monkeypatch):
    full = engine.train(
        tiny_config(tiny_backbone, corpus_file, tmp_path / "full", max_steps=8, save_steps=4), evaluate=False
    )
    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "crash", max_steps=8, save_steps=4)
    train_until_killed(cfg, 6, monkeypatch)
    with pytest.raises(ConfigError, match="pass --resume"):
        engine.train(cfg, evaluate=False)
    resumed = engine.train(cfg, resume=True, evaluate=False)
    state = json.loads((resumed.checkpoints / "checkpoint-8" / "trainer_state.json").read_text())
    assert state["global_step"] == 8
    steps_logged = [
        json.loads(line)["step"] for line in resumed.metrics.read_text().splitlines() if "loss" in json.loads(line)
    ]
    assert steps_logged == [1, 2, 3, 4, 5, 6, 7, 8]  # steps 5-6 were redone, and are logged once
    a = SentenceTransformer(str(full.model)).encode(PROBE)
    b = SentenceTransformer(str(resumed.model)).encode(PROBE)
    # resumed from saved weights and optimizer state: the same float32 steps; 1e-5 only absorbs a BLAS
    # that is not bit-reproducible run to run (a wrong resume moves weights by ~lr = 5e-4 per step)
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_resume_under_other_settings_is_refused_unless_allowed_and_then_recorded(tiny_backbone, corpus_file, tmp_path):
    engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "r", max_steps=4, save_steps=2), evaluate=False)
    longer = tiny_config(tiny_backbone, corpus_file, tmp_path / "r", max_steps=6, save_steps=2)
    with pytest.raises(ConfigError, match=r"did not start with \(train.max_steps: 4 -> 6\).*--allow-changed-settings"):
        engine.train(longer, resume=True, evaluate=False)
    # where it writes and how it reports are not learned: resuming with another progress setting is fine
    same = tiny_config(tiny_backbone, corpus_file, tmp_path / "r", max_steps=4, save_steps=2, logging_steps=2)
    assert engine.changes_since_start(same, engine.RunPaths(tmp_path / "r")) == []
    paths = engine.train(longer, resume=True, evaluate=False, allow_changed=True)
    state = json.loads((paths.checkpoints / "checkpoint-6" / "trainer_state.json").read_text())
    assert state["global_step"] == 6
    assert "max_steps: 4" in (paths.root / "config.until-step-4.yaml").read_text()
    assert "max_steps: 6" in paths.config.read_text()
    assert "settings changed at step 4 (train.max_steps: 4 -> 6)" in paths.log.read_text()
    # a run folder whose config.yaml is empty: one line, and --allow-changed-settings still continues
    paths.config.write_text("")
    assert engine.changes_since_start(longer, paths) == [
        "config.yaml: empty or not a config, the run's own settings are unknown"
    ]


def test_resume_without_checkpoint_is_an_error(tiny_backbone, corpus_file, tmp_path):
    with pytest.raises(ConfigError, match="no checkpoint yet"):
        engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "r", max_steps=2), resume=True)


def test_nan_loss_stops_with_a_clear_error(tiny_backbone, corpus_file, tmp_path, monkeypatch):
    import sentlab.losses.simcse as simcse

    real = simcse.info_nce
    monkeypatch.setattr(simcse, "info_nce", lambda *a, **k: real(*a, **k) * torch.tensor(float("nan")))
    with pytest.raises(TrainingDivergedError, match="training loss became nan at step 1") as raised:
        engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "nan", max_steps=4), evaluate=False)
    assert raised.value.step == 1
    # the run folder stays, even before its first checkpoint: the loss log is what diagnoses it
    assert "nan" in (tmp_path / "nan" / "metrics.jsonl").read_text().lower()


def test_a_task_card_is_the_dev_task_and_picks_the_best_checkpoint(tiny_backbone, corpus_file, tmp_path):

    card = write_scored_pairs_card(tmp_path, corpus_file, "my-dev", pairs=20)
    tree = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=8, eval_steps=2).to_tree()
    tree["eval"]["dev_task"] = str(card)
    trainer_paths = engine.train(validate_config(tree), evaluate=False)
    records = [json.loads(line) for line in trainer_paths.metrics.read_text().splitlines()]
    dev = {r["step"]: r["eval_my-dev_spearman"] for r in records if "eval_my-dev_spearman" in r}
    assert sorted(dev) == [0, 2, 4, 6, 8]  # step 0: the start model, a candidate too
    state = json.loads(
        max(
            (tmp_path / "run" / "checkpoints").glob("checkpoint-*/trainer_state.json"),
            key=lambda p: int(p.parent.name.split("-")[1]),
        ).read_text()
    )
    checkpoints = {step: value for step, value in dev.items() if step}
    assert state["best_metric"] == pytest.approx(max(checkpoints.values()))  # the card chose the best checkpoint
    selection = json.loads((tmp_path / "run" / "selection.json").read_text())
    assert selection["kept_step"] == max(dev, key=lambda step: (dev[step], step != 0))  # ties: the checkpoint
    with pytest.raises(Exception, match="unknown dev task 'STS-X'"):
        tree["eval"]["dev_task"] = "STS-X"
        validate_config(tree)


def test_wall_clock_budget_stops_training_with_a_checkpoint_and_counts_time_before_a_resume(
    tiny_backbone, corpus_file, tmp_path
):
    from sentlab.training.callbacks import WallClockBudget

    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=50, save_steps=100, max_minutes=1e-6)
    paths = engine.train(cfg, evaluate=False)
    checkpoints = sorted(paths.checkpoints.glob("checkpoint-*"))
    # the budget is spent after the first step: a checkpoint is saved there (not at save_steps) and training ends
    assert [c.name for c in checkpoints] == ["checkpoint-1"]
    spent = json.loads((checkpoints[0] / WallClockBudget.FILE).read_text())["seconds"]
    assert spent > 0
    budget = WallClockBudget(minutes=1.0)

    class Args:
        output_dir = str(paths.checkpoints)

    class State:
        global_step = 1

    budget.on_train_begin(Args(), State(), None)
    assert budget.spent_seconds() >= spent  # the minutes before the resume count


def test_fewer_rows_than_a_batch_is_an_error_not_a_run_that_learns_nothing(tiny_backbone, tmp_path):
    from sentlab.errors import DataError

    one_line = tmp_path / "one.txt"
    one_line.write_text("the dog runs " * 2000 + "\n", encoding="utf-8")  # one huge line: one sentence
    with pytest.raises(
        DataError,
        match=r"one.txt: 1 usable training row\(s\), fewer than one batch "
        r"\(train.batch_size=8\)",
    ):
        engine.train(tiny_config(tiny_backbone, one_line, tmp_path / "run", max_steps=2), evaluate=False)
    assert not (tmp_path / "run").exists()  # nothing left behind
    with pytest.raises(ConfigError, match="train.batch_size=1: simcse-unsup needs at least 2 rows a batch"):
        engine.train(tiny_config(tiny_backbone, one_line, tmp_path / "run", max_steps=2, batch_size=1), evaluate=False)


def test_the_run_log_says_what_happens_and_counts_truncated_texts(tiny_backbone, corpus_file, tmp_path, capsys):
    from sentlab.progress import set_quiet

    lines = corpus_file.read_text().splitlines()
    lines[3] = " ".join(["dog"] * 40)  # 42 tokens with [CLS] and [SEP], over max_seq_length 16
    lines[7] = " ".join(["cat"] * 20)
    corpus_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    set_quiet(True)  # --quiet: nothing on stderr, the run's log still has every line
    try:
        paths = engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=1), evaluate=False)
    finally:
        set_quiet(False)
    assert "reading the training data" not in capsys.readouterr().err  # libraries' bars aside
    log = paths.log.read_text("utf-8")
    for expected in (
        "reading the training data",
        "96 training rows",
        "loading the model",
        "notice: 2 of 96 distinct training texts are longer than model.max_seq_length=16 tokens "
        "(the longest: 42) and are truncated to it",
        "model saved to",
    ):
        assert expected in log, expected


def test_the_truncation_count_takes_each_columns_prompt_with_its_texts(tiny_backbone):
    from datasets import Dataset

    from sentlab.encoders import load_encoder

    model = load_encoder(str(tiny_backbone), pooler="mean")
    # 14 tokens with [CLS] and [SEP]: within 16 alone, over it behind the 4-token prompt "dog dog dog dog "
    rows = Dataset.from_dict({"anchor": [" ".join(["cat"] * 12)], "positive": [" ".join(["cow"] * 12)]})
    assert engine.report_truncation(model, rows, 16) == 0
    assert engine.report_truncation(model, rows, 16, {"anchor": "dog dog dog dog "}) == 1  # the anchor only
    assert engine.report_truncation(model, rows, 16, dict.fromkeys(["anchor", "positive"], "dog dog dog dog ")) == 2


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_sentlab_eval_after_training_encodes_nothing_again(tiny_backbone, corpus_file, data_dir, tmp_path, monkeypatch):
    """Training's final STS evaluation leaves its embeddings in the on-disk cache, keyed by the saved
    model's weights, so the README's `sentlab eval` on the trained model reads them back."""
    from sentlab.cli import main
    from sentlab.evaluation import scoring

    paths = engine.train(tiny_config(tiny_backbone, corpus_file, tmp_path / "run", data_dir, max_steps=2, eval_steps=2))
    assert paths.results.is_file()
    encoded = []
    real = scoring.encode_by_length
    monkeypatch.setattr(
        scoring,
        "encode_by_length",
        lambda model, texts, *a, **k: encoded.append(len(texts)) or real(model, texts, *a, **k),
    )
    assert (
        main(
            [
                "eval",
                "--model",
                str(paths.model),
                "--tasks",
                "sts",
                "--data-dir",
                str(data_dir),
                "--output",
                str(tmp_path / "again.json"),
                "--quiet",
            ]
        )
        == 0
    )
    assert sum(encoded) == 0, encoded
    before = json.loads(paths.results.read_text())["tasks"]["STS-B"]["spearman"]
    assert json.loads((tmp_path / "again.json").read_text())["tasks"]["STS-B"]["spearman"] == before


def test_a_finished_run_is_found_again_by_what_it_learnt_from(tiny_backbone, corpus_file, tmp_path):
    from sentlab.training.run_folder import find_finished_run

    runs = tmp_path / "runs"
    paths = engine.train(tiny_config(tiny_backbone, corpus_file, runs / "a", max_steps=1), evaluate=False)
    elsewhere = tiny_config(tiny_backbone, corpus_file, tmp_path / "b", max_steps=1, progress_bar=True)
    assert find_finished_run(elsewhere, runs) == paths.model  # output folder and progress bars do not count
    assert find_finished_run(tiny_config(tiny_backbone, corpus_file, tmp_path / "b", max_steps=2), runs) is None
    corpus_file.write_text(corpus_file.read_text() + "one more sentence\n", encoding="utf-8")
    assert find_finished_run(elsewhere, runs) is None  # other training text


def test_train_prints_the_start_models_scores_beside_the_trained_models(
    tiny_backbone, corpus_file, data_dir, tmp_path, capfd
):
    """The terminal says whether training helped: the dev-task selection (start model against the best
    checkpoint) and the final STS table with the start model's row; no library progress bar of its own
    ("Computing widget examples") appears."""
    from sentlab.cli import main
    from sentlab.evaluation.results import EvalReport

    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", data_dir, max_steps=2, eval_steps=2)
    config = tmp_path / "config.yaml"
    config.write_text(cfg.to_yaml(), encoding="utf-8")
    assert main(["train", str(config), "--set", "eval.dev_limit=100"]) == 0
    out, err = capfd.readouterr()
    assert "Computing widget examples" not in out + err
    start = EvalReport.read(tmp_path / "run" / "start_results.json")
    trained = EvalReport.read(tmp_path / "run" / "results.json")
    assert set(start.tasks) == set(trained.tasks) and start.model.startswith("start model")
    lines = out.splitlines()
    dev = next(line for line in lines if line.startswith("dev task ("))
    selection = json.loads((tmp_path / "run" / "selection.json").read_text())
    assert f"start model {selection['start']:.4f}" in dev and f"kept step {selection['kept_step']}" in dev
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["model"])
    assert lines[header + 1].split()[:2] == ["start", "model"] and lines[header + 2].split()[0] == trained.model
    assert f"{start.tasks['STS-B'].spearman:.2f}" in lines[header + 1]


def test_the_loss_plot_is_skipped_in_one_line_without_matplotlib(tmp_path, monkeypatch, capsys):
    """An offline node's image may lack matplotlib (the GPU check installs without dependencies): the
    run says so and goes on (the metrics file holds the numbers)."""
    import sys

    from sentlab import progress

    monkeypatch.setitem(progress._state, "quiet", False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 1, "loss": 0.5}\n')
    engine.plot_loss(metrics, tmp_path / "loss.png")
    assert not (tmp_path / "loss.png").exists()
    assert "loss plot skipped: matplotlib is not installed" in capsys.readouterr().err


def test_step_time_is_the_interval_over_its_steps_and_leaves_out_evaluation(monkeypatch):
    from types import SimpleNamespace

    from sentlab.training import callbacks

    clock = iter([10.0, 16.0, 30.0, 31.0])
    monkeypatch.setattr(callbacks.time, "perf_counter", lambda: next(clock))
    timer, state = callbacks.StepTime(), SimpleNamespace(global_step=0)
    timer.on_train_begin(None, state, None)  # 10.0
    state.global_step = 3
    logs = {"loss": 1.0}
    timer.on_log(None, state, None, logs=logs)  # 16.0: 6 s over 3 steps
    assert logs["seconds_per_step"] == 2.0
    timer.on_evaluate(None, state, None)
    timer.on_save(None, state, None)  # evaluation and checkpoint: 16.0 to 30.0, left out
    timer.on_step_begin(None, state, None)  # 30.0: the clock restarts as step 4 begins
    state.global_step = 4
    logs = {"loss": 0.5}
    timer.on_log(None, state, None, logs=logs)  # 31.0: 1 s over 1 step, not 15 s
    assert logs["seconds_per_step"] == 1.0
    timer.on_step_begin(None, state, None)  # no evaluation since: the clock runs on (no clock read)
    dev = {"eval_sts": 0.5}
    timer.on_log(None, state, None, logs=dev)  # an evaluation record gets no step time
    assert "seconds_per_step" not in dev


def test_a_run_reported_to_tensorboard_holds_the_loss_its_components_step_time_and_dev_score(
    tiny_backbone, corpus_file, fake_sts_dir, tmp_path
):
    """train.report_to: [tensorboard]: the event file in RUN/tensorboard, read back, holds every
    training log record's loss, the loss's own components (MLM's accuracy), the step time and the
    dev score; the run log says where it reports and what a crash loses."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tests.methods.test_baselines import method_config

    cfg = method_config("mlm", tiny_backbone, corpus_file, tmp_path / "run", max_steps=4, eval_steps=2)
    cfg.train.report_to = ["tensorboard"]
    cfg.eval.dev_task = "STS-B"
    cfg.data.data_dir = str(fake_sts_dir)
    paths = engine.train(cfg, evaluate=False)
    events = EventAccumulator(str(paths.root / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in ("train/loss", "train/mlm_accuracy_last", "train/seconds_per_step", "eval/stsb-dev_spearman_cosine"):
        assert tag in tags, sorted(tags)
    assert [e.step for e in events.Scalars("train/loss")] == [1, 2, 3, 4]
    logged = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    assert [e.value for e in events.Scalars("train/loss")] == pytest.approx([r["loss"] for r in logged if "loss" in r])
    log = paths.log.read_text()
    assert "a checkpoint every 2 steps: a crash loses at most the 2 steps" in log and "reporting to tensorboard" in log


def test_report_to_an_integration_that_is_not_there_is_refused_in_one_line(tiny_backbone, corpus_file, tmp_path):
    from sentlab.errors import ConfigError

    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", max_steps=2)
    cfg.train.report_to = ["tensorboardd"]
    with pytest.raises(ConfigError, match="unknown integration 'tensorboardd'"):
        engine.train(cfg, evaluate=False)


def test_early_stopping_stops_after_its_patience_and_keeps_the_best(tiny_backbone, corpus_file, fake_sts_dir, tmp_path):
    """A threshold no dev score can clear (a Spearman gains at most 2): training stops after the first
    evaluation and `patience` more, long before max_steps."""
    from sentlab.errors import ConfigError

    cfg = tiny_config(tiny_backbone, corpus_file, tmp_path / "run", fake_sts_dir, max_steps=40, eval_steps=2)
    cfg.train.early_stopping_patience = 2
    cfg.train.early_stopping_threshold = 2.0
    cfg.train.start_is_candidate = False
    paths = engine.train(cfg, evaluate=False)
    steps = [json.loads(line)["step"] for line in paths.metrics.read_text().splitlines()]
    assert max(steps) == 6  # evaluations at 2 (the first best), 4 and 6 (no gain of 2.0): stop
    none = tiny_config(tiny_backbone, corpus_file, tmp_path / "none", max_steps=4)
    none.train.early_stopping_patience = 2
    with pytest.raises(ConfigError, match="no dev score to watch"):
        engine.train(none, evaluate=False)
    last = tiny_config(tiny_backbone, corpus_file, tmp_path / "last", fake_sts_dir, max_steps=4, keep_best=False)
    last.train.early_stopping_patience = 2
    with pytest.raises(ConfigError, match="needs train.keep_best"):
        engine.train(last, evaluate=False)
    alone = tiny_config(tiny_backbone, corpus_file, tmp_path / "alone", fake_sts_dir, max_steps=4)
    alone.train.early_stopping_threshold = 0.1
    with pytest.raises(ConfigError, match="does nothing without train.early_stopping_patience"):
        engine.train(alone, evaluate=False)
