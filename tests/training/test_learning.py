"""Methods must learn, not only run: from a deterministic tiny random-initialised encoder, a handful of
SimCSE or TSDAE steps raise a held-out score by a margin set from the spread over seeds, and the same
check fails when the encoder's gradient is cut.

Two synthetic tasks, each scored by the average precision of the cosine over 200 positive and 200
negative held-out pairs; the random encoder's mean pooling is already a strong lexical baseline on both.
- paraphrase: sentences of 6-10 random words and their paraphrases with 30 % of the words deleted,
  against unrelated sentences (AP 0.951 before training). SimCSE's task: 30 steps (batch 32, lr 1e-3)
  on 1,024 other random sentences raise it by 0.0391 on average over seeds 0-9, sd 0.0015, the
  smallest gain 0.0363 (`python -m benchmarks.studies.learning_spread`). TSDAE *lowers* it (-0.05 over 3
  seeds): random words carry nothing to reconstruct beyond the words the encoder sees, which mean
  pooling already keeps.
- topic: 4 topics, each with its own quarter of the test vocabulary; a sentence is 4-6 words of one
  topic; positives are two sentences of the same topic, negatives two of different topics (AP 0.765
  before training). TSDAE's task: to rebuild the deleted 60 % of the words, the embedding must carry
  the topic. 60 steps (batch 32, lr 1e-3) on 1,024 other topic sentences raise the AP by 0.2075 on
  average over seeds 0-9, sd 0.032, the smallest gain 0.1268
  (`python -m benchmarks.studies.learning_spread --method tsdae --task topic --steps 60`); 30 steps gave
  0.105, sd 0.039, smallest 0.032, too close to the margin.
With the encoder's gradient set to zero the gain is 0.0 on every seed of both. The margin, 0.02, is
half of SimCSE's mean gain and 13 of its standard deviations below it, 5.8 of TSDAE's below its mean,
and far from the zero of a model that does not learn.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from sentlab.encoders import build_encoder
from sentlab.methods import validate_config
from sentlab.training import engine
from sentlab.training.run_folder import RunPaths
from tests.conftest import WORDS, make_tiny_backbone

MARGIN = 0.02
TSDAE_STEPS = 60


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 10)))


def paraphrase(text: str, rng: random.Random) -> str:
    words = text.split()
    return " ".join([w for w in words if rng.random() > 0.3] or words[:1])


def paraphrase_task(rng: random.Random) -> tuple[list[str], list[tuple[str, str]]]:
    """(1,024 training sentences, 200 positive then 200 negative held-out pairs): word-deletion paraphrases."""
    train = [sentence(rng) for _ in range(1024)]
    positives = [(s, paraphrase(s, rng)) for s in (sentence(rng) for _ in range(200))]
    negatives = [(sentence(rng), sentence(rng)) for _ in range(200)]
    return train, positives + negatives


def topic_task(rng: random.Random, topics: int = 4) -> tuple[list[str], list[tuple[str, str]]]:
    """(1,024 training sentences, 200 positive then 200 negative held-out pairs): same topic or not."""
    words = [w for w in WORDS if w not in ("a", "the")]
    rng.shuffle(words)
    vocabularies = [words[i::topics] for i in range(topics)]

    def topic_sentence(topic: int) -> str:
        return " ".join(rng.choice(vocabularies[topic]) for _ in range(rng.randint(4, 6)))

    train = [topic_sentence(rng.randrange(topics)) for _ in range(1024)]
    positives = [(topic_sentence(t), topic_sentence(t)) for t in (rng.randrange(topics) for _ in range(200))]
    negatives = [(topic_sentence(t), topic_sentence(u)) for t, u in (rng.sample(range(topics), 2) for _ in range(200))]
    return train, positives + negatives


TASKS = {"paraphrase": paraphrase_task, "topic": topic_task}


def make_task(folder, name: str = "paraphrase"):
    """(folder, the random encoder, the held-out pairs, their labels) of a synthetic task in ``TASKS``."""
    train, pairs = TASKS[name](random.Random(123))
    (folder / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    backbone = make_tiny_backbone(folder / "random-encoder", hidden=32, layers=2, dropout=0.1, seed=0)
    return folder, backbone, pairs, np.r_[np.ones(200), np.zeros(200)]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return make_task(tmp_path_factory.mktemp("learning"))


@pytest.fixture(scope="module")
def topic(tmp_path_factory):
    return make_task(tmp_path_factory.mktemp("learning-topic"), "topic")


def average_precision(model, pairs, labels) -> float:
    a = model.encode([p[0] for p in pairs])
    b = model.encode([p[1] for p in pairs])
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(average_precision_score(labels, cosine))


def gain_after_training(
    task,
    method: str,
    seed: int,
    cut_encoder_gradient: bool = False,
    steps: int = 30,
    learning_rate: float = 1e-3,
    pooler: str = "mean",
) -> float:
    folder, backbone, pairs, labels = task
    cfg = validate_config(
        {
            "method": method,
            "model": {"name": str(backbone), "pooler": pooler, "max_seq_length": 16},
            "data": {"train": str(folder / "train.txt")},
            "train": {
                "output_dir": str(folder / f"{method}-{seed}-{cut_encoder_gradient}"),
                "batch_size": 32,
                "learning_rate": learning_rate,
                "max_steps": steps,
                "logging_steps": steps,
                "save_steps": 1000,
                "progress_bar": False,
                "seed": seed,
            },
            "eval": {"dev_task": "none", "final_tasks": []},
        }
    )
    paths = RunPaths(folder / cfg.train.output_dir)
    paths.root.mkdir(parents=True, exist_ok=True)
    trainer = engine.build_trainer(cfg, paths)
    if cut_encoder_gradient:
        for parameter in trainer.model.parameters():
            parameter.register_hook(torch.zeros_like)
    before = average_precision(build_encoder(str(backbone), pooler).eval(), pairs, labels)
    trainer.train()
    after = average_precision(trainer.sentlab_method.final_model(trainer.model).eval(), pairs, labels)
    return after - before


@pytest.mark.parametrize("seed", [0, 1])
def test_simcse_learns_from_a_random_encoder(task, seed):
    assert gain_after_training(task, "simcse-unsup", seed) > MARGIN


@pytest.mark.parametrize("seed", [0, 1])
def test_tsdae_learns_topics_from_a_random_encoder(topic, seed):
    assert gain_after_training(topic, "tsdae", seed, steps=TSDAE_STEPS) > MARGIN


def test_the_learning_check_fails_when_the_encoder_gradient_is_cut(task, topic):
    assert gain_after_training(task, "simcse-unsup", 0, cut_encoder_gradient=True) < MARGIN
    assert gain_after_training(topic, "tsdae", 0, cut_encoder_gradient=True, steps=TSDAE_STEPS) < MARGIN
