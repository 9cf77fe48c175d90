"""sentlab from Python: train a preset or a config, load a trained model with its scorer, evaluate.

Example::

    import sentlab

    run = sentlab.train("simcse-unsup-minilm-cpu", train={"max_steps": 10})
    model = sentlab.load(run.model_path)
    report = sentlab.evaluate(model, tasks=["sts"])
    print(report.table())

The same engine as ``sentlab train`` / ``sentlab eval`` runs underneath; what a call trains or scores
is written to the same run folder and typed results (:class:`~sentlab.evaluation.results.EvalReport`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer

from sentlab.evaluation.results import EvalReport
from sentlab.evaluation.scoring import PairScorer
from sentlab.training.config import TrainConfig
from sentlab.training.run_folder import RunPaths

__all__ = ["LoadedModel", "TrainingRun", "evaluate", "load", "train"]


@dataclass(frozen=True)
class TrainingRun:
    """A finished training run: its folder, and the final model's results when it was evaluated."""

    config: TrainConfig
    paths: RunPaths
    results: EvalReport | None

    @property
    def model_path(self) -> Path:
        """The trained sentence-transformers model (``SentenceTransformer(run.model_path)`` loads it)."""
        return self.paths.model


def train(
    preset_or_config: str | Path | TrainConfig,
    *,
    data_dir: str | Path | None = None,
    resume: bool = False,
    evaluate: bool = True,
    **overrides: Any,
) -> TrainingRun:
    """Train a packaged preset (by name), a YAML config file, or a :class:`TrainConfig`.

    ``overrides`` are config sections as keyword arguments, merged into the config:
    ``train(..., train={"max_steps": 100, "seed": 1}, model={"name": "my-model"})``. ``data_dir`` is the
    data folder the preset's ``$SENTLAB_DATA/`` paths and the evaluation read.
    """
    from sentlab.methods import load_config, validate_config
    from sentlab.training.config import merge_sections, tree_strings
    from sentlab.training.engine import train as train_run

    if isinstance(preset_or_config, TrainConfig):
        tree = merge_sections(preset_or_config.to_tree(), overrides)
        if data_dir is not None:
            tree.setdefault("data", {})["data_dir"] = str(data_dir)
        cfg = validate_config(tree)
        named = set(tree_strings(tree))  # the data paths an override replaced are no longer checked
        cfg._data_paths = [path for path in preset_or_config._data_paths if str(path) in named]
    else:
        updates = dict(overrides)
        if data_dir is not None:
            updates["data"] = {**updates.get("data", {}), "data_dir": str(data_dir)}
        cfg = load_config(preset_or_config, updates=updates)
    paths = train_run(cfg, resume=resume, evaluate=evaluate)
    results = EvalReport.read(paths.results) if evaluate and paths.results.is_file() else None
    return TrainingRun(cfg, paths, results)


@dataclass
class LoadedModel:
    """A trained model with the scorer its folder calls for.

    ``kind`` is ``plain`` (cosine), ``rankencoder`` (a RankEncoder folder: Eq. 7 over its index) or
    ``rse`` (an RSE folder: the relational score with the saved relation weights).
    """

    encoder: SentenceTransformer
    scorer: PairScorer
    kind: str
    path: str

    def similarity(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> list[float]:
        """The scorer's similarity of each pair (cosine, Eq. 7 or the relational score)."""
        return [float(v) for v in self.scorer.score(list(sentences1), list(sentences2))]

    def encode(self, sentences: Sequence[str], **kwargs: Any):
        return self.encoder.encode(list(sentences), **kwargs)


def load(
    path: str | Path, device: str | None = None, batch_size: int = 128, trust_remote_code: bool = False
) -> LoadedModel:
    """Load a model folder (or alias / hub name) with the right scorer: RankEncoder's Eq. 7 for a
    RankEncoder folder, RSE's relational score for an RSE folder, the cosine otherwise. float32 math
    is pinned to IEEE float32, as ``sentlab eval`` does (no TF32 on GPUs, no bf16 on CPUs with AMX /
    AVX-512 BF16). A model whose config names its own Python code is refused unless
    ``trust_remote_code`` (``--trust-remote-code``)."""
    from sentlab.encoders import load_encoder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.evaluation.relational import RelationalScorer, RelationTable
    from sentlab.evaluation.scoring import CosineScorer, EmbeddingCache
    from sentlab.rank.model import RankEncoder, RankScorer

    name = str(path)
    pin_float32_math()
    encoder = load_encoder(name, device=device, trust_remote_code=trust_remote_code)
    cache = EmbeddingCache(encoder)
    if RankEncoder.is_rankencoder(name):
        rank_encoder = RankEncoder.load(name, encoder=encoder)
        scorer = RankScorer(
            cache,
            rank_encoder.index,
            rank_encoder.lambda_inf,
            batch_size=batch_size,
            name=f"{name} (Eq. 7, lambda_inf={rank_encoder.lambda_inf:g})",
        )
        return LoadedModel(encoder, scorer, "rankencoder", name)
    if RelationTable.is_saved_in(name):
        table = RelationTable.load(name, encoder.get_embedding_dimension())
        scorer = RelationalScorer(cache, table, batch_size=batch_size, name=f"{name} (RSE)")
        return LoadedModel(encoder, scorer, "rse", name)
    return LoadedModel(encoder, CosineScorer(cache, batch_size=batch_size, name=name), "plain", name)


def evaluate(
    model: str | Path | SentenceTransformer | LoadedModel,
    tasks: str | Sequence[str] | None = None,
    task_cards: Sequence[str | Path] = (),
    data_dir: str | Path | None = None,
    batch_size: int = 128,
    items: bool = False,
    trust_remote_code: bool = False,
) -> EvalReport:
    """Score a model on task families (``sts``, ``ranking``, ``transfer``, ``useb``, ``evalrank``) and
    your task cards; families without data are skipped and listed in ``report.summary["skipped"]``.

    ``tasks`` (a list, or a comma-separated string; ``all`` for every family) defaults to ``["sts"]``,
    or to none when task cards are given. A path is loaded with
    :func:`load` (so a RankEncoder or RSE folder is scored as it should be); a ``SentenceTransformer``
    is scored by cosine. ``trust_remote_code`` is :func:`load`'s.
    """
    from sentlab.evaluation.features import feature_function
    from sentlab.evaluation.scoring import CosineScorer, EmbeddingCache
    from sentlab.evaluation.suite import SuiteInputs, run_suite, suite_plan

    spec = tasks if tasks is None or isinstance(tasks, str) else ",".join(tasks)
    families, cards = suite_plan(spec, task_cards)  # a bad family name or card fails before the model loads
    if isinstance(model, SentenceTransformer):
        from sentlab.encoders.backends import pin_float32_math

        pin_float32_math()  # as load() and sentlab eval: fp32 is IEEE float32 on every device
        cache = EmbeddingCache(model)
        model = LoadedModel(model, CosineScorer(cache, batch_size=batch_size, name="model"), "plain", "model")
    elif not isinstance(model, LoadedModel):
        model = load(model, batch_size=batch_size, trust_remote_code=trust_remote_code)
    features = feature_function("sentence", model.encoder, batch_size=batch_size)
    inputs = SuiteInputs(model.scorer, features, data_dir, device=model.encoder.device, items=items)
    report = run_suite(inputs, families, cards)
    report.settings["scorer"] = model.kind
    return report
