"""``sentlab adapt``: adapt one start model to unlabelled in-domain text with every applicable method,
under one budget, and say which helped the user's own task - and by how much, with how much noise.

Arms (declared as data in :data:`ARMS`; each is a registered method with the learning rate of its
CPU preset (``sentlab presets``)): TSDAE, CT, MLM, unsupervised SimCSE, BERT-flow - the unsupervised
methods of the TSDAE paper's comparison (Sec. 5, Table 2) that need nothing but sentences. RankCSE
(needs teacher encoders), RSE and supervised SimCSE (need labelled pairs) and RankEncoder (an
inference-time method over a corpus index, built with ``sentlab index``) are not arms.

An arm may be named ``ARM@LR`` (``--methods bert-flow@1e-5``): that method at another learning rate,
with its own row and run folder, so an arm can be retried beside the earlier one in the same folder.

An arm whose loss becomes NaN or infinite with one seed is recorded as diverged (``trained.json``
says at which step), its other seeds are not trained, and the report lists it as diverged and
ranks the other arms: an arm whose surviving seeds alone were ranked would be chosen on its lucky
runs.

Every arm starts from the same model, with the same pooling, batch size, seeds and budget: ``steps``
(optimizer steps), ``sentences`` (steps = sentences / batch size) or ``minutes`` (wall clock of
training, :class:`sentlab.training.callbacks.WallClockBudget`). With a step or sentence budget,
each arm sees the same first ``steps x batch`` sentences of a seeded shuffle of the text, each once
when the text is long enough. With a dev card, each arm keeps its best checkpoint on it.

Evaluation: the user's task cards (test), the dev card when there is one, and a general task - STS-B
test (default, Spearman with a bootstrap interval) or the seven STS tasks (their average, no
interval) - for the start model and every arm and seed (three seeds by default). The recommendation
(:mod:`sentlab.reporting.adapt`) chooses on the dev card or on a seeded half of the first card's
items and reports the margin on items that took no part in the choice, with an interval over seeds
and items together. With a dev card each arm keeps its best checkpoint on it, the start model
(step 0) included. Output folder::

    OUT/adapt.json              the settings; a rerun with other settings is refused
    OUT/train.txt               the shuffled training text every arm reads
    OUT/start/evaluation.json   the start model's results (an EvalReport, items kept)
    OUT/arms/<arm>/seed-<s>/    the arm's run folder (checkpoints, model/), trained.json, evaluation.json
    OUT/report.md, OUT/report.json, OUT/adapt.png   table + recommendation, the numbers, bar chart

Resuming: a rerun of the same command skips finished arms (``trained.json``) and finished
evaluations, resumes an interrupted arm from its newest checkpoint, and reads embeddings computed
before a kill from the embedding cache (:mod:`sentlab.cache`). Files are written whole (temporary
name, then renamed), so a kill never leaves a half-written result that a rerun would trust.
"""

from __future__ import annotations

import json
import random
import time
from array import array
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sentlab.adapt_plan import (  # noqa: F401 (the plan's data, re-exported)
    ARMS,
    GENERAL_TASKS,
    AdaptPlan,
    AdaptSettings,
    Arm,
    Budget,
    arm_spec,
)
from sentlab.errors import ConfigError, DataError, TrainingDivergedError
from sentlab.evaluation.results import EvalReport, MetricsResult
from sentlab.paths import atomic_path
from sentlab.progress import say


def read_training_text(path: Path):
    """The user's text as a memory-mapped table (:func:`~sentlab.data.tables.sentence_table`:
    every line checked, converted once)."""
    from sentlab.data.tables import sentence_table

    table = sentence_table(path)
    if len(table) < 2:
        raise DataError(f"{path}: needs at least 2 sentences")
    return table


def shuffled_rows(n: int, seed: int) -> array:
    """The row order of the shuffled training text: ``random.Random(seed).shuffle`` of 0 .. n-1 (the
    same draws as shuffling a list), kept as 8-byte integers rather than a list of Python ints."""
    order = array("q", range(n))
    random.Random(seed).shuffle(order)
    return order


def prepare(plan: AdaptPlan) -> Path:
    """Check the settings against an earlier run in the folder and write the shuffled training text
    (whitespace runs made single spaces), streamed in chunks from the memory-mapped table."""
    from sentlab.training.run_folder import write_json

    out = plan.output
    out.mkdir(parents=True, exist_ok=True)
    saved = out / "adapt.json"
    if saved.is_file():
        earlier = AdaptSettings(**json.loads(saved.read_text("utf-8")))
        if earlier.comparable() != plan.settings.comparable():
            changed = [k for k, v in plan.settings.comparable().items() if earlier.comparable().get(k) != v]
            raise ConfigError(f"{out} was made with other settings ({', '.join(changed)}); choose another --output")
    else:
        write_json(saved, asdict(plan.settings))
    train_file = out / "train.txt"
    if not train_file.is_file():
        table = read_training_text(Path(plan.settings.text))
        order = shuffled_rows(len(table), 0)
        with atomic_path(train_file) as partial, partial.open("w", encoding="utf-8") as sink:
            for start in range(0, len(order), 10_000):
                rows = table[order[start : start + 10_000].tolist()]["sentence"]
                sink.write("".join(" ".join(s.split()) + "\n" for s in rows))
    return train_file


def arm_config(plan: AdaptPlan, arm: str, seed: int, train_file: Path, n_sentences: int):
    from sentlab.methods import validate_config

    s = plan.settings
    steps = Budget(**s.budget).max_steps(s.batch_size)
    limit = steps * s.batch_size if steps > 0 and steps * s.batch_size < n_sentences else None
    train: dict[str, Any] = {
        "output_dir": str(plan.output / "arms" / arm / f"seed-{seed}"),
        "batch_size": s.batch_size,
        "learning_rate": arm_spec(arm).learning_rate,
        "max_steps": steps,
        "seed": seed,
        "progress_bar": plan.progress_bar,
        "eval_steps": s.eval_steps,
        "save_steps": s.eval_steps,
        "logging_steps": 10,
    }
    if s.budget.get("minutes") is not None:
        train.update(max_minutes=s.budget["minutes"], epochs=1000.0)  # the clock stops it
    model = {
        "name": s.model,
        "max_seq_length": s.max_seq_length,
        "inference_max_seq_length": s.max_seq_length,  # trained, saved and scored at one length
        **({"pooler": s.pooler} if s.pooler else {}),
        **({"trust_remote_code": True} if s.trust_remote_code else {}),
    }
    return validate_config(
        {
            "method": arm_spec(arm).method,
            "model": model,
            "data": {"train": str(train_file), "limit": limit, "data_dir": s.data_dir},
            "train": train,
            "eval": {"dev_task": s.dev_card or "none", "final_tasks": []},
        }
    )


def kept_step(checkpoints: Path) -> int | None:
    """The step the dev card chose: 0 when the start model scored best (``RUN/selection.json``, written
    by the engine's :class:`~sentlab.training.engine.StartCandidate`), else the trainer's
    ``best_model_checkpoint``."""
    from sentlab.training.run_folder import RunPaths

    selection = RunPaths(checkpoints.parent).selection
    if selection.is_file():
        return json.loads(selection.read_text("utf-8"))["kept_step"]
    states = sorted(checkpoints.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    best = json.loads(states[-1].read_text("utf-8")).get("best_model_checkpoint") if states else None
    return int(Path(best).name.split("-")[1]) if best else None


def train_arm(plan: AdaptPlan, arm: str, seed: int, train_file: Path, n_sentences: int) -> dict[str, Any]:
    """Train one arm unless it finished before; resume it when it was interrupted."""
    from sentlab.training.checkpoints import checkpoint_folders
    from sentlab.training.engine import RunPaths, train
    from sentlab.training.run_folder import write_json

    cfg = arm_config(plan, arm, seed, train_file, n_sentences)
    paths = RunPaths(Path(cfg.train.output_dir))
    marker = paths.root / "trained.json"
    if marker.is_file():
        say(f"[adapt] {arm} seed {seed}: trained before, kept")
        return json.loads(marker.read_text("utf-8"))
    resume = bool(checkpoint_folders(paths.checkpoints))
    say(f"[adapt] {arm} seed {seed}: training {cfg.method}" + (" (resumed)" if resume else ""))
    started = time.perf_counter()
    diverged: dict[str, Any] | None = None
    try:
        train(cfg, resume=resume, evaluate=False)
    except TrainingDivergedError as err:
        diverged = {"step": err.step, "error": str(err)}
        say(f"[adapt] {arm} seed {seed}: diverged ({err})")
    records = (
        [json.loads(line) for line in paths.metrics.read_text("utf-8").splitlines() if line.strip()]
        if paths.metrics.is_file()
        else []
    )
    steps = max((r.get("step", 0) for r in records), default=0)
    info = {
        "arm": arm,
        "method": cfg.method,
        "learning_rate": cfg.train.learning_rate,
        "seed": seed,
        "steps": steps,
        "train_seconds": round(time.perf_counter() - started, 1),
        "resumed": resume,
    }
    if diverged:
        info.update(
            steps=diverged["step"] if diverged["step"] is not None else steps, kept_step=None, diverged=diverged
        )
    else:
        info["kept_step"] = kept_step(paths.checkpoints) if plan.settings.dev_card else steps
    write_json(marker, info)
    return info


def _general(name: str, scorer, data_dir: str | None) -> dict[str, Any]:
    from sentlab.data.sts import load_sts_task
    from sentlab.evaluation.sts import evaluate_sts
    from sentlab.evaluation.task_cards import score_pairs, with_interval

    if name == "sts-b":
        pairs = load_sts_task("STS-B", data_dir)
        return {"STS-B": with_interval(score_pairs(scorer, pairs.sentences1, pairs.sentences2, pairs.scores))}
    report = evaluate_sts(scorer, data_dir, extras=False)
    if "sts_avg" not in report.summary:
        raise DataError("--general sts needs all seven STS tasks (STS12-16, STS-B, SICK-R); use --general sts-b")
    return {
        "STS avg": MetricsResult(
            "spearman",
            {"spearman": float(report.summary["sts_avg"])},
            n=sum(t.n_pairs for t in report.tasks.values()),
            extra={"tasks": {k: t.spearman for k, t in report.tasks.items()}},
        )
    }


def evaluate(plan: AdaptPlan, name: str, model_path: str, folder: Path) -> EvalReport:
    """The model's results on every card and the general task; tasks already in
    ``folder/evaluation.json`` are kept, missing ones are added."""
    from sentlab.cache import EmbeddingStore
    from sentlab.encoders.loading import load_encoder
    from sentlab.evaluation.scoring import CosineScorer, EmbeddingCache
    from sentlab.evaluation.task_cards import load_task_card, score_task_card
    from sentlab.training.run_folder import write_json

    path = folder / "evaluation.json"
    report = EvalReport.read(path) if path.is_file() else EvalReport(model=name)
    cards = {card.name: card for card in map(load_task_card, [*plan.cards, *filter(None, [plan.settings.dev_card])])}
    identities = {task: plan.card_identities.get(task) or card.identity() for task, card in cards.items()}
    plan.card_identities.update(identities)
    kept = report.settings.setdefault("task_card_identity", {})
    for task in cards:  # a card whose settings or data changed since it was scored: scored again
        if task in report.tasks and kept.get(task) != identities[task]:
            del report.tasks[task]
    missing = [n for n in [*cards, *GENERAL_TASKS[plan.settings.general]] if n not in report.tasks]
    if not missing:
        return report
    pooler = plan.settings.pooler if name == "start" else None
    encoder = load_encoder(
        model_path,
        pooler=pooler,
        max_seq_length=plan.settings.max_seq_length,
        trust_remote_code=plan.settings.trust_remote_code,
    ).eval()
    scorer = CosineScorer(EmbeddingCache(encoder, store=EmbeddingStore.default()), name=name)
    started = time.perf_counter()
    for task in missing:
        say(f"[adapt] {name}: {task}")
        if task in cards:
            report.tasks[task] = score_task_card(scorer, cards[task], device=encoder.device)
            report.settings.setdefault("task_cards", {})[task] = str(cards[task].folder)
            kept[task] = identities[task]
        else:
            report.tasks.update(_general(plan.settings.general, scorer, plan.settings.data_dir))
        report.settings[f"eval_seconds_{task}"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        write_json(path, report.to_dict())  # after each task: a kill loses one task at most
    return report


def start_model_max_length(model: str, trust_remote_code: bool = False) -> int:
    """The start model's own maximum sequence length, the length it encodes at as it is (256 for
    all-MiniLM-L6-v2, whose tokenizer allows 512; :func:`~sentlab.encoders.loading.inference_max_seq_length`),
    whatever pooler the arms put on it: every arm trains, is saved and is scored at it unless
    --max-seq-length is given."""
    from sentlab.encoders.loading import inference_max_seq_length

    length = inference_max_seq_length(model, trust_remote_code)
    say(f"[adapt] maximum sequence length {length} (the start model's)")
    return length


def run_adapt(plan: AdaptPlan) -> dict[str, Any]:
    """Train and evaluate every arm and seed (reusing what is done), then write the report."""
    from sentlab.reporting.adapt import write_report

    for arm in plan.arms:
        arm_spec(arm)
    if plan.settings.general not in GENERAL_TASKS:
        raise ConfigError(f"unknown general task {plan.settings.general!r} (choose from {', '.join(GENERAL_TASKS)})")
    if not plan.cards:
        raise ConfigError("give at least one --task-card: the task the adaptation is for")
    train_file = prepare(plan)
    with train_file.open(encoding="utf-8") as lines:
        n_sentences = sum(1 for _ in lines)
    results: dict[str, dict[int, EvalReport]] = {
        "start": {0: evaluate(plan, "start", plan.settings.model, plan.output / "start")}
    }
    training: dict[str, dict[int, dict[str, Any]]] = {}
    for arm in plan.arms:
        for seed in plan.seeds:
            info = train_arm(plan, arm, seed, train_file, n_sentences)
            folder = plan.output / "arms" / arm / f"seed-{seed}"
            training.setdefault(arm, {})[seed] = info
            if "diverged" in info:  # not ranked on its other seeds' runs
                results.pop(arm, None)
                say(
                    f"[adapt] {arm} diverged with seed {seed}: its other seeds are not trained, the other arms are ranked"
                )
                break
            results.setdefault(arm, {})[seed] = evaluate(plan, arm, str(folder / "model"), folder)
    return write_report(plan, results, training)
