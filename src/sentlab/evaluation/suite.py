"""Task families of ``sentlab eval --tasks``: which tasks each holds, whether their data is here,
and one entry point that runs several families into one :class:`EvalReport`.

Families: ``sts`` (STS12-16, STS-B, SICK-R), ``ranking`` (RankCSE's ranking tasks on the same data),
``transfer`` (SentEval's seven), ``useb`` (AskUbuntu, CQADupStack, TwitterPara, SciDocs),
``evalrank``; ``all`` = every family. A task whose data is absent is skipped and listed in
``summary["skipped"]`` with the reason; a family asked for by name with none of its data is an error.
Wall time per family goes to ``settings["seconds"]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from sentlab.data.sts import STS_TASKS
from sentlab.data.transfer import TRANSFER_TASKS, missing_files
from sentlab.data.useb import USEB_TASKS
from sentlab.data.useb import missing_data as useb_missing
from sentlab.encoders.prompts import (
    calibrate_for_prompts,
    check_prompts_apply,
    family_prompt,
    model_of,
    mteb_prompt,
    prompted,
)
from sentlab.errors import DataError, SentlabError
from sentlab.evaluation.evalrank import evaluate_evalrank
from sentlab.evaluation.evalrank import missing_data as evalrank_missing
from sentlab.evaluation.features import FeatureFn
from sentlab.evaluation.ranking import evaluate_ranking
from sentlab.evaluation.results import EvalReport
from sentlab.evaluation.scoring import PairScorer
from sentlab.evaluation.sts import evaluate_sts
from sentlab.evaluation.transfer import KFOLD, evaluate_transfer
from sentlab.evaluation.useb import evaluate_useb
from sentlab.paths import data_dir
from sentlab.progress import say

FAMILIES: dict[str, tuple[str, ...]] = {
    "sts": tuple(STS_TASKS),
    "ranking": tuple(STS_TASKS),
    "transfer": tuple(TRANSFER_TASKS),
    "useb": USEB_TASKS,
    "evalrank": ("EvalRank",),
}


def parse_families(spec: str) -> list[str]:
    names = [t.strip() for t in spec.split(",") if t.strip()]
    if "all" in names:
        return list(FAMILIES)
    unknown = [t for t in names if t not in FAMILIES]
    if unknown or not names:
        raise SentlabError(
            f"unknown task family {unknown[0] if unknown else spec!r} (available: {', '.join(FAMILIES)}, all)"
        )
    return list(dict.fromkeys(names))


def missing_tasks(family: str, root: str | Path | None = None) -> dict[str, str]:
    """``{task: why it cannot run}`` for the family's tasks whose data is not here."""
    missing: dict[str, str] = {}
    for task in FAMILIES[family]:
        if family in ("sts", "ranking"):
            folder = data_dir(root) / STS_TASKS[task].folder
            reason = None if folder.is_dir() else f"missing {folder}"
        elif family == "transfer":
            absent = missing_files(TRANSFER_TASKS[task], root)
            reason = f"missing {', '.join(map(str, absent))}" if absent else None
        elif family == "useb":
            reason = useb_missing(task, root)
        else:
            reason = evalrank_missing(root)
        if reason:
            missing[task] = reason
    return missing


@dataclass
class SuiteInputs:
    """What the families need: a pair scorer (similarity tasks), transfer features, options."""

    scorer: PairScorer
    features: FeatureFn
    data_dir: str | Path | None = None
    kfold: int = KFOLD
    pair_features: str = "senteval"
    n_jobs: int | None = None
    device: str | torch.device = "cpu"
    items: bool = False  # keep what each headline is computed from (sts, ranking, useb)


class PromptedScorer:
    """``scorer`` with ``prompt`` put before every text it encodes or scores (a model's own prompt for a
    family's task, :func:`~sentlab.encoders.prompts.family_prompt`); everything else is the scorer's."""

    def __init__(self, scorer, prompt: str):
        self.scorer, self.prompt = scorer, prompt
        self.model = getattr(scorer, "model", None)

    def encode(self, sentences, *args, **kwargs):
        return self.scorer.encode(prompted(list(sentences), self.prompt), *args, **kwargs)

    def score(self, sentences1, sentences2, *args, **kwargs):
        return self.scorer.score(prompted(list(sentences1), self.prompt), prompted(list(sentences2), self.prompt))

    def __getattr__(self, name: str):
        return getattr(self.scorer, name)


def useb_prompts(scorer, tasks: Sequence[str], report: EvalReport) -> dict[str, tuple[str, str]]:
    """Each USEB task's query and document prompts, the model's own as MTEB chooses them for the task's
    type (:data:`~sentlab.evaluation.useb.TASK_TYPES`: ``Reranking-query``, ``Reranking``, then ``query``
    for the queries of a reranking task; ``PairClassification`` for both texts of a pair), checked,
    calibrated for (``--embedding-precision int8``), said and recorded by task and side."""
    from sentlab.evaluation.useb import TASK_TYPES, TWO_SIDES

    model, chosen = model_of(scorer), {}
    for task in tasks:
        sides = ("query", "document") if TWO_SIDES[task] else (None, None)
        found = [mteb_prompt(model, TASK_TYPES[task], side) for side in sides]
        if not any(text for _, text in found):
            continue
        check_prompts_apply(model, [text for _, text in found], f"the useb task {task}")
        chosen[task] = (found[0][1], found[1][1])
        said = {side: {"name": name, "text": text} for side, (name, text) in zip(("query", "document"), found)}
        say(f"[useb] {task}: the model's own prompts " + ", ".join(f"{s} {p['name']!r}" for s, p in said.items()))
        report.settings.setdefault("prompts", {}).setdefault("useb", {})[task] = said
    if chosen:
        calibrate_for_prompts(scorer, sorted({p for pair in chosen.values() for p in pair if p}))
    return chosen


def run_families(families: Sequence[str], inputs: SuiteInputs, report: EvalReport) -> EvalReport:
    root = inputs.data_dir
    for family in families:
        missing = missing_tasks(family, root)
        tasks = [t for t in FAMILIES[family] if t not in missing]
        if missing:
            report.summary.setdefault("skipped", {}).update(
                {(f"{t}-ranking" if family == "ranking" else t): reason for t, reason in missing.items()}
            )
        if not tasks:
            if len(families) == 1:
                raise DataError(
                    f"no data for task family {family!r}: {next(iter(missing.values()))} (the data folder is "
                    f"{data_dir(root)}: --data-dir, else $SENTLAB_DATA; `sentlab data list` shows what is there "
                    "and how to get the rest)"
                )
            continue
        start = time.perf_counter()
        say(f"[{family}] {len(tasks)} task(s): {', '.join(tasks)}")
        name, prompt = family_prompt(model_of(inputs.scorer), family)
        if prompt:  # the model's own prompt for this task, as MTEB would give it; said and recorded
            check_prompts_apply(model_of(inputs.scorer), [prompt], f"the {family} family")
            calibrate_for_prompts(inputs.scorer, [prompt])  # --embedding-precision int8: the prompted sample's ranges
            say(f"[{family}] the model's own prompt {name!r} ({prompt!r}) before every text")
            report.settings.setdefault("prompts", {})[family] = {"name": name, "text": prompt}
        if family == "sts":
            scorer = PromptedScorer(inputs.scorer, prompt) if prompt else inputs.scorer
            evaluate_sts(scorer, root, tasks=tasks, report=report, extras="STS-B" in tasks, items=inputs.items)
        elif family == "ranking":
            evaluate_ranking(inputs.scorer, root, tasks=tasks, report=report, items=inputs.items)
        elif family == "transfer":
            evaluate_transfer(
                (lambda sentences: inputs.features(prompted(list(sentences), prompt))) if prompt else inputs.features,
                root,
                tasks=tasks,
                report=report,
                kfold=inputs.kfold,
                pair_kind=inputs.pair_features,
                n_jobs=inputs.n_jobs,
            )
        elif family == "useb":
            evaluate_useb(
                inputs.scorer.encode,
                root,
                tasks=tasks,
                report=report,
                device=inputs.device,
                query_rows=getattr(inputs.scorer, "query_rows", None),
                items=inputs.items,
                prompts=useb_prompts(inputs.scorer, tasks, report),
            )
        else:
            evaluate_evalrank(
                inputs.scorer.encode, root, report=report, query_rows=getattr(inputs.scorer, "query_rows", None)
            )
        report.settings.setdefault("seconds", {})[family] = round(time.perf_counter() - start, 1)
    if not report.tasks:
        skipped = report.summary.get("skipped", {})
        raise DataError(
            f"no task has data (checked {', '.join(families)}; e.g. {next(iter(skipped.values()), '')}); "
            "set --data-dir or $SENTLAB_DATA (`sentlab data list` shows what is there and how to get the rest)"
        )
    return report


def suite_plan(tasks: str | None, card_paths: Sequence[str | Path]) -> tuple[list[str], list]:
    """(families, task cards) of ``sentlab eval`` / ``sentlab.evaluate``, read before any model is
    loaded, so a bad name or card fails at once: ``tasks`` is comma-separated or ``all``; by default
    ``sts``, or no family when task cards are given."""
    from sentlab.evaluation.task_cards import load_task_card

    cards = [load_task_card(path) for path in card_paths]
    return (parse_families(tasks) if tasks is not None else [] if cards else ["sts"]), cards


def run_suite(inputs: SuiteInputs, families: Sequence[str], cards: Sequence) -> EvalReport:
    """The families (those without data skipped and listed) and the task cards, all scored by
    ``inputs.scorer``."""
    from sentlab.evaluation.task_cards import score_task_card

    report = EvalReport(model=getattr(inputs.scorer, "name", "model"))
    if families:
        report = run_families(families, inputs, report)
    for card in cards:
        say(f"[task card] {card.name} ({card.kind})")
        report.tasks[card.name] = score_task_card(inputs.scorer, card, device=inputs.device)
        report.settings.setdefault("task_cards", {})[card.name] = str(card.folder)
    report.settings.update({"tasks": list(families), "data_dir": str(inputs.data_dir or "")})
    return report
