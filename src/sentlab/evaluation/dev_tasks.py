"""One-number dev tasks for analyses that score many models (TSDAE paper Sec. 7: Fig. 3 corpus
size, App. A sweeps), and the relevant pairs of a task (Sec. 7.2).

``sts-b`` (STS-B dev, Spearman x 100), ``twitterpara`` (AP; the test split, as the paper does for
want of a dev split), ``cqadupstack:<forum>`` (MAP@100 of one forum; no dev split exists here), or
a task card's path (``.yaml`` / ``.yml``: its headline, :mod:`sentlab.evaluation.task_cards`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from sentlab.errors import ConfigError

DEV_TASKS = ("sts-b", "twitterpara", "cqadupstack:<forum>", "<task card>.yaml")


def score_dev_task(model: SentenceTransformer, task: str, data_dir: str | Path | None = None) -> float:
    from sentlab.data.sts import load_sts_task
    from sentlab.data.useb import load_cqadupstack, load_twitterpara, task_folder
    from sentlab.evaluation.scoring import CosineScorer, EmbeddingCache
    from sentlab.evaluation.sts import score_task
    from sentlab.evaluation.useb import score_cqadupstack, score_twitterpara

    cache = EmbeddingCache(model)
    if task.endswith((".yaml", ".yml")):
        from sentlab.evaluation.task_cards import load_task_card, score_task_card

        return float(score_task_card(CosineScorer(cache), load_task_card(task), model.device, interval=False).main)
    if task == "sts-b":
        return float(score_task(CosineScorer(cache), load_sts_task("STS-B", data_dir, split="dev")).spearman)
    if task == "twitterpara":
        return float(score_twitterpara(cache.encode, load_twitterpara(task_folder("TwitterPara", data_dir))).main)
    if task.startswith("cqadupstack:"):
        forum = task.split(":", 1)[1]
        forums = load_cqadupstack(task_folder("CQADupStack", data_dir))
        if forum not in forums:
            raise ConfigError(f"unknown CQADupStack forum {forum!r} (choose from {', '.join(sorted(forums))})")
        return float(score_cqadupstack(cache.encode, {forum: forums[forum]}, device=model.device).main)
    raise ConfigError(f"unknown dev task {task!r} (choose from {', '.join(DEV_TASKS)})")


def relevant_pairs(
    task: str, data_dir: str | Path | None = None, limit: int | None = None, seed: int = 0
) -> list[tuple[str, str]]:
    """Pairs labelled relevant: STS-B dev pairs scored >= 4, TwitterPara paraphrases, CQADupStack
    (query, duplicate) titles of one forum; a seeded sample of ``limit`` of them."""
    from sentlab.data.sts import load_sts_task
    from sentlab.data.useb import load_cqadupstack, load_twitterpara, task_folder

    if task == "sts-b":
        dev = load_sts_task("STS-B", data_dir, split="dev")
        pairs = [(a, b) for a, b, s in zip(dev.sentences1, dev.sentences2, dev.scores) if s >= 4]
    elif task == "twitterpara":
        sets = load_twitterpara(task_folder("TwitterPara", data_dir))
        pairs = [(a, b) for p in sets.values() for a, b, y in zip(p.sentences1, p.sentences2, p.labels) if y == 1]
    elif task.startswith("cqadupstack:"):
        forum = load_cqadupstack(task_folder("CQADupStack", data_dir)).get(task.split(":", 1)[1])
        if forum is None:
            raise ConfigError(f"unknown CQADupStack forum in {task!r}")
        pairs = [(forum.queries[q], forum.corpus[d]) for q in sorted(forum.relevant) for d in sorted(forum.relevant[q])]
    else:
        raise ConfigError(f"unknown task {task!r} (choose from {', '.join(DEV_TASKS)})")
    if limit is not None and limit < len(pairs):
        keep = np.random.default_rng(seed).choice(len(pairs), size=limit, replace=False)
        pairs = [pairs[i] for i in sorted(keep)]
    return pairs
