"""The method base class and the registry.

A method is one class that declares, in one place, everything the engine needs from it:

* ``config_class`` — its config (a :class:`~sentlab.training.config.TrainConfig` subclass with
  ``method: Literal[name]`` and, if it has one, its own section);
* :meth:`Method.train_dataset` — the training dataset it builds from ``data``;
* :meth:`Method.prepare` — frozen inputs computed once before training (a frozen encoder's
  vectors, a corpus index), cached in the run folder so ``--resume`` reuses them;
* :meth:`Method.build_model` and :meth:`Method.loss` — the model to train and its loss;
* :meth:`Method.learning_rate_mapping` — extra parameter groups with their own learning rate
  (parameter-name regex -> lr, sentence-transformers' ``learning_rate_mapping``: the trainer puts
  matching parameters of the model *or the loss* in their own optimizer group);
* :meth:`Method.training_arguments` and :meth:`Method.lr_multiplier` — the method's own optimizer
  settings (e.g. CT's RMSprop) and learning-rate schedule (e.g. CT's segmented constants);
* ``training_only_modules`` — module types removed before the final model is saved;
* :meth:`Method.save` and :meth:`Method.evaluate` — how the final model is packaged and measured.

The engine (:mod:`sentlab.training.engine`, the sentence-transformers trainer) asks the method and
never names one. Adding a method is one module in this package plus a preset in ``sentlab/presets/``::

    @register
    class MyMethod(Method):
        name = "my-method"
        config_class = MyConfig          # method: Literal["my-method"]; my: MySection
        def loss(self, model): ...
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense
from torch import nn

from sentlab import devices
from sentlab.cache_folder import cached_folder
from sentlab.data.datasets_source import is_datasets_source, open_source, source_identity
from sentlab.data.readers import TABLE_SUFFIXES
from sentlab.data.tables import column_table, iter_column, sentence_table, text_record
from sentlab.encoders.adapters import adapter_on_adapter, add_lora, has_adapter, merge_adapter
from sentlab.encoders.heads import SimCSEMLPHead
from sentlab.encoders.loading import (
    build_encoder,
    dropout_config_kwargs,
    inference_max_seq_length,
    is_static_model,
    keep_first_layers,
    load_encoder,
    normalizes,
    refuse_static_settings,
    start_kind_refusal,
)
from sentlab.errors import ConfigError
from sentlab.evaluation.results import EvalReport
from sentlab.evaluation.scoring import EmbeddingCache
from sentlab.losses.gradcache import GradientCache
from sentlab.losses.simcse import SimCSELoss
from sentlab.progress import say
from sentlab.training.config import TrainConfig, register_config
from sentlab.training.run_folder import RunPaths, add_run_files

FROZEN_CHUNK = 65_536  # rows a frozen encoder encodes at a time (frozen_vectors)
FROZEN_FILE = "vectors.npy"  # in a frozen_vectors folder
RANDOM_INIT_FOLDER = "random_init"  # RUN/random_init: a random_init run's start model

METHODS: dict[str, type[Method]] = {}


class Method:
    """One training method; instantiated per run with the run's config and folder."""

    name: ClassVar[str]
    config_class: ClassVar[type[TrainConfig]]
    run_files: ClassVar[dict[str, str]] = {}
    default_mlp_only_train: ClassVar[bool] = True  # SimCSE's --mlp_only_train, for pooler cls
    simcse_mlp: ClassVar[bool] = True  # with pooler cls, put SimCSE's MLP over [CLS] (SimCSE-based methods)
    training_only_modules: ClassVar[tuple[type[nn.Module], ...]] = (SimCSEMLPHead,)
    min_batch_size: ClassVar[int] = 2  # in-batch negatives: a batch of one row learns nothing (loss 0)
    in_batch_negatives: bool = False  # the other rows of a batch are its negatives (train.no_duplicates)
    rows_drawn_on_read: ClassVar[bool] = False  # a row's texts are drawn as it is read (no sampler can see them)
    # train.mini_batch_size (Gradient Cache): None where the loss is computed from the whole batch's
    # embeddings and takes it; else why it does not (the one line that refuses the key)
    no_gradient_cache: ClassVar[str | None] = (
        "its loss takes each row alone, so a smaller train.batch_size already needs less memory for the same "
        "expected gradient; Gradient Cache is for losses that compare the rows of a batch"
    )
    batch_columns: ClassVar[int] = 2  # sequences a row embeds (train.mini_batch_size: auto's estimate)
    # train.matryoshka_dims: None where the loss is a function of the embeddings' directions (cosines), so
    # the first K dimensions re-normalised are an embedding it can score; else why not (the refusal's line)
    # model.adapter (LoRA): None where the method trains the model it saves through its own forward, so
    # the adapter is what trains and what is saved; else why not (the refusal's line)
    no_adapter: ClassVar[str | None] = (
        "its loss runs networks tied to the encoder by weight name or saves more than the encoder, which an "
        "adapter's wrapped layers would leave untrained or unsaved"
    )
    no_matryoshka: ClassVar[str | None] = "its loss is not a function of the sentence embeddings' directions"
    # the saved model ends in the start model's Normalize module when it had one (cosine scores do not
    # change); False where the model's scores read the embeddings' length as training saw it
    keeps_start_normalize: ClassVar[bool] = True
    # the checkpoint a --resume restores the model and the loss state from (set by the engine before the
    # trainer is built): what it restores need not be prepared again
    resume_from: str | None = None

    def __init__(self, cfg: TrainConfig, paths: RunPaths):
        if not isinstance(cfg, self.config_class):
            raise ConfigError(f"method {self.name} needs a {self.config_class.__name__}, got {type(cfg).__name__}")
        self.cfg = cfg
        self.paths = paths

    # -- data ------------------------------------------------------------------------------------
    def train_dataset(self) -> Dataset:
        """One ``sentence`` column (unsupervised methods)."""
        return train_table(self.cfg)

    def prepare(self, dataset: Dataset) -> None:
        """Compute frozen inputs once before training (run on the main process first)."""

    def batching(self, dataset: Dataset, model: SentenceTransformer) -> tuple[Dataset, Callable | None]:
        """The rows the trainer batches and the collator that makes a batch of them, once the model and
        its tokenizer exist; a collator of None is sentence-transformers' own (it tokenises each text
        column). MLM's packed blocks (``mlm.pack``) are the one method that changes them."""
        return dataset, None

    # -- model and loss --------------------------------------------------------------------------
    def build_model(self) -> SentenceTransformer:
        """The encoder to train (:meth:`start_encoder`); with the ``cls`` pooler (and ``simcse_mlp``),
        SimCSE's MLP (Linear + tanh) on top: in training only (:class:`SimCSEMLPHead`, removed before
        saving) when ``mlp_only_train``, else a sentence-transformers ``Dense`` with tanh that stays in
        the saved model."""
        m = self.cfg.model
        model = self.start_encoder()
        if m.adapter is not None:
            a = m.adapter
            add_lora(model, a.rank, a.alpha, a.dropout, a.target_modules)
        if m.pooler == "cls" and self.simcse_mlp:
            dim = model.get_embedding_dimension()
            mlp_only_train = self.default_mlp_only_train if m.mlp_only_train is None else m.mlp_only_train
            head = SimCSEMLPHead(dim) if mlp_only_train else Dense(dim, dim, activation_function=nn.Tanh())
            model.append(head.to(model.device))  # where the encoder is, not where a new module starts
        if m.adapter is not None:
            trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
            total = sum(p.numel() for p in model.parameters())
            say(f"model.adapter: LoRA rank {m.adapter.rank}, {trained:,} of the model's {total:,} parameters trained")
        return model

    def start_encoder(self) -> SentenceTransformer:
        """The start model with the run's pooler, dropout and layers (``model.num_layers``), before any
        training head: what training starts from, and what the run's results are compared with."""
        m = self.cfg.model
        start = str(self.random_init_folder()) if m.random_init is not None else m.name
        if m.random_init is None and is_static_model(start):
            if self.name != "supervised":  # the config refuses it first; a config built without validation
                raise ConfigError(f"{start_kind_refusal(start, 'method')}, not {self.name}")
            refuse_static_settings(
                start,
                model_pooler=m.pooler,
                model_num_layers=m.num_layers,
                model_adapter=m.adapter,
                model_dropout=m.dropout,
                model_model_kwargs=m.model_kwargs or None,
                model_trust_remote_code=m.trust_remote_code,
                train_mini_batch_size=self.cfg.train.mini_batch_size,
            )
        trust = m.trust_remote_code
        config_kwargs = None if m.dropout is None else dropout_config_kwargs(start, m.dropout, trust)
        kwargs = {"config_kwargs": config_kwargs, "model_kwargs": m.model_kwargs, "trust_remote_code": trust}
        if m.random_init is not None:
            model = build_encoder(start, m.pooler or "mean", prompt_template=m.prompt_template, **kwargs)
        elif m.pooler is None:
            model = load_encoder(start, **kwargs)
        else:
            model = build_encoder(start, m.pooler, prompt_template=m.prompt_template, **kwargs)
            if not self.keeps_start_normalize and normalizes(start) and not self.__dict__.get("_said_pooler"):
                self._said_pooler = True  # once: the start model is built again to be scored
                say(
                    f"model.pooler {m.pooler}: {start} is rebuilt from its backbone without its Normalize module; "
                    "the loss reads the embeddings' length, so they train and are saved unnormalised (leave "
                    "model.pooler unset to train the model as saved)"
                )
        halves = sorted({str(p.dtype) for p in model.parameters() if p.is_floating_point()} - {"torch.float32"})
        if halves:  # model.model_kwargs.dtype: auto on a half-precision checkpoint (train.mixed_precision is the way)
            model.float()
            say(f"model.model_kwargs.dtype: the checkpoint holds {', '.join(halves)} weights; trained in float32")
        if m.num_layers is not None:
            keep_first_layers(model, m.num_layers)
        if has_adapter(model):  # a run's adapter folder (a pipeline's earlier stage): its full weights
            if m.adapter is not None:  # a hub adapter id (a local folder is refused by the config)
                raise ConfigError(adapter_on_adapter(start))
            merge_adapter(model)
            say(f"{start}: holds a LoRA adapter; training starts from its merged weights")
        return model

    def inference_length(self) -> int:
        """The saved model's ``max_seq_length``, at which the final evaluation encodes:
        ``model.inference_max_seq_length``, else the start model's own
        (:func:`~sentlab.encoders.loading.inference_max_seq_length`): training truncates at
        ``model.max_seq_length`` (SimCSE's 32), but the model is used, as in the papers' evaluation,
        on whole sentences."""
        m = self.cfg.model
        if m.inference_max_seq_length is not None:
            return m.inference_max_seq_length
        # a random start was built before training (random_init_folder): its folder, without reading the text again
        start = self.paths.root / RANDOM_INIT_FOLDER if m.random_init is not None else m.name
        return inference_max_seq_length(start, m.trust_remote_code)

    def random_init_folder(self) -> Path | None:
        """With ``model.random_init``: the run's randomly initialised masked LM (``RUN/random_init``),
        built once and reused (the engine builds it on the main process first); else None."""
        init = self.cfg.model.random_init
        if init is None:
            return None
        from sentlab.encoders.random_init import build_random_masked_lm

        table = train_table(self.cfg) if init.tokenizer == "train" else None
        return build_random_masked_lm(
            init,
            self.paths.root / RANDOM_INIT_FOLDER,
            iter_column(table) if table is not None else None,
            train_sha256(self.cfg) if table is not None else "",
        )

    def loss(self, model: SentenceTransformer) -> nn.Module:
        raise NotImplementedError

    def training_loss(self, model: SentenceTransformer) -> nn.Module:
        """:meth:`loss`, with ``train.mini_batch_size`` wrapped in Gradient Cache
        (:class:`~sentlab.losses.gradcache.GradientCache`) and ``train.matryoshka_dims`` in
        sentence-transformers' ``MatryoshkaLoss``; the chunking chosen, and whether ``auto`` chose it, is
        on the loss as ``chunking`` (read back into ``RUN/runtime.json``)."""
        size, source = self.cfg.train.mini_batch_size, "set"
        if size is None:  # a loss that chunks by itself (sentence-transformers' cached losses) says so on it
            loss = self.loss(model)
            chunking = getattr(loss, "chunking", None)
            loss = self.matryoshka(model, loss)
            if chunking is not None:
                loss.chunking = chunking
            return loss
        if size == "auto":
            size, why = self.auto_mini_batch(model)
            source = "auto"
            say(f"train.mini_batch_size: auto -> {why}")
            if size is None and self.chunks_itself:  # a Cached class: the whole batch is one chunk of every row
                size = self.cfg.train.batch_size
        loss = self.loss(model) if size is None else self.chunked_loss(model, size)
        chunking = {"mini_batch_size": size, "source": source, "by": type(loss).__name__ if size else None}
        loss = self.matryoshka(model, loss)
        loss.chunking = chunking  # read back by the engine
        return loss

    @property
    def chunks_itself(self) -> bool:
        """Whether :meth:`loss` chunks the batch itself (a sentence-transformers ``Cached*`` class), so
        ``auto``'s "the whole batch" is a chunk of every row, not the loss as it is."""
        return False

    def chunked_loss(self, model: SentenceTransformer, mini_batch_size: int) -> nn.Module:
        """:meth:`loss` computed ``mini_batch_size`` rows at a time (``train.mini_batch_size``): sentlab's
        Gradient Cache around it; a method whose loss chunks itself builds that instead."""
        return GradientCache(self.loss(model), mini_batch_size)

    def matryoshka(self, model: SentenceTransformer, loss: nn.Module) -> nn.Module:
        """``loss`` in sentence-transformers' ``MatryoshkaLoss`` with ``train.matryoshka_dims``, or as it is."""
        t = self.cfg.train
        if t.matryoshka_dims is None:
            return loss
        from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

        if any(isinstance(module, self.training_only_modules) for module in model):
            raise ConfigError(
                "train.matryoshka_dims: the model ends in a training-only module (SimCSE's MLP on [CLS], removed "
                "before saving), so the truncated embeddings would not be the saved model's; set "
                "model.mlp_only_train: false, or another pooler"
            )
        width = model.get_embedding_dimension()
        larger = [d for d in t.matryoshka_dims if d > width]
        if larger:
            raise ConfigError(f"train.matryoshka_dims: {larger[0]} is larger than the model's {width} dimensions")
        if width not in t.matryoshka_dims:
            say(
                f"train.matryoshka_dims: the model's whole {width} dimensions are not among them, so not trained as such"
            )
        say(
            f"train.matryoshka_dims: the loss is also taken at the first {sorted(t.matryoshka_dims, reverse=True)} dimensions"
        )
        return MatryoshkaLoss(model, loss, t.matryoshka_dims, t.matryoshka_weights)

    def auto_mini_batch(self, model: SentenceTransformer) -> tuple[int | None, str]:
        """``train.mini_batch_size: auto``: the chunk that fits the free memory of the model's device
        (:func:`sentlab.devices.chunk_that_fits`), for a batch of ``batch_columns`` sequences a row at
        the run's maximum length and precision."""
        free, _ = devices.device_memory_bytes(model.device)
        return devices.chunk_that_fits(
            model[0].auto_model.config,
            rows=self.cfg.train.batch_size,
            columns=self.batch_columns,
            length=self.cfg.model.max_seq_length,
            half=self.cfg.train.mixed_precision != "no",
            free_bytes=free,
            parameters=sum(p.numel() for p in model.parameters()),
        )

    def simcse_loss(self, model: SentenceTransformer) -> SimCSELoss:
        """SimCSE's InfoNCE with the ``loss`` section's settings (the base objective of several methods)."""
        return SimCSELoss(
            model, temperature=self.cfg.loss.temperature, hard_negative_weight=self.cfg.loss.hard_negative_weight
        )

    def learning_rate_mapping(self) -> dict[str, float]:
        """Extra parameter groups: parameter-name regex -> learning rate (none by default)."""
        return {}

    def own_dev_metric(self) -> str | None:
        """The metric of an evaluation the method brings itself (e.g. MLM's held-out accuracy), which
        keeps the best checkpoint when the config names no dev task; None by default."""
        return None

    def dev_evaluator(self, evaluator, loss: nn.Module):
        """The dev evaluator used for checkpoint selection (STS-B dev or the user's task card), given
        the loss (a method that scores pairs its own way, e.g. RSE's relational score, wraps or
        re-scores it); unchanged by default."""
        return evaluator

    def training_arguments(self) -> dict[str, object]:
        """Settings of the sentence-transformers trainer that the method fixes (e.g. ``optim``)."""
        return {}

    def training_prompts(self, dataset: Dataset, model: SentenceTransformer) -> dict[str, str] | None:
        """The text put before each column's texts in training (sentence-transformers' training
        ``prompts``, by column); None for a method that trains without prompts (``data.prompts`` is
        read by ``supervised`` only), whose saved model keeps the start model's prompts."""
        return None

    def lr_multiplier(self, step: int) -> float | None:
        """The learning rate of optimizer step ``step + 1`` as a multiple of ``train.learning_rate``;
        None (the default) keeps the trainer's schedule (linear decay after ``train.warmup_ratio``)."""
        return None

    # -- the final model -------------------------------------------------------------------------
    def final_model(self, model: SentenceTransformer) -> SentenceTransformer:
        """The trained model without training-only modules."""
        kept = [module for module in model if not isinstance(module, self.training_only_modules)]
        if len(kept) == len(model):
            return model
        return SentenceTransformer(modules=kept, device=str(model.device))

    def save(self, model: SentenceTransformer) -> None:
        model.save(str(self.paths.model))

    def evaluate(self, model: SentenceTransformer) -> dict[Path, EvalReport]:
        """Final evaluation, by results file; each sentence is encoded once for all of them, and the
        embeddings go to the on-disk cache (:mod:`sentlab.cache`) so ``sentlab eval`` on the saved
        model (the same weights, hence the same key) encodes none of them again."""
        from sentlab.cache import EmbeddingStore

        return self.evaluate_encoded(EmbeddingCache(model, store=EmbeddingStore.default()))

    def evaluate_encoded(self, cache: EmbeddingCache) -> dict[Path, EvalReport]:
        """STS with cosine similarity; a method adds its own results with ``super()`` and ``cache``."""
        from sentlab.evaluation import CosineScorer, evaluate_sts

        report = evaluate_sts(CosineScorer(cache, name=str(self.paths.model)), self.cfg.data.data_dir)
        report.settings["config"] = self.cfg.model_dump()
        return {self.paths.results: report}


def register(method: type[Method]) -> type[Method]:
    """Class decorator: make ``method`` available by its name (configs, CLI)."""
    if method.name in METHODS and METHODS[method.name] is not method:
        raise ValueError(f"method {method.name!r} is registered twice")
    add_run_files(method.run_files)
    METHODS[method.name] = method
    # the config refuses the key that would choose the place of an MLP this method never puts on [CLS]
    refuses = {} if method.simcse_mlp else {"model.mlp_only_train": f"method {method.name} puts no SimCSE MLP on [CLS]"}
    if method.no_gradient_cache:
        refuses["train.mini_batch_size"] = method.no_gradient_cache
    if method.no_adapter:
        refuses["model.adapter"] = method.no_adapter
    if method.no_matryoshka:
        refuses["train.matryoshka_dims"] = method.no_matryoshka  # the weights need the dims: refused with them
    register_config(method.name, method.config_class, refuses)
    return method


def get_method(name: str) -> type[Method]:
    try:
        return METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r} (choose from {', '.join(METHODS)})") from None


# -- helpers shared by methods ------------------------------------------------------------------


def train_table(cfg: TrainConfig, first: int | None = None) -> Dataset:
    """The training sentences of a one-column method as a table with one ``sentence`` column: a text
    file memory-mapped (:func:`~sentlab.data.tables.sentence_table`: converted once, read only to
    ``data.limit``), or one column of a table file; with ``first``, only the first N of them (within
    ``data.limit``)."""
    path, limit, columns = _train_source(cfg, first)
    if columns:
        return data_columns(cfg, columns, ["sentence"], limit=limit)
    return sentence_table(path, limit=limit)


def data_columns(cfg: TrainConfig, columns: list[str], names: list[str], limit: int | None = None) -> Dataset:
    """``columns`` of ``data.train`` (a table file or a datasets source, with its split and subset) as
    ``names``, to ``limit`` rows (default ``data.limit``): the one reader of a method's training columns."""
    data = cfg.data
    limit = data.limit if limit is None else limit
    return column_table(data.train, columns, names, limit=limit, split=data.split, subset=data.subset)


def train_sha256(cfg: TrainConfig) -> str:
    """:func:`~sentlab.rank.index.corpus_sha256` of :func:`train_table`'s sentences, as the table's
    conversion recorded it (nothing is hashed again)."""
    path, limit, columns = _train_source(cfg)
    if is_datasets_source(cfg.data.train):  # the table's own fingerprint, with the rows it keeps
        table = open_source(cfg.data.train, cfg.data.split, cfg.data.subset)
        return f"{source_identity(table, limit)}:{','.join(columns or [])}"  # the column read, as a file's record
    return text_record(path, limit, columns=columns)["sha256"]  # one column: its values, a line each


def _train_source(cfg: TrainConfig, first: int | None = None) -> tuple[Path, int | None, list[str] | None]:
    path = Path(cfg.data.train)
    limit = cfg.data.limit
    if first is not None:
        limit = first if limit is None else min(limit, first)
    if isinstance(cfg.data.columns, dict):
        raise ConfigError(
            f"data.columns: {cfg.method} reads one text column; give its name as a list ([name]), not a mapping"
        )
    if not cfg.data.columns and (path.suffix.lower() in TABLE_SUFFIXES or is_datasets_source(cfg.data.train)):
        what = "a datasets source" if is_datasets_source(cfg.data.train) else f"a {path.suffix} file"
        raise ConfigError(f"{cfg.data.train}: {what} needs data.columns (the column that holds the sentences)")
    return path, limit, cfg.data.columns[:1] or None


def column_roles(columns: list[str] | dict[str, str], roles: tuple[str, ...], required: int, what: str) -> list[str]:
    """``data.columns`` as the file's column names in the order of ``roles``: a list names them in that
    order, a mapping by role (``{anchor: question, positive: answer}``); the first ``required`` roles
    must be there."""
    if isinstance(columns, dict):
        unknown = sorted(set(columns) - set(roles))
        if unknown:
            raise ConfigError(f"data.columns: {what} has the roles {', '.join(roles)}; not {', '.join(unknown)}")
        missing = [role for role in roles[:required] if role not in columns]
        if missing:
            raise ConfigError(f"data.columns: {what} needs the role(s) {', '.join(missing)}")
        return [columns[role] for role in roles if role in columns]
    if not required <= len(columns) <= len(roles):
        wanted = f"[{', '.join(roles[:required])}]" + (f" or [{', '.join(roles)}]" if len(roles) > required else "")
        raise ConfigError(f"data.columns: {what} needs {wanted}, got {list(columns)}")
    return list(columns)


def read_train_sentences(cfg: TrainConfig, first: int | None = None) -> list[str]:
    """:func:`train_table`'s sentences as a list (for the few that need them all in memory, e.g. the
    first N lines that initialise a flow or hold out an MLM evaluation)."""
    return train_table(cfg, first)["sentence"]


TeacherSetting = Literal[
    "torch fp32", "onnx fp32", "onnx int8", "openvino fp32", "openvino int8", "openvino int8-static"
]
TEACHER_SETTING_HELP = (
    "the runtime and precision the teacher encodes in: torch fp32 on the best device; onnx / openvino on the "
    "CPU, with their extras (on a GPU machine keep torch fp32). Check first that it keeps the teacher's "
    "embeddings (the distillation guide: the teacher's setting)"
)


def load_teacher(
    name: str, setting: str, trust_remote_code: bool, data_dir: str | Path | None = None
) -> SentenceTransformer:
    """The frozen teacher ``name`` in ``setting`` ("BACKEND PRECISION", :data:`TeacherSetting`): torch
    fp32 on the best device; onnx / openvino on the CPU. An int8 setting's fingerprint
    (:func:`~sentlab.rank.index.encoder_fingerprint`) names it; an fp32 runtime's is the weights' own, so
    a cache of its outputs keys the setting too (the embedding cache does: backend and precision).
    int8-static calibrates on the Wikipedia sentences of ``data_dir`` (a run's ``data.data_dir``; None:
    ``$SENTLAB_DATA``), whose digest is part of that fingerprint."""
    backend, precision = setting.split()
    if setting == "torch fp32":
        return load_encoder(name, trust_remote_code=trust_remote_code)
    from sentlab.encoders.backends import accelerate, calibration_sentences, require_extra

    require_extra(backend)  # a missing extra is the one line, before the calibration file is read
    calibration = calibration_sentences(data_dir) if precision == "int8-static" else None
    model = load_encoder(name, device="cpu", trust_remote_code=trust_remote_code)
    return accelerate(model, backend, precision, calibration=calibration)


def frozen_vectors(
    encoder: SentenceTransformer,
    fingerprint: str,
    sentences: Dataset,
    sentences_sha256: str,
    folder: Path,
    batch_size: int,
    progress: bool,
) -> np.ndarray:
    """L2-normalised vectors of the ``sentence`` column of ``sentences`` by a frozen ``encoder``, kept
    in ``folder`` (``vectors.npy`` and its record) and reused when made by the same encoder from the
    same text (``sentences_sha256``: :func:`train_sha256`) of the same number of rows, so --resume
    skips them. The text is encoded in chunks of :data:`FROZEN_CHUNK` rows into a memory-mapped file,
    so neither the text nor the vectors need to be in memory at once; the result is that file,
    memory-mapped. The folder is written as every cached folder is
    (:func:`sentlab.cache_folder.cached_folder`): a process killed mid-write leaves nothing that is
    read as complete."""
    made_from = {"encoder_fingerprint": fingerprint, "sentences_sha256": sentences_sha256, "rows": len(sentences)}

    def build(partial: Path) -> dict:
        shape = (len(sentences), encoder.get_embedding_dimension())
        out = np.lib.format.open_memmap(partial / FROZEN_FILE, mode="w+", dtype=np.float32, shape=shape)
        for start in range(0, len(sentences), FROZEN_CHUNK):
            out[start : start + FROZEN_CHUNK] = encoder.encode(
                sentences[start : start + FROZEN_CHUNK]["sentence"],
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=progress,
            )
        out.flush()
        del out
        return made_from

    cached_folder(Path(folder), made_from, build)
    return np.load(Path(folder) / FROZEN_FILE, mmap_mode="r")
