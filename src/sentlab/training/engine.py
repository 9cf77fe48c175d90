"""The training engine: a sentlab config -> the sentence-transformers trainer -> a run folder.

One engine serves every method. The method (:mod:`sentlab.methods`, chosen by ``cfg.method``)
contributes the training dataset, frozen inputs, the model, the loss, extra parameter groups, the
final packaging and evaluation; the trainer of sentence-transformers (on top of the transformers
Trainer and Accelerate) gives multi-GPU through ``torchrun`` / ``accelerate launch``, mixed
precision, checkpoints, ``--resume``, dev evaluation every N steps with the best checkpoint kept,
and a progress bar.

Run folder (methods add their own files, see each method's module)::

    RUN/config.yaml       the resolved config
    RUN/checkpoints/      trainer checkpoints (resume from the newest)
    RUN/metrics.jsonl     every logged loss / learning rate / dev score, each step once
    RUN/model/            the final sentence-transformers model (training-only modules removed)
    RUN/results.json      STS results of the final model
    RUN/loss.png          the loss curve
    RUN/run.log           the run's progress lines and notices (e.g. how many texts were truncated)
    RUN/fingerprint.json  what the finished run learnt from (config and training file), to find it again
    RUN/start_dev.json    with a dev task: the start model's score on it, taken before the first step
    RUN/start_results.json the start model's STS results (eval.compare_start), beside results.json
    RUN/selection.json    with a dev task: the kept step (0: the start model) and the scores behind it
    RUN/precision.json    the precision that ran, read back at the first step (sentlab.precision)
    RUN/runtime.json      the device, compile, optimizer, data loader and batch chunking that ran, read back
                          at the first step (at the second in a compiled run: the first runs eagerly while
                          its precision is read back, sentlab.training.runtime)
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

import torch
from datasets import Dataset, DatasetDict
from sentence_transformers import (
    SentenceTransformer,
    SentenceTransformerTrainer,
    SentenceTransformerTrainingArguments,
)
from sentence_transformers.base.sampler import NoDuplicatesBatchSampler
from sentence_transformers.sentence_transformer.data_collator import (
    SentenceTransformerDataCollator,
)
from sentence_transformers.sentence_transformer.evaluation import (
    EmbeddingSimilarityEvaluator,
)
from torch import nn
from transformers import EarlyStoppingCallback, PrinterCallback, TrainerCallback, set_seed

from sentlab.data.sts import load_sts_task
from sentlab.devices import training_device, training_device_type
from sentlab.encoders.loading import (
    keep_start_settings,
    load_encoder,  # noqa: F401  (engine.load_encoder: reload a saved run)
)
from sentlab.encoders.matryoshka import save_dims
from sentlab.encoders.prompts import keep_training_prompts
from sentlab.encoders.static import is_static
from sentlab.errors import ConfigError, DataError, TrainingDivergedError, extra_hint
from sentlab.losses.gradcache import innermost
from sentlab.losses.sets import SetLosses
from sentlab.methods import Method, get_method, validate_config
from sentlab.paths import write_text_atomic
from sentlab.precision import (
    Precision,
    PrecisionProbe,
    networks_in_half_precision,
    resolve_precision,
    summary,
)
from sentlab.progress import bars, run_log, say
from sentlab.training.callbacks import (
    LossComponentsLog,
    LossStateCheckpoint,
    MetricsLog,
    StepTime,
    StopOnNonFiniteLoss,
    WallClockBudget,
    load_loss_state,
    loss_only_state,
    restore_loss_state,
)
from sentlab.training.checkpoints import (
    MarkCheckpointComplete,
    checkpoint_folders,
    newest_complete_checkpoint,
)
from sentlab.training.config import TrainConfig
from sentlab.training.model_card import (
    CONFIG_FILE,
    describe_kept,
    describe_run,
    keep_card_data,
    sentlab_version,
    write_sentlab_section,
)
from sentlab.training.run_folder import (
    RunPaths,
    changed_settings,
    run_fingerprint,
    write_json,
)
from sentlab.training.runtime import (
    ADAMW,
    check_compile,
    chunking_record,
    compiled_graphs,
    frozen_placements,
    fused_optimizer,
    networks_compiled,
    runtime_record,
    runtime_summary,
)
from sentlab.training.samplers import ShuffledBatchSampler

logger = logging.getLogger(__name__)
DEV_EVALUATOR_NAME = "stsb-dev"
DEV_METRIC = f"eval_{DEV_EVALUATOR_NAME}_spearman_cosine"

__all__ = ["DEV_METRIC", "RunPaths", "SentlabTrainer", "build_trainer", "dev_metric", "plot_loss", "train"]


def build_dev_evaluator(cfg: TrainConfig):
    """STS-B dev (Spearman of cosine), the user's task card, or None (``eval.dev_task``)."""
    if cfg.eval.dev_task == "none":
        return None
    if cfg.eval.dev_card:
        from sentlab.evaluation.task_cards import TaskCardEvaluator, load_task_card

        return TaskCardEvaluator(load_task_card(cfg.eval.dev_card))
    dev = load_sts_task(cfg.eval.dev_task, cfg.data.data_dir, split="dev")
    n = cfg.eval.dev_limit or len(dev)
    return EmbeddingSimilarityEvaluator(
        dev.sentences1[:n],
        dev.sentences2[:n],
        list(dev.scores[:n] / 5.0),
        main_similarity="cosine",
        name=DEV_EVALUATOR_NAME,
        batch_size=128,
        similarity_fn_names=["cosine"],
    )


def dev_metric(evaluator) -> str | None:
    """The logged metric that picks the best checkpoint: ``eval_stsb-dev_spearman_cosine`` or, for a
    task card, ``eval_<card name>_<its main metric>``."""
    if evaluator is None:
        return None
    main = getattr(evaluator, "main_metric", None)
    return f"eval_{evaluator.name}_{main}" if main else DEV_METRIC


def reporting(names: list[str]) -> list[str] | str:
    """``train.report_to``: the trainer's integrations by name; one that is unknown or not installed
    is refused in one line (transformers would warn and go on, or fail deep in the first step)."""
    if not names:
        return "none"
    from transformers.integrations import INTEGRATION_TO_CALLBACK, get_available_reporting_integrations

    available = set(get_available_reporting_integrations())
    for name in names:
        if name not in INTEGRATION_TO_CALLBACK:
            raise ConfigError(
                f"train.report_to: unknown integration {name!r} (one of {', '.join(INTEGRATION_TO_CALLBACK)})"
            )
        if name not in available:
            how = extra_hint("tensorboard") if name == "tensorboard" else f"pip install {name}"
            raise ConfigError(f"train.report_to: {name} is not installed ({how})")
    return list(names)


def early_stopping(cfg: TrainConfig, has_dev: bool) -> list[TrainerCallback]:
    """``train.early_stopping_patience``: transformers' ``EarlyStoppingCallback`` on the dev score, or
    a one-line refusal where there is no dev score to watch or no best checkpoint to keep."""
    t = cfg.train
    if t.early_stopping_patience is None:
        if t.early_stopping_threshold:
            raise ConfigError("train.early_stopping_threshold does nothing without train.early_stopping_patience")
        return []
    if not has_dev:
        raise ConfigError("train.early_stopping_patience: there is no dev score to watch (eval.dev_task: none)")
    if not t.keep_best:
        raise ConfigError("train.early_stopping_patience needs train.keep_best: true (the best checkpoint is kept)")
    return [EarlyStoppingCallback(t.early_stopping_patience, t.early_stopping_threshold)]


def no_duplicates(cfg: TrainConfig, method: Method) -> dict[str, object]:
    """``train.no_duplicates``: sentence-transformers' ``NoDuplicatesBatchSampler`` (no text twice in a
    batch, where a second copy would be a false negative); refused in one line for a method without
    in-batch negatives or one that batches its own way."""
    if not cfg.train.no_duplicates:
        return {}
    if not method.in_batch_negatives:
        raise ConfigError(
            f"train.no_duplicates: {cfg.method} has no in-batch negatives (a repeated text is no false negative "
            "there); remove the setting"
        )
    if "batch_sampler" in method.training_arguments():
        raise ConfigError(f"train.no_duplicates: {cfg.method} batches its rows its own way; remove one of the two")
    if method.rows_drawn_on_read:
        raise ConfigError(
            f"train.no_duplicates: {cfg.method} draws a row's negative as the row is read, so the sampler cannot "
            "see the texts a batch gets; remove the setting"
        )
    return {"batch_sampler": NoDuplicatesBatchSampler}


def training_arguments(
    cfg: TrainConfig,
    paths: RunPaths,
    has_dev: bool,
    learning_rate_mapping: dict[str, float] | None = None,
    method_arguments: dict[str, object] | None = None,
    metric: str | None = DEV_METRIC,
) -> SentenceTransformerTrainingArguments:
    t = cfg.train
    device_type = training_device_type()
    if has_dev and t.keep_best and t.save_steps is not None and t.save_steps % t.eval_steps:
        raise ConfigError(
            f"train.save_steps ({t.save_steps}) must be a multiple of train.eval_steps ({t.eval_steps}) "
            "to keep the best checkpoint; change one, or set train.keep_best: false"
        )
    arguments = dict(
        output_dir=str(paths.checkpoints),
        per_device_train_batch_size=t.batch_size,
        learning_rate=t.learning_rate,
        learning_rate_mapping=learning_rate_mapping or {},
        num_train_epochs=t.epochs,
        max_steps=t.max_steps,
        **_warmup(t.warmup_ratio),
        weight_decay=t.weight_decay,
        eval_strategy="steps" if has_dev else "no",
        eval_steps=t.eval_steps,
        save_strategy="steps",
        save_steps=t.save_steps or t.eval_steps,
        save_total_limit=None,  # rotated by MarkCheckpointComplete, only once the new checkpoint is complete
        load_best_model_at_end=has_dev and t.keep_best,
        metric_for_best_model=metric if has_dev else None,
        greater_is_better=True,
        logging_steps=t.logging_steps,
        logging_nan_inf_filter=False,
        fp16=t.mixed_precision == "fp16",
        bf16=t.mixed_precision == "bf16",
        tf32=t.tf32 or None,  # None: the trainer leaves the switches as pin_float32_math set them
        seed=t.seed,
        data_seed=t.seed,
        dataloader_num_workers=t.dataloader_workers,
        disable_tqdm=not t.progress_bar,
        report_to=reporting(t.report_to),
        ddp_find_unused_parameters=True,
        # without an accelerator, Accelerate only runs multi-process (gloo) DDP when told it is on CPU
        use_cpu=device_type == "cpu",
        batch_sampler=ShuffledBatchSampler,  # a method may name its own (MLM's length grouping)
        multi_dataset_batch_sampler=cfg.data.sampler,  # data.sets: a batch from one set at a time
    )
    arguments.update(t.trainer_args)  # checked against the trainer's fields; none of the keys above
    arguments.update(method_arguments or {})
    optimizer = str(arguments.get("optim", "adamw_torch"))
    fused = fused_optimizer(t.fused_optimizer, optimizer, device_type)  # refuses `true` where it cannot run
    if optimizer in ADAMW:
        arguments["optim"] = "adamw_torch_fused" if fused else "adamw_torch"
    arguments["dataloader_pin_memory"] = device_type == "cuda"  # batches travel to the GPU from pinned pages
    return SentenceTransformerTrainingArguments(**arguments)


def _warmup(ratio: float) -> dict[str, float]:
    """Transformers 5 takes the warm-up ratio as a float ``warmup_steps`` (``warmup_ratio`` is deprecated)."""
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        return {"warmup_steps": float(ratio)}
    return {"warmup_ratio": ratio}


class SentlabTrainer(SentenceTransformerTrainer):
    """The sentence-transformers trainer with three extensions: a method's own learning-rate schedule
    (:meth:`Method.lr_multiplier`, e.g. CT's segmented constants), which no ``lr_scheduler_type`` of
    transformers expresses; logs without the evaluation speeds the trainer computes from an
    evaluation dataset sentlab never passes (the dev task is an evaluator: "0 samples per second");
    and the precision of the first training step read back (:class:`~sentlab.precision.PrecisionProbe`)
    into ``RUN/precision.json`` and the run log. Everything else is the library's."""

    sentlab_precision: Precision | None = None
    precision_file: Path | None = None
    precision_record: dict | None = None
    runtime_file: Path | None = None
    runtime: dict | None = None  # what ran, read back at the first step
    compile_requested: bool = False
    trainer_args_given: tuple[str, ...] = ()  # train.trainer_args' keys, read back into runtime.json
    compiled: list[str] | tuple[()] = ()  # the networks train.compile compiled
    sentlab_loss: nn.Module | None = None  # the loss as one module (a loss per set: SetLosses; the trainer's is a dict)
    graphs_before: int = 0  # torch.compile's graph count in this process when training began

    @property
    def own_loss(self) -> nn.Module:
        """The loss as one module: :class:`~sentlab.losses.sets.SetLosses` where the trainer holds a loss
        per set as a mapping."""
        return self.sentlab_loss if self.sentlab_loss is not None else self.loss

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        # transformers 5 calls ``_save`` on every process and checks ``should_save`` inside its own;
        # sentence-transformers' override does not, so every process wrote the same model files at once
        if self.args.should_save:
            super()._save(output_dir, state_dict)

    def compute_loss(self, model, inputs, return_outputs: bool = False, num_items_in_batch=None):
        if not model.training or self.sentlab_precision is None:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if self.precision_record is None:  # the first step: its precision read back by forward hooks
            # a compiled network would be captured with the probe's hooks and captured again without
            # them at the next step; the probed step runs eagerly instead (autocast gives both the same
            # dtypes), and the compiled graphs are built once, at the second step
            stance = torch.compiler.set_stance("force_eager") if self.compiled else contextlib.nullcontext()
            with stance, PrecisionProbe(self.own_loss) as probe:
                result = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            loss = result[0] if isinstance(result, tuple) else result
            self.precision_record = probe.record(
                self.sentlab_precision, loss, grad_scaler=getattr(self.accelerator, "scaler", None) is not None
            )
            if self.is_world_process_zero():
                say(summary(self.precision_record))
                if self.precision_file is not None:
                    write_json(self.precision_file, self.precision_record)
            if not self.compiled:
                self._record_runtime(loss.device)
            return result
        result = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if self.runtime is None:  # a compiled run's second step: the first that ran the compiled graphs
            self._record_runtime((result[0] if isinstance(result, tuple) else result).device)
        return result

    def _record_runtime(self, device: torch.device, compiled_step: bool = True) -> None:
        self.runtime = runtime_record(
            device,
            self.compile_requested,
            self.compiled,
            # this run's graphs, not earlier ones in the process; None when no compiled step ran
            compiled_graphs() - self.graphs_before if compiled_step else None,
            self.optimizer,
            workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory,
            chunking=chunking_record(self.own_loss),
            frozen=frozen_placements(self.own_loss),
            batch_sampler=getattr(self.args.batch_sampler, "__name__", str(self.args.batch_sampler)),
        )
        # the trainer's own settings the config passed, as the trainer holds them
        given = {key: getattr(self.args, key) for key in self.trainer_args_given}
        self.runtime["trainer_args"] = json.loads(json.dumps(given, default=str))  # an enum as its value
        self.runtime["prompts"] = dict(getattr(self.data_collator, "prompts", None) or {})  # as the batches get them
        if self.is_world_process_zero():
            say(runtime_summary(self.runtime))
            if self.runtime_file is not None:
                write_json(self.runtime_file, self.runtime)

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        if self.eval_dataset is None:
            logs = {
                k: v
                for k, v in logs.items()
                if not (k.startswith("eval_") and k.endswith(("_samples_per_second", "_steps_per_second")))
            }
        super().log(logs, *args, **kwargs)

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        method: Method | None = getattr(self, "sentlab_method", None)
        if self.lr_scheduler is None and method is not None and method.lr_multiplier(0) is not None:
            from torch.optim.lr_scheduler import LambdaLR

            self.lr_scheduler = LambdaLR(optimizer or self.optimizer, method.lr_multiplier)
            self._created_lr_scheduler = True
            return self.lr_scheduler
        return super().create_scheduler(num_training_steps, optimizer)


@contextmanager
def quiet_widget_examples():
    """sentence-transformers' model card picks example sentences when the trainer is built, under a
    progress bar of its own ("Computing widget examples") that says nothing about training; the
    examples are still picked, without the bar."""
    from functools import partial

    import sentence_transformers.base.model_card as model_card

    original = model_card.tqdm
    model_card.tqdm = partial(original, disable=True)
    try:
        yield
    finally:
        model_card.tqdm = original


def build_trainer(
    cfg: TrainConfig, paths: RunPaths, model: SentenceTransformer | None = None, method: Method | None = None
) -> SentenceTransformerTrainer:
    """The trainer for ``cfg``; the method (built from the config unless given) supplies data, frozen
    inputs, model, loss and parameter groups, and stays reachable as ``trainer.sentlab_method``."""
    method = method or get_method(cfg.method)(cfg, paths)
    say(f"reading the training data ({cfg.data.train or ', '.join(cfg.data.sets)})")
    train_dataset = method.train_dataset()
    parts = dict(train_dataset) if isinstance(train_dataset, DatasetDict) else {"": train_dataset}
    rows = sum(len(part) for part in parts.values())
    for name, part in parts.items():  # a batch is drawn from one set: each needs a batch of rows
        check_enough_rows(cfg, method, len(part), name)
        say(f"{len(part):,} training rows" + (f" in {name}" if name else "") + f" ({', '.join(part.column_names)})")
    evaluator = build_dev_evaluator(cfg)
    metric = dev_metric(evaluator) or method.own_dev_metric()
    accumulated = cfg.train.trainer_args.get("gradient_accumulation_steps", 1)
    if accumulated > 1 and method.in_batch_negatives:
        raise ConfigError(
            f"train.trainer_args.gradient_accumulation_steps: {cfg.method} scores each row against the rows of its "
            f"batch, and {accumulated} accumulated batches of {cfg.train.batch_size} are not a batch of "
            f"{accumulated * cfg.train.batch_size} (each sees its own negatives only); for a larger batch set "
            "train.batch_size with train.mini_batch_size (Gradient Cache), which gives the whole batch's loss"
        )
    args = training_arguments(
        cfg,
        paths,
        has_dev=metric is not None,
        learning_rate_mapping=method.learning_rate_mapping(),
        method_arguments={**method.training_arguments(), **no_duplicates(cfg, method)},
        metric=metric,
    )
    with args.main_process_first(desc="frozen inputs"):  # the other processes then reuse the saved files
        method.random_init_folder()
        method.prepare(train_dataset)
    set_seed(cfg.train.seed)  # before the model: a training head's initialisation depends on it
    if model is None:
        say(f"loading the model ({cfg.model.label}) and building {method.name}")
        model = method.build_model()
    describe_run(model, cfg, rows)
    # packing tokenises the whole text once, into a cached table beside it: the main process builds
    # it, the others then read it instead of tokenising too and racing to write the same file
    with args.main_process_first(desc="batching"):
        train_dataset, collator = method.batching(train_dataset, model)
    # text columns only: packed blocks are cut from the stream, never truncated
    prompts = method.training_prompts(train_dataset, model)
    by_set = isinstance(train_dataset, DatasetDict) and any(isinstance(p, dict) for p in prompts.values())
    for name, part in parts.items():
        report_truncation(model, part, cfg.model.max_seq_length, prompts.get(name, {}) if by_set else prompts)
    # one prompt for all: the columns of a set of anchors, whose prompts the saved model keeps, where there is one
    anchored = [p.column_names for p in parts.values() if "anchor" in p.column_names]
    columns = anchored[0] if anchored else next(iter(parts.values())).column_names
    kept, columns = saved_prompts(prompts, parts) if by_set else (prompts, columns)
    keep_training_prompts(model, kept, columns)  # the dev card encodes queries and documents as training does
    args.prompts = prompts or None  # the trainer's own setting: its model card and multi-dataset batches read it
    if collator is None:
        collator = SentenceTransformerDataCollator(
            preprocess_fn=model.preprocess, max_length=cfg.model.max_seq_length, prompts=prompts or None
        )
    else:  # the method regrouped the rows (MLM's packed blocks): a batch of them must still exist
        if prompts:
            raise ConfigError(f"data.prompts: {cfg.method} batches its rows its own way, without prompts")
        check_enough_rows(cfg, method, len(train_dataset))
    loss = method.training_loss(model)
    evaluator = method.dev_evaluator(evaluator, innermost(loss))  # RSE's scorer reads its relation vectors
    with quiet_widget_examples():
        trainer = SentlabTrainer(
            model=model,
            args=args,
            train_dataset=train_dataset,
            loss=dict(loss) if isinstance(loss, SetLosses) else loss,  # the trainer's own loss per set
            evaluator=evaluator,
            data_collator=collator,
            callbacks=[
                LossComponentsLog(loss),
                StepTime(),
                MetricsLog(paths.metrics),
                StopOnNonFiniteLoss(),  # NaN logged, then stop
                LossStateCheckpoint(loss, model),
            ],
        )
    if cfg.train.max_minutes is not None:
        trainer.add_callback(WallClockBudget(cfg.train.max_minutes))
    for callback in early_stopping(cfg, metric is not None):
        trainer.add_callback(callback)
    trainer.add_callback(MarkCheckpointComplete(cfg.train.save_total_limit))  # last: after every file is written
    handler = trainer.callback_handler
    # the loss's components and the step time join a log record before any integration sends it
    first = [c for c in handler.callbacks if isinstance(c, (LossComponentsLog, StepTime))]
    handler.callbacks = first + [c for c in handler.callbacks if c not in first]
    for callback in handler.callbacks:
        if type(callback).__name__ == "TensorBoardCallback":
            callback.logging_dir = str(paths.root / "tensorboard")
    if not bars():  # quiet: transformers prints every log record when its progress bar is off
        trainer.remove_callback(PrinterCallback)
    trainer.sentlab_method = method
    trainer.sentlab_loss = loss
    trainer.sentlab_rows = rows  # the training rows as read (a method may regroup them: MLM's packed blocks)
    trainer.sentlab_prompts = (kept, columns)  # the saved model keeps them (keep_training_prompts)
    trainer.sentlab_precision = resolve_precision(cfg.train.mixed_precision, training_device_type())
    trainer.precision_file = paths.precision
    trainer.runtime_file = paths.runtime
    trainer.compile_requested = cfg.train.compile
    trainer.trainer_args_given = tuple(cfg.train.trainer_args)
    return trainer


def train(cfg: TrainConfig, resume: bool = False, evaluate: bool = True, allow_changed: bool = False) -> RunPaths:
    """Train as ``cfg`` says; with ``resume``, continue from the newest complete checkpoint of the run
    folder (:mod:`sentlab.training.checkpoints`: newer, incomplete ones are reported and removed).

    A resumed run must be given the settings it started with (:func:`changed_settings`: everything
    but where it writes and how it reports); with ``allow_changed`` it continues under the new ones
    (e.g. a shorter learning-rate schedule), keeps the old config as ``config.until-step-N.yaml`` and
    logs the change, so the run folder says how it was trained.

    A run that fails before its first checkpoint leaves no run folder behind (unless it existed),
    except a diverged one (:class:`TrainingDivergedError`): its loss log up to the NaN stays; a fresh
    run in that folder starts over (no checkpoint to resume)."""
    paths = RunPaths(Path(cfg.train.output_dir))
    cfg.require_data()  # before anything is written: a missing file names its data set and how to get it
    _pin_numeric_mode(cfg)
    if resume and not checkpoint_folders(paths.checkpoints):
        raise ConfigError(f"{paths.checkpoints}: --resume given but the run has no checkpoint yet")
    if not resume and checkpoint_folders(paths.checkpoints):
        raise ConfigError(
            f"{paths.root}: run folder already has checkpoints; pass --resume or choose another train.output_dir"
        )
    changes = changes_since_start(cfg, paths) if resume else []
    if changes and not allow_changed:
        raise ConfigError(
            f"{paths.root}: --resume with settings the run did not start with ({'; '.join(changes)}); "
            f"give the run's own settings, or pass --allow-changed-settings to continue under these"
        )
    created = not paths.root.exists()
    paths.root.mkdir(parents=True, exist_ok=True)
    with run_log(paths.log):
        checkpoint = resume_point(paths) if resume else None
        if changes:
            step = Path(checkpoint).name.split("-")[-1] if checkpoint else "0"
            kept = paths.root / f"config.until-step-{step}.yaml"
            shutil.copyfile(paths.config, kept)
            say(f"settings changed at step {step} ({'; '.join(changes)}); the config before is kept as {kept.name}")
        write_text_atomic(paths.config, cfg.to_yaml())
        return _train(cfg, paths, checkpoint, created, evaluate)


def changes_since_start(cfg: TrainConfig, paths: RunPaths) -> list[str]:
    """The learned settings of ``cfg`` that differ from the run folder's ``config.yaml`` (read with
    today's defaults for settings it does not name)."""
    import yaml

    if not paths.config.is_file():
        return []
    try:
        recorded = yaml.safe_load(paths.config.read_text("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{paths.config}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(recorded, dict):
        return [f"{paths.config.name}: empty or not a config, the run's own settings are unknown"]
    try:  # settings added to sentlab since the run started take their defaults, as they did then
        recorded = validate_config(recorded).model_dump()
    except ValueError:
        pass
    return changed_settings(recorded, cfg.model_dump())


def _train(cfg: TrainConfig, paths: RunPaths, checkpoint: str | None, created: bool, evaluate: bool) -> RunPaths:
    started = time.time() - 1  # files of this run are written after it (1 s: file systems' coarse mtimes)
    say(f"training {cfg.method} into {paths.root}" + (f" from {Path(checkpoint).name}" if checkpoint else ""))
    try:
        method = get_method(cfg.method)(cfg, paths)
        method.resume_from = checkpoint  # what the checkpoint restores, the method need not prepare
        trainer = build_trainer(cfg, paths, method=method)
        every = trainer.args.save_steps
        say(
            f"a checkpoint every {every} steps: a crash loses at most the {every} steps since the last one, "
            "and --resume continues from it"
            + (f"; reporting to {', '.join(cfg.train.report_to)}" if cfg.train.report_to else "")
        )
        start = (
            StartCandidate(trainer, paths)
            if trainer.args.load_best_model_at_end and cfg.train.start_is_candidate
            else None
        )
        if checkpoint is not None:
            load_loss_state(trainer.own_loss, trainer.model, Path(checkpoint))
        with (
            networks_compiled(trainer.own_loss, cfg.train.compile) as trainer.compiled,
            networks_in_half_precision(trainer.own_loss, trainer.sentlab_precision),
        ):
            trainer.graphs_before = compiled_graphs()
            if trainer.compiled:
                say(f"train.compile: compiling {', '.join(trainer.compiled)} (the first steps take longer)")
            trainer.train(resume_from_checkpoint=checkpoint)
            if trainer.runtime is None and trainer.precision_record is not None:  # a compiled run of one step
                trainer._record_runtime(training_device(), compiled_step=False)
        best = trainer.state.best_model_checkpoint
        if trainer.args.load_best_model_at_end and best and Path(best).is_dir():
            load_loss_state(trainer.own_loss, trainer.model, Path(best))  # the trainer restores only the model
        kept = start.keep_if_best() if start is not None else None
        if kept is None and trainer.args.load_best_model_at_end and best:
            kept = int(Path(best).name.split("-")[1])  # the trainer's best checkpoint, reloaded
    except TrainingDivergedError:
        raise  # the run folder stays: its loss log up to the NaN is the evidence to diagnose it
    except BaseException:
        if created and not checkpoint_folders(paths.checkpoints):
            shutil.rmtree(paths.root, ignore_errors=True)
        raise
    if trainer.is_world_process_zero():
        method: Method = trainer.sentlab_method
        normalize_like = cfg.model.name if method.keeps_start_normalize else None  # None: no Normalize appended
        static = is_static(trainer.model)
        if static:  # whole texts, in training as after it: no length to keep
            length = None
            final = keep_start_settings(method.final_model(trainer.model), normalize_like, None)
            say("saved model: static, it reads whole texts (no max_seq_length)")
        else:
            length = method.inference_length()
            final = keep_start_settings(method.final_model(trainer.model), normalize_like, length)
            own = "model.inference_max_seq_length" if cfg.model.inference_max_seq_length else "the start model's own"
            length = final.max_seq_length  # read back from the model that is saved and evaluated
            say(f"saved model's max_seq_length: {length} ({own}; training truncated at {cfg.model.max_seq_length})")
        keep_card_data(final, trainer.model)
        kept_prompts = keep_training_prompts(final, *trainer.sentlab_prompts)
        if any(kept_prompts.values()):
            say("the saved model's prompts: " + ", ".join(f"{name} {text!r}" for name, text in kept_prompts.items()))
        describe_kept(final, kept, trainer.state.log_history)  # the card describes the weights saved
        method.save(final)
        trained = trainer.own_loss  # what ran, read back: MatryoshkaLoss holds its dimensions and weights
        if isinstance(trained, SetLosses):  # every set's loss takes the same dimensions (SupervisedConfig)
            trained = next(iter(trained.values()))
        if hasattr(trained, "matryoshka_dims") and kept != 0:  # kept 0: the start model, never trained so
            save_dims(paths.model, list(trained.matryoshka_dims), list(trained.matryoshka_weights))
        fingerprint = run_fingerprint(cfg)
        write_json(paths.fingerprint, fingerprint)
        say(f"model saved to {paths.model}")
        plot_loss(paths.metrics, paths.loss_plot, trainer.args.metric_for_best_model or DEV_METRIC)
        if evaluate and "sts" in cfg.eval.final_tasks:
            say("final evaluation (STS)")
            training_precision = trainer.precision_record or (
                json.loads(paths.precision.read_text("utf-8")) if paths.precision.is_file() else None
            )
            training_runtime = trainer.runtime or (
                json.loads(paths.runtime.read_text("utf-8")) if paths.runtime.is_file() else None
            )
            for results_path, report in method.evaluate(final).items():
                report.settings["training_precision"] = training_precision
                report.settings["training_runtime"] = training_runtime
                report.settings["evaluation_precision"] = "fp32"
                report.settings["max_seq_length"] = (
                    None  # a static model reads whole texts
                    if static
                    else {"training": cfg.model.max_seq_length, "saved_and_evaluated": final.max_seq_length}
                )
                report.write(results_path)
                say(f"results written to {results_path}")
            if cfg.eval.compare_start:
                evaluate_start_model(cfg, paths, method, final.device, length)
        precision = trainer.precision_record or {}
        card = {
            "version": sentlab_version(),
            "rows": trainer.sentlab_rows,
            "sha256": fingerprint["train_sha256"],
            "steps": trainer.state.global_step,
            "precision": precision.get("ran"),
            "command": f"sentlab train {CONFIG_FILE}",
        }
        write_sentlab_section(cfg, paths.root, paths.model, card, since=started)
        say(f"model card: {paths.model / 'README.md'} (sentence-transformers' card with a sentlab section)")
    return paths


def evaluate_start_model(cfg: TrainConfig, paths: RunPaths, method: Method, device, length: int | None) -> None:
    """The start model's STS results (cosine), so the run says whether training helped
    (``RUN/start_results.json``): the method's :meth:`~Method.start_encoder` (its pooler and layers)
    at the length the trained model is evaluated at. Its embeddings go through the on-disk cache, so a second run from
    the same start model encodes nothing again."""
    from sentlab.cache import EmbeddingStore
    from sentlab.evaluation import CosineScorer, evaluate_sts
    from sentlab.evaluation.scoring import EmbeddingCache

    say(f"final evaluation of the start model {cfg.model.label} (STS), for comparison")
    start = method.start_encoder().to(device).eval()
    if length is not None:  # None: a static model, which reads whole texts
        start.max_seq_length = length
    cache = EmbeddingCache(start, store=EmbeddingStore.default())
    report = evaluate_sts(CosineScorer(cache, name=f"start model ({cfg.model.label})"), cfg.data.data_dir)
    report.settings["evaluation_precision"] = "fp32"
    report.write(paths.start_results)


class StartCandidate:
    """The start model as a candidate of checkpoint selection (``train.start_is_candidate``): scored on
    the dev task before the first step (``RUN/start_dev.json``; a resumed run reads it back), its
    weights kept in CPU memory, and restored at the end when it scored higher than every checkpoint (a
    tie keeps the checkpoint, as the trainer keeps the first of equal ones). ``RUN/selection.json``
    records the outcome; without a checkpoint kept, the start model's loss state (a decoder, relation
    vectors) is restored too."""

    def __init__(self, trainer: SentenceTransformerTrainer, paths: RunPaths):
        self.trainer, self.paths = trainer, paths
        self.metric = trainer.args.metric_for_best_model
        self.model_state = {k: v.detach().to("cpu", copy=True) for k, v in trainer.model.state_dict().items()}
        # the loss's own state (RSE's relation vectors), copied: on a CPU the detached tensors share memory
        self.loss_state = {k: v.clone() for k, v in loss_only_state(trainer.own_loss, trainer.model).items()}
        recorded = json.loads(paths.start_dev.read_text("utf-8")) if paths.start_dev.is_file() else {}
        if recorded.get("metric") != self.metric:
            say(f"scoring the start model on the dev task ({self.metric})")
            recorded = {"metric": self.metric, "value": float(trainer.evaluate()[self.metric])}
            write_json(paths.start_dev, recorded)
        self.value = recorded["value"]

    def keep_if_best(self) -> int:
        """Restore the start weights if they scored higher than the best checkpoint; the kept step."""
        state = self.trainer.state
        best = state.best_metric
        kept = int(Path(state.best_model_checkpoint).name.split("-")[1]) if state.best_model_checkpoint else None
        if best is None or self.value > best:
            self.trainer.model.load_state_dict(self.model_state)
            restore_loss_state(self.trainer.own_loss, self.loss_state)
            say(
                f"the start model scores {self.value:.4g} on {self.metric}, higher than every checkpoint "
                f"(best {best if best is not None else 'none'}): kept step 0, the start model"
            )
            kept = 0
        write_json(
            self.paths.selection,
            {"metric": self.metric, "start": self.value, "best_checkpoint": best, "kept_step": kept},
        )
        return kept


def resume_point(paths: RunPaths) -> str | None:
    """The checkpoint ``--resume`` continues from: the newest complete one. Newer ones that are not
    complete (a kill while saving, a damaged file) are named with the reason and removed; with no
    complete checkpoint left, training starts again from step 0."""
    checkpoint, skipped = newest_complete_checkpoint(paths.checkpoints)
    for folder, problem in skipped:
        say(f"skipping {folder.name}: {problem}; removed")
        shutil.rmtree(folder, ignore_errors=True)
    if checkpoint is None:
        say(f"{paths.checkpoints}: no complete checkpoint; training again from step 0")
        return None
    say(f"resuming from {checkpoint.name}")
    return str(checkpoint)


def check_enough_rows(cfg: TrainConfig, method: Method, rows: int, name: str = "") -> None:
    """A batch needs ``train.batch_size`` rows, and a method learning from in-batch negatives at least
    two a batch: fewer is an error, never a run that trains on nothing (SimCSE's loss is 0 for a batch
    of one sentence); ``name``: the training set of ``data.sets`` the rows are."""
    batch = cfg.train.batch_size
    if batch < method.min_batch_size:
        raise ConfigError(
            f"train.batch_size={batch}: {method.name} needs at least {method.min_batch_size} rows a batch "
            "(the other rows of the batch are its negatives)"
        )
    if rows < batch:
        source = f"data.sets.{name} ({cfg.data.sets[name].train})" if name else cfg.data.train
        raise DataError(
            f"{source}: {rows:,} usable training row(s), fewer than one batch "
            f"(train.batch_size={batch}); add text or lower train.batch_size"
        )


TRUNCATION_SAMPLE = 100_000  # distinct texts report_truncation tokenises at most


def _distinct_stored_texts(dataset, columns: list[str], cap: int) -> tuple[list[str], bool]:
    """The first ``cap`` distinct non-empty texts of ``columns`` as stored (read 10,000 at a time, so
    a memory-mapped text of any size is not read whole), and whether the cap cut them short."""
    seen: dict[str, None] = {}
    for column in columns:
        for chunk in dataset.data.column(column).chunks:
            for start in range(0, len(chunk), 10_000):
                seen.update(dict.fromkeys(t for t in chunk.slice(start, 10_000).to_pylist() if t))
                if len(seen) >= cap:
                    return list(seen)[:cap], True
    return list(seen), False


def saved_prompts(prompts: dict[str, dict[str, str]], parts: dict[str, Dataset]) -> tuple[dict | None, list[str]]:
    """The query and document prompts the saved model keeps when each training set has its own
    (``prompts`` by set name): those of the sets of anchors, where they agree, with those sets'
    columns; where they differ, none (the start model's own stay, said in one line)."""
    anchored = {name: p for name, p in prompts.items() if "anchor" in parts[name].column_names}
    pairs = {(p.get("anchor", ""), p.get("positive", "")) for p in anchored.values()}
    if len(pairs) <= 1 and anchored:
        name = next(iter(anchored))
        return anchored[name], parts[name].column_names
    if anchored:
        say(
            "data.sets: the sets' query and document prompts differ ("
            + "; ".join(f"{n}: {p}" for n, p in anchored.items())
            + "), so the saved model keeps the start model's own"
        )
    return None, []


def report_truncation(
    model: SentenceTransformer, dataset, max_seq_length: int, prompts: dict[str, str] | None = None
) -> int:
    """Count the training texts longer than ``max_seq_length`` tokens (they are truncated to it) and
    say so in the run's log; returns the count. A column's prompt (``data.prompts``, the start model's
    own) is counted with its texts, as the collator tokenises it before them."""
    tokenizer = getattr(model[0], "tokenizer", None)
    columns = [c for c, f in dataset.features.items() if getattr(f, "dtype", None) in ("string", "large_string")]
    if tokenizer is None or not callable(tokenizer) or not columns:  # a static model reads whole texts
        return 0
    by_prompt: dict[str, list[str]] = {}
    for column in columns:
        by_prompt.setdefault((prompts or {}).get(column, ""), []).append(column)
    longest, truncated, counted, sampled = 0, 0, 0, False
    for prompt, group in by_prompt.items():
        # the stored columns, before any on-the-fly transform (RSE draws its negatives in one)
        texts, cut = _distinct_stored_texts(dataset, group, TRUNCATION_SAMPLE)
        sampled, counted = sampled or cut, counted + len(texts)
        for start in range(0, len(texts), 10_000):
            encoded = tokenizer(
                [prompt + text for text in texts[start : start + 10_000]],
                add_special_tokens=True,
                truncation=False,
                verbose=False,
                return_attention_mask=False,
                return_token_type_ids=False,
            )["input_ids"]
            lengths = [len(ids) for ids in encoded]
            longest = max(longest, *lengths)
            truncated += sum(length > max_seq_length for length in lengths)
    if truncated:
        with_prompts = " with their prompts" if any(by_prompt) else ""
        say(
            f"notice: {truncated:,} of {'the first ' if sampled else ''}{counted:,} distinct training texts"
            f"{with_prompts} are longer than model.max_seq_length="
            f"{max_seq_length} tokens (the longest: {longest:,}) and are truncated to it"
        )
    return truncated


def _pin_numeric_mode(cfg: TrainConfig) -> None:
    """fp32 is IEEE float32 on every device unless ``train.tf32`` (an NVIDIA GPU's TF32) is asked for;
    a ``train.mixed_precision`` the device cannot run is refused here, before anything is read or written."""
    from sentlab.encoders.backends import pin_float32_math

    if cfg.train.tf32 and not _has_cuda():
        raise ConfigError("train.tf32: TF32 needs an NVIDIA GPU (Ampere or newer); set train.tf32: false")
    resolve_precision(cfg.train.mixed_precision, training_device_type())
    attention = cfg.model.model_kwargs.get("attn_implementation", "")
    if attention.startswith("flash_attention_"):  # transformers' own check raises an ImportError at load time
        import transformers.utils

        available = getattr(transformers.utils, f"is_flash_attn_{attention[-1]}_available", lambda: False)
        if not available():
            raise ConfigError(
                f"model.model_kwargs.attn_implementation: {attention} needs its flash-attn package and a CUDA GPU, "
                "not found here; install it, or use sdpa (the default) or eager"
            )
    if cfg.train.compile:
        check_compile(training_device_type())
    pin_float32_math(allow_tf32=cfg.train.tf32)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def plot_loss(metrics_path: Path, out_path: Path, metric: str = DEV_METRIC) -> None:
    """Training loss (and the dev score ``metric``, if logged) against the step, as a PNG; where
    matplotlib is not installed (an offline node's image without it: sentlab's GPU check installs
    without dependencies), said in one line and skipped: the metrics file holds the same numbers."""
    try:
        import matplotlib
    except ImportError:
        say(f"loss plot skipped: matplotlib is not installed (the losses are in {metrics_path})")
        return

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
    dev = [(r["step"], r[metric]) for r in records if metric in r]
    if dev:
        label = "STS-B dev Spearman" if metric == DEV_METRIC else metric.removeprefix("eval_")
        ax2 = ax.twinx()
        ax2.plot([s for s, _ in dev], [v * 100 for _, v in dev], "o-", color="tab:orange", label=label)
        ax2.set_ylabel(f"{label} x 100")
    ax.set_title("sentlab training")
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
