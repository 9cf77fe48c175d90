"""Training configs: a typed schema, YAML loading, ``--set key=value`` overrides, one-line errors.

A config names its ``method`` and has the shared sections (model, data, loss, train, eval) plus the
method's own section, declared by the method (``sentlab.methods``); unknown keys are errors (so a
typo never silently falls back to a default). The packaged presets (``sentlab presets``,
:mod:`sentlab.presets`) have the papers' settings; their data paths start with ``$SENTLAB_DATA/``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from sentlab.encoders.adapters import adapter_on_adapter
from sentlab.encoders.loading import DEFAULT_PROMPT_TEMPLATE, START_KIND_LACKS, start_kind, start_kind_refusal
from sentlab.encoders.random_init import RandomInit
from sentlab.errors import ConfigError, DataError
from sentlab.paths import data_dir, expand_data_paths


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AdapterSection(_Section):
    kind: Literal["lora"] = Field("lora", description="LoRA (Hu et al. 2021) through peft")
    rank: int = Field(8, gt=0, description="r, the rank of each update")
    alpha: float = Field(16.0, gt=0, description="the update is scaled by alpha / r")
    dropout: float = Field(0.0, ge=0, lt=1, description="dropout on the adapter's input")
    target_modules: list[str] | None = Field(
        None,
        description="the encoder's linear layers to adapt, by name (e.g. [query, value]); default: peft's for the "
        "architecture, else its attention's query and value projections (MPNet: [q, v])",
    )


# the from_pretrained arguments model.model_kwargs passes through, and their values (auto: float32 weights
# whatever the checkpoint holds; half-precision weights are train.mixed_precision's, which keeps float32 ones)
MODEL_KWARGS = {"dtype": ("float32", "auto"), "attn_implementation": None}
HALF_DTYPES = {"bfloat16": "bf16", "float16": "fp16"}


class ModelSection(_Section):
    name: str = Field(
        "",
        description="backbone or sentence-transformers model: alias, local folder, or hub name (not with random_init)",
    )
    random_init: RandomInit | None = Field(
        None,
        description="start from a randomly initialised BERT of this "
        "architecture and vocabulary instead of model.name "
        "(sentlab.encoders.random_init)",
    )
    pooler: Literal["cls", "cls_before_pooler", "mean", "max", "first_last_avg", "prompt", "lasttoken"] | None = None
    model_kwargs: dict[str, str] = Field(
        default_factory=dict,
        description="passed to the backbone's from_pretrained: dtype (the dtype the checkpoint is read in: float32, or "
        "auto, the checkpoint's own; either trains float32 weights: half precision is train.mixed_precision's) and "
        "attn_implementation (eager, sdpa, flash_attention_2 ..., which transformers checks); another key is "
        "refused, since transformers would keep an unknown one in the model's config and change nothing; not with "
        "the prompt pooler",
    )
    trust_remote_code: bool = Field(
        False,
        description="run the Python code a model's config names (config.json auto_map: its own modelling code) for "
        "every model the run loads (start, teacher, guide); off, such a model is refused in one line; recorded on "
        "the card",
    )

    @field_validator("model_kwargs")
    @classmethod
    def _model_kwargs(cls, value: dict[str, str]) -> dict[str, str]:
        for key, given in value.items():
            if key == "dtype" and given in HALF_DTYPES:
                raise ValueError(
                    f"dtype: {given} would train {given} weights with no float32 copy, while the run records "
                    f"fp32; set train.mixed_precision: {HALF_DTYPES[given]} (float32 weights, {given} arithmetic, "
                    "read back into precision.json)"
                )
            if key not in MODEL_KWARGS:
                raise ValueError(f"{key}: not one of {', '.join(MODEL_KWARGS)} (the keys sentlab passes through)")
            if MODEL_KWARGS[key] is not None and given not in MODEL_KWARGS[key]:
                raise ValueError(f"{key}: {given!r} is not one of {', '.join(MODEL_KWARGS[key])}")
        return value

    @model_validator(mode="after")
    def _kwargs_reach_the_backbone(self) -> ModelSection:
        if self.model_kwargs and self.pooler == "prompt":
            raise ValueError("model_kwargs: the prompt pooler builds its backbone without them; remove them")
        if self.trust_remote_code and self.pooler == "prompt":
            raise ValueError("trust_remote_code: the prompt pooler builds a BERT-style backbone of its own; remove it")
        return self

    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    max_seq_length: int = Field(
        32,
        gt=0,
        description="the training length: longer texts are truncated to it in training (supervised, unset: the "
        "start model's own)",
    )
    inference_max_seq_length: int | None = Field(
        None,
        gt=0,
        description="the saved model's max_seq_length, at which the final evaluation encodes (default: the "
        "start model's own, e.g. 256 for all-MiniLM-L6-v2, 512 for a BERT backbone)",
    )
    num_layers: int | None = Field(
        None, gt=0, description="keep only the first N transformer layers (a smaller student, e.g. for distillation)"
    )
    dropout: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="the backbone's hidden and attention dropout while "
        "training and in the saved model (default: the start model's own; a raw LM "
        "pre-trained without dropout needs SimCSE's 0.1 back)",
    )
    adapter: AdapterSection | None = Field(
        None,
        description="train a LoRA adapter instead of the encoder's weights (the peft extra); "
        "the saved model holds the adapter (sentlab merge-adapter folds it into full weights)",
    )
    mlp_only_train: bool | None = Field(
        None,
        description="with pooler cls: SimCSE's MLP (Linear + tanh) in "
        "training only (true), or kept at inference as a sentence-transformers "
        "Dense module (false); default: the method's (see sentlab.methods)",
    )

    @model_validator(mode="after")
    def _one_start(self) -> ModelSection:
        if bool(self.name) == (self.random_init is not None):
            raise ValueError(
                "give model.name (a model to start from) or model.random_init (random weights), one of the two"
            )
        if self.adapter is not None:  # the saved adapter loads over the start model's own configuration
            changed = [
                key
                for key, value in (
                    ("model.random_init", self.random_init),
                    ("model.num_layers", self.num_layers),
                    ("model.dropout", self.dropout),
                    ("model.pooler: first_last_avg", self.pooler == "first_last_avg" or None),
                )
                if value is not None
            ]
            if changed:
                raise ValueError(
                    f"model.adapter: not with {changed[0]}: the saved adapter loads over the start model as it is, "
                    "without that change"
                )
            if self.name and Path(self.name, "adapter_config.json").is_file():
                raise ValueError(adapter_on_adapter(self.name))
        return self

    @property
    def label(self) -> str:
        """How progress lines name the start model."""
        init = self.random_init
        return self.name or (
            f"random BERT {init.layers}x{init.hidden_size}, vocabulary {init.tokenizer}" if init else ""
        )


# the training tables' column names, which a training set's name must not be (a prompt keyed by either)
COLUMN_NAMES = frozenset(
    {"anchor", "positive", "sentence", "sentence1", "sentence2", "text", "text1", "text2", "label", "score"}
)


# a training set's own loss keys (data.sets.NAME.KEY): each in place of supervised.KEY for that set
SET_LOSS_KEYS = ("loss", "loss_args", "teacher", "score_range", "format")


class TrainingSet(_Section):
    """One named training set of ``data.sets``: the keys of ``data`` that say what to read, and,
    optionally, its own loss (``loss``, ``loss_args``, ``teacher``, ``score_range``, ``format``: each in
    place of ``supervised``'s key for this set; a set that names a ``loss`` takes none of
    ``supervised``'s loss keys) and its own training ``prompts``."""

    train: str = Field(
        description="as data.train: a file, a datasets folder, an .arrow or .parquet file or hf:OWNER/NAME"
    )
    columns: list[str] | dict[str, str] = Field(default_factory=list, description="as data.columns")
    limit: int | None = Field(None, gt=0, description="as data.limit")
    split: str | None = Field(None, description="as data.split")
    subset: str | None = Field(None, description="as data.subset")
    loss: str | None = Field(
        None,
        description="this set's loss, as supervised.loss (unset: supervised.loss with its loss_args, teacher, "
        "score_range and format); a set that names one takes only its own loss_args, teacher, score_range, format",
    )
    loss_args: dict[str, Any] | None = Field(None, description="as supervised.loss_args, for this set's loss")
    teacher: str | None = Field(None, description="as supervised.teacher, for this set's loss")
    score_range: tuple[FiniteFloat, FiniteFloat] | None = Field(
        None, description="as supervised.score_range, for this set's scores"
    )
    format: Literal["table", "snli", "stsb"] | None = Field(None, description="as supervised.format, for this set")
    prompts: str | dict[str, str] | None = Field(
        None, description="as data.prompts, for this set's columns (unset: data.prompts)"
    )

    def own_loss_keys(self) -> dict[str, Any]:
        """The loss keys this set gives (:data:`SET_LOSS_KEYS`), by name."""
        return {key: getattr(self, key) for key in SET_LOSS_KEYS if getattr(self, key) is not None}


class DataSection(_Section):
    train: str = Field(
        "",
        description="training data: a file (.txt: one sentence a line; .jsonl/.csv/.tsv: columns), a folder "
        "datasets' save_to_disk wrote, an .arrow or .parquet file, or hf:OWNER/NAME (a hub dataset; offline from the cache "
        "with HF_HUB_OFFLINE); or data.sets",
    )
    sets: dict[str, TrainingSet] = Field(
        default_factory=dict,
        description="supervised: several named training sets instead of data.train, each {train, columns, limit, "
        "split, subset} and, optionally, its own loss keys and prompts; a batch is drawn from one set at a time "
        "(data.sampler)",
    )
    train_required: ClassVar[bool] = True  # False where a method names its data elsewhere (RSE's sources)
    sampler: Literal["proportional", "round_robin"] = Field(
        "proportional",
        description="with data.sets: sentence-transformers' multi-dataset batch sampler: proportional (each set's "
        "batches in proportion to its size, every row once an epoch) or round_robin (a batch of each in turn, "
        "until the smallest is spent)",
    )
    columns: list[str] | dict[str, str] = Field(
        default_factory=list,
        description="columns to read from a table file: their names in the method's order, or a mapping of "
        "role to name (supervised / simcse-sup: {anchor, positive, negative}, supervised: negative_1 ... negative_n, "
        "{text1, text2, score}, {text1, text2, label} or {text, label})",
    )
    limit: int | None = Field(None, gt=0, description="use only the first N rows (the rest of a text file is not read)")
    split: str | None = Field(
        None, description="the split of a datasets folder or hub dataset (unset: train); not read for a file"
    )
    subset: str | None = Field(None, description="the subset (config name) of an hf: dataset; not read otherwise")
    prompts: str | dict[str, str] | None = Field(
        None,
        description="supervised: the text put before a column's texts in training (sentence-transformers' "
        "training prompts): one text for every column, or a mapping of column (its role, e.g. anchor, or its "
        "name in the file) to text; unset: the start model's own query prompt before the anchor and its document "
        "prompt before the other text columns, where it has them; {} for none",
    )
    data_dir: str | None = Field(None, description="evaluation data folder (default: $SENTLAB_DATA or ../shared/data)")

    @model_validator(mode="after")
    def _split_of_a_source(self) -> DataSection:
        """``split`` / ``subset`` name a part of a datasets source; on a file they would do nothing. One
        of ``train`` and ``sets``; beside ``sets``, the keys each set has are refused."""
        from sentlab.data.datasets_source import HUB_PREFIX, is_datasets_source

        if self.sets:
            if self.train:
                raise ValueError("data.train and data.sets: give one (a set's file is its own train key)")
            given = [  # a key written with its default (a dumped config read back) changes nothing
                k
                for k in ("columns", "limit", "split", "subset")
                if getattr(self, k) != type(self).model_fields[k].get_default(call_default_factory=True)
            ]
            if given:
                raise ValueError(f"data.{given[0]}: with data.sets, each set has its own {given[0]}")
            for name, part in self.sets.items():
                if not name or not name.replace("-", "").replace("_", "").isalnum():
                    raise ValueError(f"data.sets: {name!r} is not a name of letters, digits, - and _")
                if name in COLUMN_NAMES or name.startswith("negative"):  # sentence-transformers would read
                    raise ValueError(f"data.sets: {name!r} is a column's name; call the set otherwise")  # it as one
                try:  # its own split / subset check
                    DataSection(train=part.train, split=part.split, subset=part.subset)
                except ValidationError as err:
                    message = err.errors()[0]["msg"].removeprefix("Value error, ")
                    raise ValueError(f"data.sets.{name}: {message}") from None
            return self
        if not self.train and self.train_required:
            raise ValueError("data.train: the training data is needed (a file, a datasets source), or data.sets")
        if self.subset is not None and not self.train.startswith(HUB_PREFIX):
            raise ValueError(f"data.subset: read for an hf: dataset only, not {self.train}")
        if self.split is not None and not is_datasets_source(self.train):
            raise ValueError(f"data.split: read for a datasets folder or an hf: dataset, not the file {self.train}")
        return self


DEFAULT_TEMPERATURE = 0.05  # SimCSE's tau (Sec. 3), a similarity scale of 20


class LossSection(_Section):
    name: Literal["simcse"] = "simcse"
    temperature: float = Field(
        DEFAULT_TEMPERATURE,
        gt=0,
        description="the contrastive temperature tau, the one key of every method and loss that has one (the "
        "scores are similarity / tau; a loss's scale is 1 / tau, 20 at 0.05): SimCSE, RankCSE, RankEncoder, RSE, "
        "CT in-batch (whose learnt scale starts at 1 / tau) and a supervised loss's scale (mnrl, cosent, angle ...); "
        "refused by a loss without a scale: GISTEmbed's and DistillKLDiv's own temperature is "
        "supervised.loss_args.temperature",
    )
    hard_negative_weight: float = 0.0


# the trainer's arguments sentlab sets from its own settings -> that setting (train.trainer_args refuses them)
TRAINER_KEYS_SENTLAB_SETS = {
    "output_dir": "train.output_dir",
    "per_device_train_batch_size": "train.batch_size",
    "learning_rate": "train.learning_rate",
    "learning_rate_mapping": "the method's parameter groups",
    "num_train_epochs": "train.epochs",
    "max_steps": "train.max_steps",
    "warmup_steps": "train.warmup_ratio",
    "warmup_ratio": "train.warmup_ratio",
    "weight_decay": "train.weight_decay",
    "eval_strategy": "eval.dev_task",
    "eval_steps": "train.eval_steps",
    "save_strategy": "train.save_steps",
    "save_steps": "train.save_steps",
    "save_total_limit": "its checkpoint rotation (a checkpoint is removed only once the next is complete)",
    "load_best_model_at_end": "train.keep_best",
    "metric_for_best_model": "eval.dev_task",
    "greater_is_better": "eval.dev_task",
    "logging_steps": "train.logging_steps",
    "logging_nan_inf_filter": "its loss log (every step's loss, NaN included)",
    "fp16": "train.mixed_precision",
    "bf16": "train.mixed_precision",
    "tf32": "train.tf32",
    "seed": "train.seed",
    "data_seed": "train.seed",
    "dataloader_num_workers": "train.dataloader_workers",
    "dataloader_pin_memory": "the device it trains on",
    "disable_tqdm": "train.progress_bar",
    "report_to": "train.report_to",
    "use_cpu": "the device it trains on (sentlab.devices)",
    "ddp_find_unused_parameters": "its DDP setting",
    "batch_sampler": "train.no_duplicates (and the method's own batching)",
    "optim": "train.fused_optimizer (and the method's optimizer)",
    "torch_compile": "train.compile",
    "per_device_eval_batch_size": "eval (sentlab's evaluators batch themselves)",
    "prompts": "data.prompts",
    "multi_dataset_batch_sampler": "data.sampler",
    "torch_compile_backend": "train.compile (its compile is read back into runtime.json)",
    "torch_compile_mode": "train.compile (its compile is read back into runtime.json)",
    "resume_from_checkpoint": "sentlab train --resume (the last complete checkpoint)",
    "auto_find_batch_size": "train.batch_size (and train.mini_batch_size: auto)",
    "logging_strategy": "train.logging_steps",
    "eval_on_start": "eval.dev_task (the start model is scored as a candidate: train.start_is_candidate)",
    "eval_delay": "eval.dev_task and train.eval_steps",
    "bf16_full_eval": "its evaluation, which runs in fp32 and records it",
    "fp16_full_eval": "its evaluation, which runs in fp32 and records it",
    "train_sampling_strategy": "train.no_duplicates (and the method's own batching)",
    "length_column_name": "train.no_duplicates (and the method's own batching)",
    "ddp_static_graph": "its DDP setting",
    "local_rank": "torchrun or accelerate launch",
    "do_train": "the command you run (sentlab train, sentlab eval)",
    "do_eval": "the command you run (sentlab train, sentlab eval)",
    "do_predict": "the command you run (sentlab train, sentlab eval)",
    **{
        key: "sentlab push (the model with its card, its config and its scores)"
        for key in (
            "push_to_hub",
            "hub_model_id",
            "hub_strategy",
            "hub_token",
            "hub_private_repo",
            "hub_always_push",
            "hub_revision",
        )
    },
}
# the trainer's arguments that would break one of sentlab's guarantees -> which (train.trainer_args refuses them)
TRAINER_KEYS_REFUSED = {
    "save_only_model": "--resume needs the optimizer, scheduler and RNG state in every checkpoint",
    "save_on_each_node": "one process writes each checkpoint, and marks it complete once every process has",
    "enable_jit_checkpoint": "a checkpoint counts once it is marked complete, which a checkpoint on a signal is not",
    "ignore_data_skip": "--resume continues at the row where the run stopped",
    "restore_callback_states_from_checkpoint": "--resume restores sentlab's own callbacks from the run folder",
    "deepspeed": "checkpoints, the loss's own state and precision are read back for DDP (torchrun / accelerate)",
    "fsdp": "checkpoints, the loss's own state and precision are read back for DDP (torchrun / accelerate)",
    "fsdp_config": "checkpoints, the loss's own state and precision are read back for DDP (torchrun / accelerate)",
    "parallelism_config": "checkpoints, the loss's own state and precision are read back for DDP (torchrun / accelerate)",
    "accelerator_config": "checkpoints, the loss's own state and precision are read back for DDP (torchrun / accelerate)",
    "use_liger_kernel": "it patches the model's modules, which the card and runtime.json would not say",
    "liger_kernel_config": "it patches the model's modules, which the card and runtime.json would not say",
    "neftune_noise_alpha": "it adds noise to a causal LM's embeddings, which no sentlab method trains",
    "label_smoothing_factor": "a sentence-transformers loss computes its own loss and never reads it",
    "remove_unused_columns": "the method's columns are the loss's inputs, kept by sentence-transformers",
    "label_names": "the method's columns are the loss's inputs, kept by sentence-transformers",
    "optim_target_modules": "train.fused_optimizer and the method choose the optimizer",
    "use_cache": "a sentence encoder has no generation cache",
}
# the trainer's arguments train.trainer_args passes through, checked against their type before any data is read
TRAINER_KEYS_PASSED = (
    "gradient_accumulation_steps",
    "gradient_checkpointing",
    "gradient_checkpointing_kwargs",
    "max_grad_norm",
    "lr_scheduler_type",
    "lr_scheduler_kwargs",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "optim_args",
    "full_determinism",
    "average_tokens_across_devices",
    "torch_empty_cache_steps",
    "dataloader_drop_last",
    "dataloader_persistent_workers",
    "dataloader_prefetch_factor",
    "dataloader_multiprocessing_context",
    "logging_first_step",
    "log_level",
    "log_level_replica",
    "log_on_each_node",
    "skip_memory_metrics",
    "include_num_input_tokens_seen",
    "run_name",
    "project",
    "ddp_backend",
    "ddp_timeout",
    "ddp_bucket_cap_mb",
    "ddp_broadcast_buffers",
)


def _check_trainer_value(key: str, given: Any, annotation: Any) -> None:
    """``given`` is of the trainer's field type (strictly: no "yes" for a bool, no "abc" for a float; an
    int for a float), and a name of one of its enumerations (``lr_scheduler_type``) is one of their values."""
    import enum
    import typing

    from pydantic import TypeAdapter

    try:
        TypeAdapter(annotation).validate_python(given, strict=True)
    except (ValidationError, TypeError) as err:
        expected = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
        detail = err.errors()[0]["msg"] if isinstance(err, ValidationError) else str(err)
        raise ValueError(f"{key}: {given!r} is not a {expected} ({detail})") from None
    for kind in typing.get_args(annotation) or (annotation,):
        if isinstance(kind, type) and issubclass(kind, enum.Enum) and isinstance(given, str):
            choices = [str(member.value) for member in kind]
            if given not in choices:
                raise ValueError(f"{key}: {given!r} is not one of {', '.join(choices)}")


class TrainSection(_Section):
    output_dir: str
    batch_size: int = Field(64, gt=0, description="per device")
    no_duplicates: bool = Field(
        False,
        description="no text twice in a batch (sentence-transformers' NoDuplicatesBatchSampler), for methods with "
        "in-batch negatives, where a repeated text is a false negative",
    )
    learning_rate: float = Field(3e-5, gt=0)
    epochs: float = Field(1.0, gt=0)
    max_steps: int = Field(-1, description="stop after this many steps, at least 1 (-1: run the epochs)")
    max_minutes: float | None = Field(
        None,
        gt=0,
        description="stop after this many minutes of training "
        "(checked after each step; minutes before a "
        "--resume count)",
    )
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    eval_steps: int = Field(125, gt=0, description="evaluate on the dev task every N steps")
    save_steps: int | None = Field(None, gt=0, description="checkpoint every N steps (default: eval_steps)")
    save_total_limit: int | None = Field(2, gt=0)
    keep_best: bool = Field(True, description="reload the checkpoint with the best dev score at the end")
    start_is_candidate: bool = Field(
        True,
        description="with keep_best: score the start model on the dev task "
        "before training and keep it (step 0) when no checkpoint "
        "beats it",
    )
    logging_steps: int = Field(10, gt=0)
    report_to: list[str] = Field(
        default_factory=list,
        description="where the trainer also sends each log record (loss, step time, the loss's components, dev "
        "scores): its integrations by name, e.g. [tensorboard] (event files in RUN/tensorboard; the tensorboard "
        "extra), [wandb], [mlflow]; refused in one line when one is not installed",
    )
    early_stopping_patience: int | None = Field(
        None,
        gt=0,
        description="stop after this many dev evaluations in a row without a better dev score (transformers' "
        "EarlyStoppingCallback; needs a dev task and keep_best)",
    )
    early_stopping_threshold: float = Field(
        0.0, ge=0, description="with early_stopping_patience: the least gain in the dev score that counts as better"
    )
    mixed_precision: Literal["no", "fp16", "bf16"] = Field(
        "no",
        description="no (fp32), fp16 (GPU, with loss scaling) or bf16 (GPU, or a CPU with AVX-512 BF16 / AMX); "
        "what ran is read back into RUN/precision.json (sentlab.precision)",
    )

    @field_validator("mixed_precision", mode="before")
    @classmethod
    def _yaml_no(cls, value: object) -> object:
        return "no" if value is False else value  # YAML 1.1 reads a bare `no` as false

    @field_validator("max_steps")
    @classmethod
    def _steps_or_epochs(cls, value: int) -> int:
        if value == -1 or value >= 1:
            return value
        raise ValueError(f"must be at least 1, or -1 to run train.epochs (got {value})")

    tf32: bool = Field(
        False,
        description="let float32 matmuls run as TF32 on Ampere or newer GPUs; off, "
        "fp32 is IEEE float32 on every device (CPUs included)",
    )
    seed: int = 42
    dataloader_workers: int = Field(
        0,
        ge=0,
        description="worker processes that tokenise batches (0: the training process); pinned memory is on for a GPU",
    )
    compile: bool = Field(
        False,
        description="torch.compile every network the loss runs, for the training steps (sentlab.training.runtime); "
        "refused where it cannot run; what ran is read back into RUN/runtime.json",
    )
    fused_optimizer: bool | Literal["auto"] = Field(
        "auto",
        description="AdamW as one fused kernel (auto: on CUDA and CPU, for methods that train with AdamW)",
    )
    mini_batch_size: int | Literal["auto"] | None = Field(
        None,
        description="Gradient Cache, for methods whose loss compares every row of a batch with every other: embed "
        "this many rows at a time, with the whole batch's loss and gradients; auto: the whole batch when its "
        "activations fit 80 % of the device's free memory less the optimizer's state, else a chunk of every row "
        "when one column of them (one text of every row, e.g. the anchors) fits, else the largest power of two of "
        "rows that does (sentlab.devices.chunk_that_fits); refused by methods whose loss takes each row alone",
    )

    trainer_args: dict[str, Any] = Field(
        default_factory=dict,
        description="further arguments of sentence-transformers' SentenceTransformerTrainingArguments, from an "
        "allow-list (TRAINER_KEYS_PASSED: gradient_checkpointing, lr_scheduler_type, max_grad_norm, "
        "gradient_accumulation_steps ...), each value checked against its type when the config is read and read "
        "back into RUN/runtime.json; a key sentlab sets from a setting of its own is refused naming that setting "
        "(torch_compile*: train.compile, resume_from_checkpoint: --resume, push_to_hub: sentlab push ...), one "
        "that breaks a guarantee naming why (save_only_model: resume would lose the optimizer's state ...); "
        "gradient_accumulation_steps is refused when training starts for a loss of in-batch negatives "
        "(accumulated batches share no negatives: train.mini_batch_size)",
    )

    @field_validator("trainer_args")
    @classmethod
    def _trainer_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Each key a field of the trainer's arguments, and none that sentlab sets itself."""
        import dataclasses
        import difflib

        from sentence_transformers.sentence_transformer.training_args import SentenceTransformerTrainingArguments

        fields = {f.name: f for f in dataclasses.fields(SentenceTransformerTrainingArguments) if f.init}
        for key, given in value.items():
            if key in TRAINER_KEYS_SENTLAB_SETS:
                raise ValueError(f"{key}: sentlab's own setting is {TRAINER_KEYS_SENTLAB_SETS[key]}; use that instead")
            if key in TRAINER_KEYS_REFUSED:
                raise ValueError(f"{key}: refused, since {TRAINER_KEYS_REFUSED[key]}")
            if key not in fields:
                close = difflib.get_close_matches(key, sorted(fields), n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise ValueError(f"{key}: not an argument of SentenceTransformerTrainingArguments{hint}")
            if key not in TRAINER_KEYS_PASSED:
                raise ValueError(
                    f"{key}: not one of the trainer's arguments sentlab passes through, checked and read back "
                    f"(sentlab.training.config.TRAINER_KEYS_PASSED: {', '.join(TRAINER_KEYS_PASSED)})"
                )
            _check_trainer_value(key, given, fields[key].type)
        steps = value.get("gradient_accumulation_steps", 1)
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise ValueError(f"gradient_accumulation_steps: a whole number of at least 1, not {steps!r}")
        return value

    @field_validator("mini_batch_size")
    @classmethod
    def _positive_chunk(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"must be at least 1, or auto (got {value})")
        return value

    matryoshka_dims: list[int] | None = Field(
        None,
        description="Matryoshka embeddings (Kusupati et al. 2022; sentence-transformers' MatryoshkaLoss): the loss "
        "is also taken on the first K dimensions, re-normalised, for each K here (e.g. [384, 256, 128, 64]); "
        "recorded in the saved model; refused by methods whose loss is not a function of the embeddings' directions",
    )
    matryoshka_weights: list[float] | None = Field(
        None,
        description="with matryoshka_dims: the weight of each dimension's loss, in the same order (default: 1 each)",
    )

    @field_validator("matryoshka_dims")
    @classmethod
    def _distinct_positive_dims(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return value
        if not value or any(d < 1 for d in value) or len(set(value)) != len(value):
            raise ValueError(f"needs distinct dimensions of at least 1 (got {value})")
        return value

    @model_validator(mode="after")
    def _weights_match_dims(self) -> TrainSection:
        weights, dims = self.matryoshka_weights, self.matryoshka_dims
        if weights is not None and dims is None:
            raise ValueError("train.matryoshka_weights: needs train.matryoshka_dims")
        if weights is not None and (len(weights) != len(dims) or any(w <= 0 for w in weights)):
            raise ValueError(f"train.matryoshka_weights: one positive weight a dimension of {dims} (got {weights})")
        return self

    progress_bar: bool = True


class EvalSection(_Section):
    dev_task: str = Field(
        "STS-B",
        description="checkpoint selection: STS-B (its dev split), none, or a task "
        "card (.yaml / .yml: your own dev set, sentlab.evaluation.task_cards); supervised, unset: none",
    )
    dev_limit: int | None = Field(
        None, gt=0, description="use only the first N dev pairs (quick runs; STS-B dev's first 500 are all captions)"
    )
    final_tasks: list[Literal["sts"]] = Field(default_factory=lambda: ["sts"])
    compare_start: bool = Field(
        True,
        description="with the final STS evaluation: also score the start model (a named model or the "
        "run's random initialisation) on it (RUN/start_results.json), shown beside the trained model's",
    )

    @field_validator("dev_task")
    @classmethod
    def _dev_task_known(cls, value: str) -> str:
        if value in ("STS-B", "none") or value.endswith((".yaml", ".yml")):
            return value
        raise ValueError(f"unknown dev task {value!r} (STS-B, none, or a task card .yaml)")

    @property
    def dev_card(self) -> str | None:
        return self.dev_task if self.dev_task.endswith((".yaml", ".yml")) else None


class PresetInfo(_Section):
    """What ``sentlab presets`` shows of a preset; not a training setting."""

    summary: str = ""
    paper: str | None = None
    hardware: Literal["cpu", "gpu"] = "cpu"
    run_on_gpu: bool = Field(False, description="whether this preset has been trained on a GPU")


class Moved(NamedTuple):
    """Where a deprecated key is now (CHANGELOG.md lists each): ``new``, the version that removes the
    old key, its old default (at that value it was not set, as in a 0.1.0 run folder's config, which
    lists every key), how an old value converts (``convert``, its own inverse, said as ``how``), and
    whether a run's fingerprint still holds the old key (``fingerprinted``: a run of the version
    before is found as the same run)."""

    new: str
    removed_in: str
    old_default: Any
    convert: Callable[[Any], Any] | None = None
    how: str = ""
    fingerprinted: bool = False
    # the config tree -> why the old key was never read there (it is dropped, not moved), or None
    idle: Callable[[Mapping], str | None] | None = None

    def value(self, old: Any) -> Any:
        return old if self.convert is None or old is None else self.convert(old)


def scale_as_temperature(scale: Any) -> Any:
    """A scale as a temperature (1 / scale); a value that is not a positive number passes unchanged,
    for the new key's own check to refuse."""
    try:
        return 1.0 / float(scale) if float(scale) > 0 else scale
    except (TypeError, ValueError):
        return scale


def scale_of(temperature: float) -> float:
    """1 / ``temperature`` as the scale that was written: the shortest decimal whose reciprocal is
    ``temperature`` (49, not 49.00000000000001, for a temperature of 1 / 49), so a loss gets the scale a
    0.2.0 config gave it."""
    exact = 1.0 / temperature
    for digits in range(1, 18):
        scale = float(f"{exact:.{digits}g}")
        if 1.0 / scale == temperature:
            return scale
    return exact


def _ct_scale_idle(tree: Mapping) -> str | None:
    ct = tree.get("ct") if isinstance(tree.get("ct"), Mapping) else {}
    if tree.get("method") == "ct" and not ct.get("in_batch"):
        return "CT with labelled pairs has no scale (0.2.0 read it with ct.in_batch: true only)"
    return None


DEPRECATED_KEYS: dict[str, Moved] = {
    "rse.mini_batch_size": Moved("train.mini_batch_size", "0.3.0", None),
    "ct.scale": Moved(
        "loss.temperature", "0.3.0", 20.0, scale_as_temperature, "loss.temperature = 1 / ct.scale", True, _ct_scale_idle
    ),
    "supervised.scale": Moved(
        "loss.temperature", "0.3.0", None, scale_as_temperature, "loss.temperature = 1 / supervised.scale", True
    ),
}


def _default_of(dotted: str) -> Any:
    """The default of a shared section's key (``loss.temperature``); None for a required one."""
    section, key = dotted.split(".")
    field = TrainConfig.model_fields[section].annotation.model_fields[key]
    return None if field.is_required() else field.get_default(call_default_factory=True)


# keys added since 0.2.0 -> their default, at which a run's fingerprint leaves them out: a run of
# 0.2.0 at the same settings is the same run (a new key with a default is never a change of setting)
ADDED_SINCE_RELEASE = {
    "data.split": None,
    "data.subset": None,
    "data.prompts": None,
    "data.sets": {},
    "data.sampler": "proportional",
    "model.model_kwargs": {},
    "model.trust_remote_code": False,
    "train.trainer_args": {},
    "supervised.teacher_setting": "torch fp32",
    "rankcse.teacher_setting": "torch fp32",
    "supervised.projection_init": "random",
}


# the 0.2.0 keys a config may still give, as written, for its fingerprint: the deprecated ones, and
# supervised.loss_args.scale (moved by the supervised method, sentlab.methods.supervised)
WRITTEN_BEFORE = (*DEPRECATED_KEYS, "supervised.loss_args.scale")


def _as_written(tree: Any) -> dict[str, Any]:
    """The 0.2.0 keys of :data:`WRITTEN_BEFORE` that the raw config ``tree`` gives, at their values."""
    found = {}
    for dotted in WRITTEN_BEFORE:
        node = tree
        for part in dotted.split("."):
            node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
        if node is not _ABSENT:
            found[dotted] = node
    return found


_ABSENT = object()


def as_fingerprinted(tree: dict[str, Any], written: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A resolved config tree as the version before wrote it: the keys added since left out at their
    defaults (:data:`ADDED_SINCE_RELEASE`), and the keys moved since (:attr:`Moved.fingerprinted`) back
    where they were: the old key as the config wrote it (``written``, :func:`_as_written`: an explicit
    ``supervised.scale: 20`` is 20, not unset, and ``ct.scale: 49`` is 49), else at its old default, or
    the new key's value converted back where it is not at its default, and the new key at its default.
    A run's fingerprint hashes this, so the run of an unchanged setting is the same run across versions."""
    written = dict(written or {})
    for dotted, default in ADDED_SINCE_RELEASE.items():
        section, key = dotted.split(".")
        if isinstance(tree.get(section), dict) and tree[section].get(key, default) == default:
            tree[section].pop(key, None)
    arguments = (tree.get("supervised") or {}).get("loss_args") if isinstance(tree.get("supervised"), dict) else None
    if "supervised.loss_args.scale" in written and isinstance(arguments, dict) and "scale" not in arguments:
        arguments["scale"] = written.pop("supervised.loss_args.scale")  # moved to loss.temperature: put back
        tree["loss"]["temperature"] = _default_of("loss.temperature")
    for old, moved in DEPRECATED_KEYS.items():
        section, key = old.split(".")
        new_section, new_key = moved.new.split(".")
        if not moved.fingerprinted or not isinstance(tree.get(section), dict):
            continue
        default = _default_of(moved.new)
        value = tree.get(new_section, {}).get(new_key, default)
        if old in written:  # 0.2.0 typed these as floats: 49 was hashed as 49.0
            given = written[old]
            tree[section][key] = float(given) if isinstance(given, int) and not isinstance(given, bool) else given
        else:
            tree[section][key] = moved.old_default if value == default else moved.value(value)
            if moved.convert is scale_as_temperature and value != default:
                tree[section][key] = scale_of(value)
        if isinstance(tree.get(new_section), dict):
            tree[new_section][new_key] = default
    return tree


class TrainConfig(_Section):
    """The sections every method shares; each method's config subclasses it (``sentlab.methods``).

    ``TrainConfig.model_validate(tree)`` picks the method's config class by ``tree["method"]`` (a
    discriminated union over the registered methods), so a missing, unknown or misplaced method
    section is a one-line error.
    """

    about: PresetInfo | None = None
    method: str
    model: ModelSection
    data: DataSection
    loss: LossSection = Field(default_factory=LossSection)
    train: TrainSection
    eval: EvalSection = Field(default_factory=EvalSection)

    _data_paths: list[Path] = PrivateAttr(default_factory=list)  # the $SENTLAB_DATA/ paths, expanded
    _written: dict[str, Any] = PrivateAttr(default_factory=dict)  # 0.2.0 keys as given (as_fingerprinted)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_written(cls, tree: Any, handler) -> TrainConfig:
        """The 0.2.0 keys the config gave, as it gave them, for the run's fingerprint."""
        cfg = handler(tree)
        if isinstance(tree, Mapping) and isinstance(cfg, TrainConfig):
            cfg._written = _as_written(tree)
        return cfg

    section: ClassVar[str | None] = None  # the method's own section, e.g. "rank"
    section_hint: ClassVar[str] = ""  # its required keys, named in the "needs a section" error
    section_required: ClassVar[bool] = True  # False when every key of the section has a default
    # what the method never reads: a shared section ("loss") or one of its keys ("loss.hard_negative_weight")
    # -> what it reads instead; setting one is refused (see unread())
    not_read: ClassVar[dict[str, str]] = {}
    # the keys unread() adds under some settings -> when (for the configuration reference)
    idle_when: ClassVar[dict[str, str]] = {
        "model.prompt_template": "without model.pooler: prompt",
        "model.mlp_only_train": "without model.pooler: cls",
        "eval.dev_limit": "with eval.dev_task: none",
        "data.sampler": "without data.sets",
        "data.prompts": "outside the supervised method",
        "data.sets": "outside the supervised method",
        "data.columns": "with data.sets (each set has its own)",
        "data.limit": "with data.sets (each set has its own)",
        "data.split": "with data.sets (each set has its own)",
        "data.subset": "with data.sets (each set has its own)",
    }  # and a start model's kind, whatever the method (START_KIND_LACKS: the reference lists it once)

    @model_validator(mode="before")
    @classmethod
    def _deprecated_keys(cls, tree: Any) -> Any:
        """A key that moved (:data:`DEPRECATED_KEYS`) is read where it is now for one version, with a
        one-line notice on stderr; set in both places, it is refused."""
        used = [
            old
            for old in DEPRECATED_KEYS
            if isinstance(tree, Mapping)
            and isinstance(tree.get(old.split(".")[0]), Mapping)
            and old.split(".")[1] in tree[old.split(".")[0]]
        ]
        if not used:
            return tree  # nothing moved: validated as given, without a copy
        tree = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tree.items()}
        for old in used:
            (old_section, old_key), moved = old.split("."), DEPRECATED_KEYS[old]
            new, removed_in, old_default = moved.new, moved.removed_in, moved.old_default
            new_section, new_key = new.split(".")
            if not isinstance(tree.get(new_section, {}), dict):
                continue  # not a mapping: the section's own validation says so
            value = tree[old_section].pop(old_key)
            if not tree[old_section]:
                tree.pop(old_section)
            if value == old_default:  # at its old default the key was not set: nothing moves, no notice
                continue
            never_read = moved.idle(tree) if moved.idle is not None else None
            if never_read:  # 0.2.0 accepted it and read nothing: dropped (still in the run's fingerprint)
                deprecation_notice(old, f"dropped here: {never_read}", removed_in)
                continue
            value = moved.value(value)
            target = tree.setdefault(new_section, {})
            at_default = target.get(new_key) == _default_of(new)  # a config dumped whole lists it: not a setting
            if target.get(new_key) is not None and target[new_key] != value and not at_default:
                raise ValueError(f"{old}: it is {new} now, which is set too; set {new} only")
            target[new_key] = value
            deprecation_notice(old, moved.how or new, removed_in)
        return tree

    def unread(self) -> dict[str, str]:
        """The sections and keys (``"loss"``, ``"supervised.split"``) this config's method does not read
        with these settings, each with what it reads instead: ``not_read``, the method's own refusals
        (:func:`register_config`), and, in a method's config
        that overrides this, the keys its other settings make idle. A config that sets one is refused
        in one line (``_only_read_keys``); :meth:`to_tree` and :meth:`to_yaml` leave them out."""
        idle = {**self.not_read, **METHOD_REFUSES.get(self.method, {})}
        if self.model.pooler != "prompt":
            idle["model.prompt_template"] = "it is read with model.pooler: prompt only"
        if self.model.pooler != "cls":
            idle.setdefault("model.mlp_only_train", "SimCSE's MLP goes on the cls pooler only (model.pooler: cls)")
        if self.eval.dev_task == "none":
            idle["eval.dev_limit"] = "there is no dev task (eval.dev_task: none)"
        if self.method != "supervised":
            idle["data.prompts"] = (
                "training prompts are read by the supervised method, whose columns are queries and documents"
            )
            idle["data.sets"] = "several training sets are read by the supervised method; give data.train"
        if not self.data.sets:
            idle["data.sampler"] = "it batches several training sets (data.sets)"
        else:
            for key in ("columns", "limit", "split", "subset"):
                idle[f"data.{key}"] = f"with data.sets, each set has its own {key}"
        for key, why in self.start_lacks().items():
            idle.setdefault(key, why)
        return idle

    def start_lacks(self) -> dict[str, str]:
        """The settings the start model's kind (:data:`START_KIND_LACKS`: a static model, an adapter
        folder) cannot take, each with why; none for random weights or a start that does not load (said
        where it is loaded)."""
        from sentlab.errors import SentlabError

        name = self.model.name
        if self.model.random_init is not None or not name:
            return {}
        try:
            kind = start_kind(name)
        except (SentlabError, OSError, ValueError):
            return {}
        return {key: start_kind_refusal(name, key) for key in START_KIND_LACKS[kind] if "." in key}

    @model_validator(mode="after")
    def _a_method_the_start_trains_with(self) -> TrainConfig:
        lacks = self.start_lacks()
        if self.method != "supervised" and "model.max_seq_length" in lacks:  # a static start
            raise ValueError(f"method: {start_kind_refusal(self.model.name, 'method')}, not {self.method}")
        if "train.mini_batch_size" in lacks and self.train.trainer_args.get("gradient_checkpointing"):
            why = start_kind_refusal(self.model.name, "train.mini_batch_size")
            raise ValueError(f"train.trainer_args.gradient_checkpointing: {why}; unset it")
        return self

    @model_validator(mode="after")
    def _only_read_keys(self) -> TrainConfig:
        """No setting silently does nothing: a key set to something other than its default that the
        method does not read is refused, naming what it reads instead. A key written with its default
        value (a config dumped whole, a run folder's config of an earlier version) changes nothing and
        passes."""
        unread, lacks = self.unread(), self.start_lacks()
        for section in sorted(self.model_fields_set):
            value = getattr(self, section)
            if not isinstance(value, BaseModel):
                continue
            for key in sorted(value.model_fields_set):
                dotted = f"{section}.{key}"
                hit = dotted if dotted in unread else section if section in unread else None
                default = type(value).model_fields[key].get_default(call_default_factory=True)
                if hit is not None and getattr(value, key) != default:
                    if unread[hit] == lacks.get(hit):  # the start model's kind, whatever the method
                        raise ValueError(f"{dotted}: {unread[hit]}; unset it")
                    raise ValueError(f"{dotted}: method {self.method} does not read it; {unread[hit]}")
        return self

    def to_tree(self) -> dict[str, Any]:
        """The config as nested mappings without the keys it does not read (:meth:`unread`): what
        validates again as this config."""
        tree = self.model_dump()
        for dotted in self.unread():
            section, _, key = dotted.partition(".")
            if key and isinstance(tree.get(section), dict):
                tree[section].pop(key, None)
            elif not key:
                tree.pop(section, None)
        return tree

    @model_validator(mode="before")
    @classmethod
    def _method_section_present(cls, tree: Any) -> Any:
        if cls is TrainConfig or not isinstance(tree, dict):
            return tree
        method = tree.get("method")
        sections = {c.section: name for name, c in registered_configs().items() if c.section}
        for name, owner in sections.items():
            if name != cls.section and tree.get(name) is not None:
                raise ValueError(f"the {name!r} section is only for method {owner}, not {method}")
        if cls.section and cls.section_required and tree.get(cls.section) is None:
            hint = f" ({cls.section_hint})" if cls.section_hint else ""
            raise ValueError(f"method {method} needs a {cls.section!r} section{hint}")
        return {key: value for key, value in tree.items() if not (value is None and key in sections)}

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> TrainConfig:
        if cls is not TrainConfig:
            return super().model_validate(obj, **kwargs)
        return config_adapter().validate_python(obj, **kwargs)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_tree(), sort_keys=False)

    def data_sets(self) -> tuple[str, ...]:
        """The data sets (:mod:`sentlab.data.sources`) the config reads, in order: those of its
        ``$SENTLAB_DATA/`` paths, and ``sts`` when it selects on STS-B dev or ends with the STS evaluation."""
        from sentlab.data.sources import data_sets

        reads_sts = self.eval.dev_task == "STS-B" or "sts" in self.eval.final_tasks
        return data_sets(self._data_paths, data_dir(self.data.data_dir), reads_sts)

    def require_data(self) -> None:
        """Every file the config names under the data folder exists; otherwise a one-line error that
        names the data set it belongs to and how to get it (:mod:`sentlab.data.sources`)."""
        from sentlab.data.sources import missing_data_message

        for path in self._data_paths:
            if not path.exists():
                raise DataError(missing_data_message(path, data_dir(self.data.data_dir)))


CONFIG_CLASSES: dict[str, type[TrainConfig]] = {}  # method name -> its config class (register_config)
_ADAPTER: dict[tuple[str, ...], TypeAdapter] = {}


METHOD_REFUSES: dict[str, dict[str, str]] = {}  # method name -> keys of its class it alone does not read


def register_config(method: str, config_class: type[TrainConfig], refuses: Mapping[str, str] | None = None) -> None:
    """Make ``config_class`` the config of ``method`` (:func:`sentlab.methods.register` calls this, so
    the schema sits below the methods that extend it and never imports them). ``refuses``: keys the
    class has that this method does not read (dotted key -> what it reads instead), refused as
    ``not_read`` is, for this method only (a class may serve several methods)."""
    CONFIG_CLASSES[method] = config_class
    METHOD_REFUSES[method] = dict(refuses or {})
    _ADAPTER.clear()


def registered_configs() -> dict[str, type[TrainConfig]]:
    """Every registered method's config class by name. The schema never loads the methods (they are a
    layer above it): reading a config goes through :func:`sentlab.methods.load_config`, which loads
    sentlab's methods and the installed packages of one's own before it validates."""
    return CONFIG_CLASSES


def config_adapter() -> TypeAdapter:
    """Validator of the union of the registered methods' configs, selected by ``method``."""
    key = tuple(registered_configs())
    if not key:
        raise ConfigError(
            "no method is registered: read a config through sentlab.methods.load_config (a tree: validate_config)"
        )
    if key not in _ADAPTER:
        from typing import Annotated, Union

        classes = tuple(dict.fromkeys(registered_configs().values()))
        _ADAPTER[key] = TypeAdapter(Annotated[Union[classes], Field(discriminator="method")])  # noqa: UP007
    return _ADAPTER[key]


def _set_dotted(tree: dict[str, Any], dotted: str, raw_value: str) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {dotted}: {key!r} is not a section")
        node = child
    node[keys[-1]] = yaml.safe_load(raw_value) if raw_value != "" else None


def parse_overrides(overrides: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in overrides:
        if "=" not in item or item.startswith("="):
            raise ConfigError(f"--set {item!r}: expected key=value, e.g. train.learning_rate=3e-5")
        key, value = item.split("=", 1)
        pairs.append((key.strip(), value))
    return pairs


def tree_strings(node: Any) -> list[str]:
    """Every string value of a config tree (nested mappings and lists)."""
    if isinstance(node, dict):
        return [s for value in node.values() for s in tree_strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in tree_strings(value)]
    return [node] if isinstance(node, str) else []


def merge_sections(tree: dict[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """``tree`` with ``updates`` merged in, section by section (nested mappings merge, values replace)."""
    merged = dict(tree)
    for key, value in updates.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_sections(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def parse_config(
    path: str | Path, overrides: list[str] | None = None, updates: Mapping[str, Any] | None = None
) -> TrainConfig:
    """Validated against the methods registered so far (:func:`sentlab.methods.load_config` registers
    every installed one first, and is what callers use): read a YAML config (a file, or a packaged preset by name), apply ``key=value`` overrides, put the
    data folder in place of ``$SENTLAB_DATA/`` and validate; errors are one line, and name the
    ``--set`` option when the key came from one, else the file. ``updates`` (nested sections, e.g.
    ``{"train": {"max_steps": 10}}``) are merged in after the overrides."""
    from sentlab.presets import resolve_config

    path = resolve_config(path)
    try:
        tree = yaml.safe_load(path.read_text("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    pairs = parse_overrides(overrides or [])
    given = {key for key, _ in pairs}
    for old, moved in DEPRECATED_KEYS.items():  # an override, of the old key or the new, wins over the file's old key
        section, name = old.split(".")
        if (old in given or moved.new in given) and isinstance(tree.get(section), dict):
            tree[section].pop(name, None)
        new_section, new_name = moved.new.split(".")
        if old in given:  # and over the file's new key: the old key is moved where it is now as a file's is
            deprecation_notice(old, moved.how or moved.new, moved.removed_in)  # (a --set is a setting, whatever
            if isinstance(tree.get(new_section), dict):  # its value), and errors name the --set given
                tree[new_section].pop(new_name, None)
    for key, value in pairs:
        _set_dotted(tree, key, value)
    if updates:
        tree = merge_sections(tree, updates)
    data_section = tree.get("data") if isinstance(tree.get("data"), dict) else {}
    data_paths = expand_data_paths(tree, data_dir(data_section.get("data_dir")))
    try:
        cfg = TrainConfig.model_validate(tree)
        cfg._data_paths = data_paths
        return cfg
    except ValidationError as err:
        where, message = validation_message(err, tree)
        named = message.split(":", 1)[0]
        if not where and any(key == named for key, _ in pairs):  # a key refused by a config-wide check
            where = named
        option = next(
            (
                f"--set {key}={value}"
                for key, value in reversed(pairs)
                for now in (key, DEPRECATED_KEYS[key].new if key in DEPRECATED_KEYS else key)
                if where and (now == where or now.startswith(where + ".") or where.startswith(now + "."))
            ),
            None,
        )
        raise ConfigError(f"{option or path}: {message}") from None


_NOTICED: set[tuple[str, str]] = set()


def deprecation_notice(old: str, new: str, removed_in: str) -> None:
    """One line on stderr, once a process, for a deprecated key that was used."""
    if (old, new) in _NOTICED:
        return
    _NOTICED.add((old, new))
    import sys

    print(
        f"sentlab: {old} is deprecated: it is {new} now; {old} will be removed in sentlab {removed_in}", file=sys.stderr
    )


MOVED_KEYS: dict[str, str] = {}  # a key removed after its version of deprecation -> where it is now


def validation_message(err: ValidationError, tree: dict[str, Any]) -> tuple[str, str]:
    """(the dotted key, pydantic's first error as one line that names it)."""
    first = err.errors()[0]
    loc = list(first["loc"])
    if loc and loc[0] == tree.get("method"):  # the union's tag, not a key
        loc = loc[1:]
    where = ".".join(str(p) for p in loc)
    text = first["msg"].removeprefix("Value error, ")
    if first["type"] == "union_tag_not_found":
        message = "missing required key 'method'"
    elif first["type"] == "union_tag_invalid":
        message = f"unknown method {tree.get('method')!r} (choose from {', '.join(registered_configs())})"
    elif first["type"] == "extra_forbidden" and where in MOVED_KEYS:
        message = f"{where} is now {MOVED_KEYS[where]}"
    elif first["type"] == "extra_forbidden":
        message = f"unknown key {where!r}" + _did_you_mean(err, loc)
    elif first["type"] == "missing":
        message = f"missing required key {where!r}"
    elif first["type"] == "value_error" and not loc:
        message = text
    elif first["type"] == "value_error":
        message = f"{where}: {text}"
    else:
        message = f"{where or '(top level)'}: {text} (got {first.get('input')!r})"
    more = f" (+{len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return where, message + more


def _did_you_mean(err: ValidationError, loc: list) -> str:
    """`` (did you mean 'train.learning_rate'?)`` for a misspelt key of a known section."""
    import difflib

    model = err.title  # the config class pydantic validated, e.g. SimCSEUnsupConfig
    classes = [c for c in registered_configs().values() if c.__name__ == model] or [TrainConfig]
    fields = classes[0].model_fields
    for part in loc[:-1]:
        annotation = fields.get(str(part)).annotation if str(part) in fields else None
        fields = getattr(annotation, "model_fields", None) or {}
    close = difflib.get_close_matches(str(loc[-1]), list(fields), n=1) if loc else []
    return f" (did you mean {'.'.join([*map(str, loc[:-1]), close[0]])!r}?)" if close else ""
