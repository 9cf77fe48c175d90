"""The training engine: a sentlab config -> the sentence-transformers trainer -> a run folder.

One engine serves every method: a method contributes a loss (and its inputs); the trainer of
sentence-transformers (on top of the transformers Trainer and Accelerate) gives multi-GPU through
``torchrun`` / ``accelerate launch``, mixed precision, checkpoints, ``--resume``, dev evaluation
every N steps with the best checkpoint kept, and a progress bar.

Run folder::

    RUN/config.yaml       the resolved config
    RUN/checkpoints/      trainer checkpoints (resume from the newest)
    RUN/metrics.jsonl     every logged loss / learning rate / dev score
    RUN/model/            the final sentence-transformers model (training-only heads removed)
    RUN/results.json      STS results of the final model
    RUN/loss.png          the loss curve

RankEncoder runs add (Sec. 3.4, App. A.7: what E1 contributes is computed once, before training)::

    RUN/base_index/                E1's corpus index (unless rank.index names a prebuilt one)
    RUN/base_train_vectors.npy     E1's vectors of the training sentences (+ .json provenance)
    RUN/model/rankencoder/         E2's corpus index: RUN/model is a RankEncoder folder (Eq. 7)
    RUN/results-rankencoder.json   STS results of Eq. 7 with rank.lambda_inf

RankCSE runs add ``RUN/teacher_vectors/teacher<k>.npy`` (+ .json provenance): each teacher's vectors
of the training sentences, computed once.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
from torch import nn
from transformers import set_seed
from transformers.trainer_utils import get_last_checkpoint

from sentlab.data.readers import read_sentences, read_table
from sentlab.data.sts import load_sts_task
from sentlab.encoders.heads import SimCSEMLPHead
from sentlab.encoders.loading import build_encoder, keep_first_layers, load_encoder
from sentlab.errors import ConfigError, DataError
from sentlab.losses.rankcse import RankCSELoss
from sentlab.losses.rankencoder import RankEncoderLoss
from sentlab.losses.simcse import SimCSELoss
from sentlab.rank.index import CorpusIndex, corpus_sha256, encoder_fingerprint
from sentlab.rank.model import RankEncoder, RankScorer
from sentlab.training.callbacks import LossComponentsLog, MetricsLog, StopOnNonFiniteLoss
from sentlab.training.config import TrainConfig

logger = logging.getLogger(__name__)
DEV_EVALUATOR_NAME = "stsb-dev"
DEV_METRIC = f"eval_{DEV_EVALUATOR_NAME}_spearman_cosine"


@dataclass(frozen=True)
class RunPaths:
    """The files of a run folder (see the module docstring)."""

    root: Path

    def __getattr__(self, name: str) -> Path:
        try:
            return self.root / RUN_FILES[name]
        except KeyError:
            raise AttributeError(name) from None


RUN_FILES = {"config": "config.yaml", "checkpoints": "checkpoints", "metrics": "metrics.jsonl", "model": "model",
             "results": "results.json", "loss_plot": "loss.png", "base_index": "base_index",
             "base_train_vectors": "base_train_vectors.npy", "rank_results": "results-rankencoder.json",
             "teacher_vectors": "teacher_vectors"}


def build_model(cfg: TrainConfig) -> SentenceTransformer:
    """The encoder to train; with the ``cls`` pooler, SimCSE's MLP head is appended (training only)."""
    if cfg.model.pooler is None:
        model = load_encoder(cfg.model.name)
    else:
        model = build_encoder(cfg.model.name, cfg.model.pooler, prompt_template=cfg.model.prompt_template)
    if cfg.model.num_layers is not None:
        keep_first_layers(model, cfg.model.num_layers)
    if cfg.model.pooler == "cls":
        model.append(SimCSEMLPHead(model.get_embedding_dimension()))
    return model


def strip_training_heads(model: SentenceTransformer) -> SentenceTransformer:
    """The model without training-only modules, ready to be saved."""
    kept = [module for module in model if not isinstance(module, SimCSEMLPHead)]
    if len(kept) == len(model):
        return model
    return SentenceTransformer(modules=kept, device=str(model.device))


def read_train_sentences(cfg: TrainConfig) -> list[str]:
    """The training sentences of a one-column method (unsupervised SimCSE, RankEncoder, RankCSE)."""
    path = Path(cfg.data.train)
    if cfg.data.columns:
        return [row[0] for row in read_table(path, cfg.data.columns[:1], limit=cfg.data.limit)]
    return read_sentences(path, limit=cfg.data.limit)


def build_train_dataset(cfg: TrainConfig) -> Dataset:
    path = Path(cfg.data.train)
    if cfg.method == "simcse-unsup":
        return Dataset.from_dict({"sentence": read_train_sentences(cfg)})
    if cfg.method in ("rankencoder", "rankcse"):  # the label: the sentence's row in precomputed vectors
        sentences = read_train_sentences(cfg)
        return Dataset.from_dict({"sentence": sentences, "label": list(range(len(sentences)))})
    columns = cfg.data.columns or ["sent0", "sent1", "hard_neg"]
    if len(columns) not in (2, 3):
        raise ConfigError(f"data.columns: supervised SimCSE needs 2 or 3 columns, got {columns}")
    rows = read_table(path, columns, limit=cfg.data.limit)
    names = ["anchor", "positive", "negative"][: len(columns)]
    return Dataset.from_dict({name: [row[i] for row in rows] for i, name in enumerate(names)})


def build_loss(cfg: TrainConfig, model: SentenceTransformer, frozen: FrozenInputs | None = None) -> nn.Module:
    base = SimCSELoss(model, temperature=cfg.loss.temperature, hard_negative_weight=cfg.loss.hard_negative_weight)
    if cfg.method not in ("rankencoder", "rankcse"):
        return base
    if frozen is None:
        raise ConfigError(f"method {cfg.method} needs vectors of frozen encoders (prepare_frozen_inputs)")
    if cfg.method == "rankcse":
        r = cfg.rankcse
        return RankCSELoss(base, frozen.train_vectors, r.teacher_weights, beta=r.beta, gamma=r.gamma,
                           distillation=r.distillation, tau_student=r.tau_student, tau_teacher=r.tau_teacher,
                           use_infonce=r.use_infonce)
    r = cfg.rank
    return RankEncoderLoss(base, frozen.train_vectors[0], frozen.index.vectors, lambda_train=r.lambda_train,
                           tau_lower=r.tau_lower, tau_upper=r.tau_upper, combine=r.combine)


@dataclass
class FrozenInputs:
    """What frozen encoders contribute to training, computed once: their vectors of the training
    sentences (RankEncoder's E1, RankCSE's teachers) and, for RankEncoder, E1's corpus index."""

    train_vectors: list[np.ndarray]
    index: CorpusIndex | None = None


def frozen_vectors(encoder: SentenceTransformer, fingerprint: str, sentences: list[str], path: Path,
                   batch_size: int, progress: bool) -> np.ndarray:
    """L2-normalised vectors of ``sentences`` by a frozen ``encoder``, cached at ``path`` (.npy + .json
    provenance) and reused when made by the same encoder from the same text (so --resume skips them)."""
    provenance = {"encoder_fingerprint": fingerprint, "sentences_sha256": corpus_sha256(sentences)}
    meta_path = path.with_suffix(".json")
    if not (path.is_file() and meta_path.is_file() and json.loads(meta_path.read_text("utf-8")) == provenance):
        path.parent.mkdir(parents=True, exist_ok=True)
        vectors = encoder.encode(sentences, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                                 show_progress_bar=progress)
        np.save(path, np.asarray(vectors, dtype=np.float32))
        meta_path.write_text(json.dumps(provenance) + "\n", encoding="utf-8")
    return np.load(path, mmap_mode="r")


def prepare_frozen_inputs(cfg: TrainConfig, paths: RunPaths, sentences: list[str]) -> FrozenInputs:
    progress = cfg.train.progress_bar
    if cfg.method == "rankcse":
        vectors = []
        for k, name in enumerate(cfg.rankcse.teachers):
            teacher = load_encoder(name)
            vectors.append(frozen_vectors(teacher, encoder_fingerprint(teacher), sentences,
                                          paths.teacher_vectors / f"teacher{k}.npy", cfg.rankcse.encode_batch_size,
                                          progress))
        return FrozenInputs(vectors)
    r = cfg.rank
    e1 = load_encoder(r.base_encoder)
    fingerprint = encoder_fingerprint(e1)
    if r.index is not None:
        index = CorpusIndex.load(r.index)
        index.check_encoder(e1, fingerprint)
    else:
        corpus = read_sentences(r.corpus, limit=r.corpus_limit)
        try:
            index = CorpusIndex.load(paths.base_index)
            index.check_encoder(e1, fingerprint)
            index.check_corpus(corpus)
        except DataError:
            index = CorpusIndex.build(e1, corpus, r.base_encoder, batch_size=r.encode_batch_size,
                                      show_progress_bar=progress)
            index.save(paths.base_index)
    train_vectors = frozen_vectors(e1, fingerprint, sentences, paths.base_train_vectors, r.encode_batch_size, progress)
    return FrozenInputs([train_vectors], index)


def build_dev_evaluator(cfg: TrainConfig) -> EmbeddingSimilarityEvaluator | None:
    if cfg.eval.dev_task == "none":
        return None
    dev = load_sts_task(cfg.eval.dev_task, cfg.data.data_dir, split="dev")
    n = cfg.eval.dev_limit or len(dev)
    return EmbeddingSimilarityEvaluator(dev.sentences1[:n], dev.sentences2[:n], list(dev.scores[:n] / 5.0),
                                        main_similarity="cosine", name=DEV_EVALUATOR_NAME, batch_size=128,
                                        similarity_fn_names=["cosine"])


def training_arguments(cfg: TrainConfig, paths: RunPaths, has_dev: bool) -> SentenceTransformerTrainingArguments:
    t = cfg.train
    return SentenceTransformerTrainingArguments(
        output_dir=str(paths.checkpoints),
        per_device_train_batch_size=t.batch_size,
        learning_rate=t.learning_rate,
        num_train_epochs=t.epochs,
        max_steps=t.max_steps,
        warmup_ratio=t.warmup_ratio,
        weight_decay=t.weight_decay,
        eval_strategy="steps" if has_dev else "no",
        eval_steps=t.eval_steps,
        save_strategy="steps",
        save_steps=t.save_steps or t.eval_steps,
        save_total_limit=t.save_total_limit,
        load_best_model_at_end=has_dev and t.keep_best,
        metric_for_best_model=DEV_METRIC if has_dev else None,
        greater_is_better=True,
        logging_steps=t.logging_steps,
        logging_nan_inf_filter=False,
        fp16=t.mixed_precision == "fp16",
        bf16=t.mixed_precision == "bf16",
        seed=t.seed,
        data_seed=t.seed,
        dataloader_num_workers=t.dataloader_workers,
        disable_tqdm=not t.progress_bar,
        report_to="none",
        ddp_find_unused_parameters=True,
        # without an accelerator, Accelerate only runs multi-process (gloo) DDP when told it is on CPU
        use_cpu=not _has_accelerator(),
    )


def _has_accelerator() -> bool:
    import torch

    return torch.cuda.is_available() or (hasattr(torch, "xpu") and torch.xpu.is_available()) or (
        torch.backends.mps.is_available())


def build_trainer(cfg: TrainConfig, paths: RunPaths, model: SentenceTransformer | None = None) -> SentenceTransformerTrainer:
    evaluator = build_dev_evaluator(cfg)
    args = training_arguments(cfg, paths, has_dev=evaluator is not None)
    train_dataset = build_train_dataset(cfg)
    frozen = None
    if cfg.method in ("rankencoder", "rankcse"):
        with args.main_process_first(desc="frozen encoders' vectors"):  # the others then reuse the saved files
            frozen = prepare_frozen_inputs(cfg, paths, train_dataset["sentence"])
    set_seed(cfg.train.seed)  # before the model: the training head's initialisation depends on it
    model = model or build_model(cfg)
    collator = SentenceTransformerDataCollator(preprocess_fn=model.preprocess, max_length=cfg.model.max_seq_length)
    loss = build_loss(cfg, model, frozen)
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=train_dataset, loss=loss, evaluator=evaluator, data_collator=collator,
        callbacks=[StopOnNonFiniteLoss(), LossComponentsLog(loss), MetricsLog(paths.metrics)],
    )
    return trainer


def train(cfg: TrainConfig, resume: bool = False, evaluate: bool = True) -> RunPaths:
    """Train as ``cfg`` says; with ``resume``, continue from the newest checkpoint of the run folder."""
    paths = RunPaths(Path(cfg.train.output_dir))
    checkpoint = None
    if resume:
        checkpoint = get_last_checkpoint(str(paths.checkpoints)) if paths.checkpoints.is_dir() else None
        if checkpoint is None:
            raise ConfigError(f"{paths.checkpoints}: --resume given but the run has no checkpoint yet")
    elif paths.checkpoints.is_dir() and get_last_checkpoint(str(paths.checkpoints)):
        raise ConfigError(f"{paths.root}: run folder already has checkpoints; pass --resume or choose another train.output_dir")
    paths.root.mkdir(parents=True, exist_ok=True)
    paths.config.write_text(cfg.to_yaml(), encoding="utf-8")
    trainer = build_trainer(cfg, paths)
    trainer.train(resume_from_checkpoint=checkpoint)
    if trainer.is_world_process_zero():
        final = strip_training_heads(trainer.model)
        rank_encoder = None
        if cfg.method == "rankencoder":  # Eq. 7 needs E2's own rank vectors: index the corpus with E2
            base_index = CorpusIndex.load(cfg.rank.index or paths.base_index)
            index = CorpusIndex.build(final, base_index.sentences, str(paths.model),
                                      batch_size=cfg.rank.encode_batch_size, show_progress_bar=cfg.train.progress_bar)
            rank_encoder = RankEncoder(final, index, cfg.rank.lambda_inf)
            rank_encoder.save(paths.model)
        else:
            final.save(str(paths.model))
        plot_loss(paths.metrics, paths.loss_plot)
        if evaluate and "sts" in cfg.eval.final_tasks:
            from sentlab.evaluation import CosineScorer, evaluate_sts
            from sentlab.evaluation.scoring import EmbeddingCache

            cache = EmbeddingCache(final)
            report = evaluate_sts(CosineScorer(cache, name=str(paths.model)), cfg.data.data_dir)
            report.settings["config"] = cfg.model_dump()
            report.write(paths.results)
            if rank_encoder is not None:
                scorer = RankScorer(cache, rank_encoder.index, cfg.rank.lambda_inf, name=f"{paths.model} (Eq. 7)")
                report = evaluate_sts(scorer, cfg.data.data_dir)
                report.settings.update({"config": cfg.model_dump(), "lambda_inf": cfg.rank.lambda_inf})
                report.write(paths.rank_results)
    return paths


def plot_loss(metrics_path: Path, out_path: Path) -> None:
    """Training loss (and STS-B dev Spearman, if logged) against the step, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not metrics_path.is_file():
        return
    records = [json.loads(line) for line in metrics_path.read_text("utf-8").splitlines() if line.strip()]
    steps = [r["step"] for r in records if "loss" in r]
    losses = [r["loss"] for r in records if "loss" in r]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, losses, label="training loss", color="tab:blue")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    dev = [(r["step"], r[DEV_METRIC]) for r in records if DEV_METRIC in r]
    if dev:
        ax2 = ax.twinx()
        ax2.plot([s for s, _ in dev], [v * 100 for _, v in dev], "o-", color="tab:orange", label="STS-B dev Spearman")
        ax2.set_ylabel("STS-B dev Spearman x 100")
    ax.set_title("sentlab training")
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
