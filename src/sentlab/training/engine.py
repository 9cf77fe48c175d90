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
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
from transformers import set_seed
from transformers.trainer_utils import get_last_checkpoint

from sentlab.data.readers import read_sentences, read_table
from sentlab.data.sts import load_sts_task
from sentlab.encoders.heads import SimCSEMLPHead
from sentlab.encoders.loading import build_encoder, load_encoder
from sentlab.errors import ConfigError
from sentlab.losses.simcse import SimCSELoss
from sentlab.training.callbacks import MetricsLog, StopOnNonFiniteLoss
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
             "results": "results.json", "loss_plot": "loss.png"}


def build_model(cfg: TrainConfig) -> SentenceTransformer:
    """The encoder to train; with the ``cls`` pooler, SimCSE's MLP head is appended (training only)."""
    if cfg.model.pooler is None:
        model = load_encoder(cfg.model.name)
    else:
        model = build_encoder(cfg.model.name, cfg.model.pooler, prompt_template=cfg.model.prompt_template)
    if cfg.model.pooler == "cls" and cfg.method.startswith("simcse"):
        model.append(SimCSEMLPHead(model.get_embedding_dimension()))
    return model


def strip_training_heads(model: SentenceTransformer) -> SentenceTransformer:
    """The model without training-only modules, ready to be saved."""
    kept = [module for module in model if not isinstance(module, SimCSEMLPHead)]
    if len(kept) == len(model):
        return model
    return SentenceTransformer(modules=kept, device=str(model.device))


def build_train_dataset(cfg: TrainConfig) -> Dataset:
    path = Path(cfg.data.train)
    if cfg.method == "simcse-unsup":
        if cfg.data.columns:
            rows = read_table(path, cfg.data.columns[:1], limit=cfg.data.limit)
            sentences = [row[0] for row in rows]
        else:
            sentences = read_sentences(path, limit=cfg.data.limit)
        return Dataset.from_dict({"sentence": sentences})
    columns = cfg.data.columns or ["sent0", "sent1", "hard_neg"]
    if len(columns) not in (2, 3):
        raise ConfigError(f"data.columns: supervised SimCSE needs 2 or 3 columns, got {columns}")
    rows = read_table(path, columns, limit=cfg.data.limit)
    names = ["anchor", "positive", "negative"][: len(columns)]
    return Dataset.from_dict({name: [row[i] for row in rows] for i, name in enumerate(names)})


def build_loss(cfg: TrainConfig, model: SentenceTransformer) -> SimCSELoss:
    return SimCSELoss(model, temperature=cfg.loss.temperature, hard_negative_weight=cfg.loss.hard_negative_weight)


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
    set_seed(cfg.train.seed)  # before the model: the training head's initialisation depends on it
    model = model or build_model(cfg)
    evaluator = build_dev_evaluator(cfg)
    args = training_arguments(cfg, paths, has_dev=evaluator is not None)
    collator = SentenceTransformerDataCollator(preprocess_fn=model.preprocess, max_length=cfg.model.max_seq_length)
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=build_train_dataset(cfg), loss=build_loss(cfg, model),
        evaluator=evaluator, data_collator=collator,
        callbacks=[StopOnNonFiniteLoss(), MetricsLog(paths.metrics)],
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
        final.save(str(paths.model))
        plot_loss(paths.metrics, paths.loss_plot)
        if evaluate and "sts" in cfg.eval.final_tasks:
            from sentlab.evaluation import CosineScorer, evaluate_sts

            report = evaluate_sts(CosineScorer(final, name=str(paths.model)), cfg.data.data_dir)
            report.settings["config"] = cfg.model_dump()
            report.write(paths.results)
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
