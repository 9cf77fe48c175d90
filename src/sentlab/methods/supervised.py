"""A supervised stage with sentence-transformers' own losses, to chain with the unsupervised
methods as in the TSDAE paper (Sec. 4): "target → NLI+STS", "NLI+STS → target", and pre-training
followed by in-domain supervised training (Fig. 2). A run's ``model/`` is the next run's
``model.name`` (``sentlab pipeline`` chains the configs).

``supervised.loss`` is any loss of :data:`sentlab.losses.catalog.LOSSES` by its sentence-transformers
class name (``GISTEmbedLoss``, ``CachedMultipleNegativesRankingLoss``, ``TripletLoss``,
``MarginMSELoss`` ...), with ``supervised.loss_args`` its own arguments, checked against the class's
signature; or one of sentlab's short names:

* ``mnrl`` - ``MultipleNegativesRankingLoss`` (the paper's MNRL, Sec. 5.1: cross-entropy over
  in-batch negatives, cosine × ``scale``; with hard-negative columns, supervised SimCSE's objective
  with sentence-transformers' head-less encoder) on (anchor, positive[, negative_1 ... negative_n]) rows;
* ``cosine-mse`` - ``CosineSimilarityLoss`` (MSE between the cosine and the gold score scaled to
  [0, 1]), the paper's MSE loss on STS-B train / TwitterPara;
* ``cosent`` - ``CoSENTLoss`` (Su 2022) and ``angle`` - ``AnglELoss`` (Li and Li 2023, the same
  ranking loss on the angle difference) on scored pairs.

The rows a loss reads follow its kind (:mod:`sentlab.losses.catalog`): texts (anchor, positive and
any number of negative columns, an n-tuple, so an anchor is not repeated over rows), scored pairs,
pairs labelled 0 / 1, texts with a class, pairs with a class, or texts whose labels a teacher model
gives (``supervised.teacher``: distillation). A model argument (GISTEmbed's ``guide``) is a model name
or folder, loaded as the start model is.

``supervised.format`` says how ``data.train`` is read: ``table`` (a .jsonl / .csv / .tsv whose
``data.columns`` name, in order or by role, the columns of the loss's kind), ``snli`` (a folder in
SentEval's SNLI layout; triplets from the ``supervised.split`` split) or ``stsb`` (an
``sts-<split>.csv`` of SentEval's STS-B, scores 0-5).

Scores are on the scale ``supervised.score_range`` ([low, high]; [0, 5] for ``stsb``); a score
outside it, or one that is not a finite number, is refused with its row, and each becomes
(score - low) / (high - low). ``cosine-mse`` regresses the cosine on that value, so a table's scale
must be stated; ``cosent`` and ``angle`` read only the scores' order, and without a stated scale take
the data's lowest and highest score (said in one line).

A column of numbers is never read as a text: scored pairs under a loss that reads texts are refused
in one line. Keys the settings leave idle (``split`` outside ``snli``, ``loss.temperature`` for a loss
without a similarity scale, ``score_range`` outside scored pairs, ``teacher``
outside distillation, ``data.columns`` outside ``table``) and ``loss.hard_negative_weight`` (the
negatives are the data's columns) are refused when set (:meth:`SupervisedConfig.unread`).
``loss.temperature`` is a loss's ``scale`` as 1 / temperature (20 at its default, 0.05, every
class's default); GISTEmbed's own ``temperature`` (default 0.01) stays in ``loss_args``.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from datasets import Dataset, DatasetDict
from pydantic import Field, FiniteFloat, ValidationError, field_validator, model_validator
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.data.nli import read_snli_triplets
from sentlab.data.readers import table_line
from sentlab.data.sts import read_stsb
from sentlab.errors import ConfigError, DataError, SentlabError
from sentlab.losses.catalog import (
    LOSSES,
    SHORT_NAMES,
    LossSpec,
    build_loss,
    cached_class_name,
    capabilities,
    check_arguments,
    loss_class,
)
from sentlab.methods.base import (
    TEACHER_SETTING_HELP,
    Method,
    TeacherSetting,
    column_roles,
    data_columns,
    load_teacher,
    register,
)
from sentlab.progress import say
from sentlab.training.config import (
    DEFAULT_TEMPERATURE,
    SET_LOSS_KEYS,
    TrainConfig,
    _Section,
    deprecation_notice,
    scale_as_temperature,
    scale_of,
)

SCORED_LOSSES = tuple(short for short, name in SHORT_NAMES.items() if LOSSES[name].kind == "scored")
# the columns each kind of loss reads, in order (texts and distill: then any negatives)
KIND_ROLES = {
    "scored": ("text1", "text2", "score"),
    "binary": ("text1", "text2", "label"),
    "classes": ("text", "label"),
    "pair-classes": ("text1", "text2", "label"),
}


PROJECTION_FIT_ROWS = 20_000  # supervised.projection_init least_squares: the rows its fit reads
PROJECTION_RIDGE = 1e-3  # its ridge, a share of the embeddings' mean variance (Supervised.fit_projection)


class SupervisedSection(_Section):
    loss: str = Field(
        "mnrl",
        description="a sentence-transformers loss by class name (e.g. GISTEmbedLoss, TripletLoss) or a short name: "
        "mnrl (pairs or n-tuples); cosine-mse, cosent, angle (scored pairs)",
    )
    loss_args: dict[str, Any] = Field(
        default_factory=dict,
        description="the loss class's own arguments, checked against its signature (a model argument such as "
        "GISTEmbed's guide: a model name or folder; similarity_fct / loss_fct / distance_metric: a name)",
    )
    teacher: str | None = Field(
        None,
        description="distillation losses (MSELoss, MarginMSELoss ...): the model whose outputs are the labels; a "
        "cross-encoder gives MarginMSELoss / DistillKLDivLoss their labels from its scores of each pair",
    )
    teacher_setting: TeacherSetting = Field(
        "torch fp32",
        description=f"a sentence-transformers teacher: {TEACHER_SETTING_HELP}; every training set's teacher labels in it",
    )
    projection_init: Literal["random", "least_squares"] = Field(
        "random",
        description="a projection onto a teacher's embeddings (MSELoss / EmbedDistillLoss with loss_args."
        "projection_dim) starts random, as sentence-transformers builds it, or least_squares: a ridge "
        f"least-squares fit to the teacher's labels of the first {PROJECTION_FIT_ROWS:,} rows from the start "
        "model's embeddings before training (a linear probe first, as LP-FT; the run's projection_init.json "
        "says what the fit left)",
    )
    format: Literal["table", "snli", "stsb"] = "table"
    split: str = Field("train", description="format snli: the split of the SNLI folder")
    score_range: tuple[FiniteFloat, FiniteFloat] | None = Field(
        None,
        description="the scores' scale [low, high]: a score outside it is refused (stsb: [0, 5]; needed by "
        "cosine-mse on a table; unset with cosent / angle, which read only the order: the data's lowest and highest)",
    )

    @property
    def loss_class(self) -> type[nn.Module]:
        return loss_class(self.loss)

    @property
    def spec(self) -> LossSpec:
        return LOSSES[self.loss_class.__name__]

    @field_validator("score_range")
    @classmethod
    def _ordered(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not value[0] < value[1]:
            raise ValueError(f"needs low < high, got {list(value)}")
        return value


def _takes(cls: type, argument: str) -> bool:
    return argument in inspect.signature(cls.__init__).parameters


class SupervisedConfig(TrainConfig):
    method: Literal["supervised"]
    supervised: SupervisedSection = Field(default_factory=SupervisedSection)

    section = "supervised"
    section_required = False
    not_read = {
        "loss.hard_negative_weight": "its loss is supervised.loss, with its arguments in supervised.loss_args; "
        "negatives are the data's columns"
    }
    idle_when = {
        **TrainConfig.idle_when,
        "train.mini_batch_size": "with a loss of one row at a time, or MegaBatchMarginLoss, which chunks by itself",
        "train.matryoshka_dims": "with a loss not scored by cosines alone",
        "supervised.split": "outside format snli (stsb takes its split from the file's name)",
        "loss.temperature": "with a loss without a similarity scale",
        "supervised.score_range": "outside scored pairs, or with data.sets that each give their own",
        "supervised.teacher": "outside distillation losses, or with data.sets that each give their own",
        "supervised.teacher_setting": "without a teacher",
        "supervised.projection_init": "without a projection onto a teacher's embeddings",
        "supervised.loss": "with data.sets that each name their own loss (so loss_args and format too)",
        "data.columns": "outside format table, or with data.sets (each set has its own)",
        "data.prompts": "with data.sets that each give their own prompts",
    }

    def loss_idle(self, s: SupervisedSection) -> dict[str, str]:
        """The keys the loss of section ``s`` leaves idle, each with why (none for a loss that does not
        exist: :meth:`_known_loss` says why, in one line)."""
        try:
            cls = s.loss_class
        except ConfigError:
            return {}
        idle = {}
        spec, name = LOSSES[cls.__name__], s.loss if s.loss in SHORT_NAMES else cls.__name__
        if s.format != "snli":
            where = "the split is data.train's file name, sts-<split>.csv" if s.format == "stsb" else "data.train"
            idle["supervised.split"] = f"it is read with format snli only; with format {s.format}, {where}"
        if not _takes(cls, "scale"):
            own = " (its own temperature is supervised.loss_args.temperature)" if _takes(cls, "temperature") else ""
            idle["loss.temperature"] = f"supervised.loss {name} has no similarity scale{own}"
        can = capabilities(cls, s.loss_args, name)
        if can.no_gradient_cache:
            idle["train.mini_batch_size"] = can.no_gradient_cache
        if can.no_matryoshka:
            idle["train.matryoshka_dims"] = can.no_matryoshka
        if spec.kind != "scored":
            idle["supervised.score_range"] = f"supervised.loss {name} reads no scores"
        if spec.kind != "distill":
            idle["supervised.teacher"] = f"supervised.loss {name} is not a distillation loss"
        if spec.kind != "distill" or s.teacher is None:
            idle["supervised.teacher_setting"] = "no teacher labels the rows" + (
                f" (supervised.loss {name} is not a distillation loss)" if spec.kind != "distill" else ""
            )
        if spec.teacher != "embedding" or s.teacher is None or not s.loss_args.get("projection_dim"):
            idle["supervised.projection_init"] = (
                "no projection onto a teacher's embeddings is trained (a teacher's embeddings as the labels, "
                "MSELoss or EmbedDistillLoss, and supervised.loss_args.projection_dim)"
            )
        if s.format != "table":
            idle["data.columns"] = f"supervised.format {s.format} has its own columns"
        return idle

    def set_section(self, name: str) -> SupervisedSection:
        """The ``supervised`` section the training set ``name`` trains with: its own loss keys
        (:data:`~sentlab.training.config.SET_LOSS_KEYS`) in place of ``supervised``'s; a set that names
        a ``loss`` takes none of ``supervised``'s loss keys."""
        own = self.data.sets[name].own_loss_keys()
        shared = self.supervised.model_dump(exclude=set(SET_LOSS_KEYS) if "loss" in own else set())
        return SupervisedSection(**{**shared, **own})

    def set_inherits(self, name: str, key: str) -> bool:
        """Whether the training set ``name`` reads ``supervised.KEY`` (a loss key it does not give)."""
        own = self.data.sets[name].own_loss_keys()
        return key not in own and "loss" not in own

    def unread(self) -> dict[str, str]:
        idle = super().unread()
        if not self.data.sets:
            return {**idle, **self.loss_idle(self.supervised)}
        try:
            sections = {name: self.set_section(name) for name in self.data.sets}
        except ValidationError:  # a set's bad key: _each_set_trains says which, in one line
            return idle
        per_set = {name: self.loss_idle(section) for name, section in sections.items()}
        for key, why in per_set[next(iter(per_set))].items():  # idle for every set: no set reads it
            if all(key in other for other in per_set.values()):
                idle[key] = why
        for key in SET_LOSS_KEYS:  # a loss key of supervised no set takes (each gives its own)
            readers = [n for n in sections if self.set_inherits(n, key)]
            dotted = f"supervised.{key}"
            if not readers:
                idle[dotted] = "every set of data.sets " + (
                    "names its own loss" if key == "loss" else f"gives its own {key} or names its own loss"
                )
            elif all(dotted in per_set[n] for n in readers):
                idle[dotted] = per_set[readers[0]][dotted]
        if all(part.prompts is not None for part in self.data.sets.values()):
            idle["data.prompts"] = "every set of data.sets gives its own prompts"
        return idle

    @model_validator(mode="before")
    @classmethod
    def _defaults_of_the_start_and_the_data(cls, tree: Any) -> Any:
        """What a supervised run does when the config does not say: it trains at the start model's own
        length (``model.max_seq_length``: 256 for all-MiniLM-L6-v2, not the shared default of 32), and
        selects on no dev task unless one is named (``eval.dev_task``: the user's card, ``STS-B`` when
        asked; the data is the user's, not STS-B's)."""
        if not isinstance(tree, Mapping):
            return tree
        model = tree.get("model") if isinstance(tree.get("model"), Mapping) else None
        evaluation = tree.get("eval", {}) if isinstance(tree.get("eval", {}), Mapping) else None
        tree = dict(tree)
        if evaluation is not None and "dev_task" not in evaluation:
            tree["eval"] = {**evaluation, "dev_task": "none"}
        name = model.get("name") if model is not None else None
        from sentlab.encoders.loading import is_static_model

        try:
            static = bool(name) and not model.get("random_init") and is_static_model(name)
        except SentlabError:  # a start that does not load: said where it is loaded, in one line
            static = False
        if static:  # a static model reads whole texts: no length of its own to take (a length set is refused
            return tree  # by the config's start_lacks, a dumped default passes)
        if model is not None and "max_seq_length" not in model and name and not model.get("random_init"):
            from sentlab.encoders.loading import inference_max_seq_length

            try:
                tree["model"] = {
                    **model,
                    "max_seq_length": inference_max_seq_length(name, model.get("trust_remote_code") is True),
                }
            except SentlabError as err:  # a start that does not load: said where it is loaded, in one line
                say(f"model.max_seq_length: the start model's own length is unknown ({err}); 32")
        return tree

    @model_validator(mode="before")
    @classmethod
    def _moved_arguments(cls, tree: Any) -> Any:
        """``supervised.loss_args.scale`` (0.2.0) is read as ``loss.temperature`` (1 / scale) with a
        one-line notice until 0.3.0; beside a ``loss.temperature`` set to another value than its
        default, the argument stays for :meth:`_known_loss` to refuse."""
        section = tree.get("supervised") if isinstance(tree, Mapping) else None
        arguments = section.get("loss_args") if isinstance(section, Mapping) else None
        if not isinstance(arguments, Mapping) or "scale" not in arguments:
            return tree
        try:
            if not _takes(loss_class(section.get("loss", SupervisedSection().loss)), "scale"):
                return tree  # a scale the class does not take: check_arguments says so
        except ConfigError:
            return tree  # _known_loss says why, in one line
        moved = scale_as_temperature(arguments["scale"])
        loss = tree.get("loss") if isinstance(tree.get("loss"), Mapping) else {}
        if loss.get("temperature", DEFAULT_TEMPERATURE) not in (moved, DEFAULT_TEMPERATURE):
            return tree  # the default is no setting (a config dumped whole lists it)
        tree = {**tree, "supervised": {**section, "loss_args": {k: v for k, v in arguments.items() if k != "scale"}}}
        tree["loss"] = {**loss, "temperature": moved}
        deprecation_notice("supervised.loss_args.scale", "loss.temperature = 1 / supervised.loss_args.scale", "0.3.0")
        return tree

    @model_validator(mode="after")
    def _known_loss(self) -> SupervisedConfig:
        """The loss's class, its arguments against its signature, and what it needs beside them; with
        ``data.sets``, each set's loss as it trains (:meth:`set_section`), its errors naming the set."""
        if not self.data.sets:
            try:
                self.check_loss(self.supervised)
            except ConfigError as error:
                raise ValueError(str(error)) from None
        return self

    def name_the_set(self, name: str, message: str) -> str:
        """``message`` about the training set ``name``'s loss, naming the key as the config holds it:
        ``data.sets.NAME.teacher`` for a key the set gives (or any loss key of a set that names its
        loss), else ``data.sets.NAME: supervised.teacher ...`` (a key the set takes from supervised)."""
        if message.startswith("data.sets."):
            return message
        own = self.data.sets[name].own_loss_keys()
        found = re.match(r"supervised\.(\w+)", message)
        if found and (found.group(1) in own or ("loss" in own and found.group(1) in SET_LOSS_KEYS)):
            return f"data.sets.{name}.{message.removeprefix('supervised.')}"
        if message.startswith("data.prompts") and self.data.sets[name].prompts is not None:
            return f"data.sets.{name}.{message.removeprefix('data.')}"
        return f"data.sets.{name}: {message}"

    @model_validator(mode="after")
    def _each_set_trains(self) -> SupervisedConfig:
        """Each training set's loss passes every check ``supervised.loss`` passes (:meth:`check_loss`);
        a set's own key its loss does not read is refused; the trainer's one batch sampler and
        ``train.matryoshka_dims`` hold for every set."""
        sets = self.data.sets
        if not sets:
            return self
        kinds = {}
        for name, part in sets.items():
            try:
                section = self.set_section(name)
            except ValidationError as err:
                error = err.errors()[0]
                where = ".".join(str(p) for p in error["loc"])
                raise ValueError(f"data.sets.{name}.{where}: {error['msg'].removeprefix('Value error, ')}") from None
            try:
                self.check_loss(section, in_set=True)
            except ConfigError as error:
                raise ValueError(self.name_the_set(name, str(error))) from None
            idle = self.loss_idle(section)
            given = [*part.own_loss_keys(), *(["columns"] if part.columns else [])]
            for key in given:
                why = idle.get("data.columns" if key == "columns" else f"supervised.{key}")
                if why:
                    raise ValueError(f"data.sets.{name}.{key}: {why}; unset it")
            if self.train.matryoshka_dims is not None and "train.matryoshka_dims" in idle:
                raise ValueError(
                    f"train.matryoshka_dims: the saved model claims every set trained its truncated embeddings, and "
                    f"data.sets.{name}'s loss cannot: {idle['train.matryoshka_dims']}"
                )
            kinds[name] = LOSSES[section.loss_class.__name__].kind
        grouped = sorted(n for n, kind in kinds.items() if kind == "classes")
        if grouped and len(grouped) < len(kinds):
            others = sorted(set(kinds) - set(grouped))
            raise ValueError(
                f"data.sets.{grouped[0]}: its loss batches texts two of a class at a time (sentence-transformers' "
                f"GroupByLabelBatchSampler), and the trainer takes one batch sampler for every set; "
                f"data.sets.{others[0]} is batched otherwise: train them in two runs"
            )
        return self

    def check_loss(self, s: SupervisedSection, in_set: bool = False) -> None:
        """The checks every loss passes: its class, its arguments against its signature, and what it
        needs beside them, as one-line :class:`ConfigError` naming ``supervised``'s keys (a training
        set's are renamed by :meth:`name_the_set`)."""
        cls = s.loss_class
        check_arguments(cls, s.loss_args)
        if _takes(cls, "scale") and "scale" in s.loss_args:
            if in_set:  # only supervised's 0.2.0 key is moved (_moved_arguments)
                raise ConfigError(
                    "supervised.loss_args.scale: a loss's scale is loss.temperature, 1 / scale, for every set "
                    "(0.05 for a scale of 20); set loss.temperature"
                )
            raise ConfigError(  # a 0.2.0 key beside loss.temperature (_moved_arguments)
                "supervised.loss_args.scale: it is loss.temperature now, which is set too; set loss.temperature "
                "only (a scale is 1 / temperature: 0.05 for a scale of 20)"
            )
        spec = LOSSES[cls.__name__]
        if (
            "mini_batch_size" in s.loss_args
            and self.train.mini_batch_size is not None
            and cached_class_name(cls.__name__)
        ):
            raise ConfigError(
                "supervised.loss_args.mini_batch_size: train.mini_batch_size is set too, and it is the same setting "
                f"for {cls.__name__}; set train.mini_batch_size only"
            )
        if spec.chunks_itself and s.loss_args.get("use_mini_batched_version") is False:
            if "mini_batch_size" in s.loss_args:
                raise ConfigError(
                    "supervised.loss_args.mini_batch_size: use_mini_batched_version: false embeds the batch whole; "
                    "remove one of the two"
                )
        if spec.kind == "classes" and (self.train.batch_size < 4 or self.train.batch_size % 2):
            raise ConfigError(
                f"train.batch_size: {cls.__name__} batches texts two of a class at a time "
                f"(sentence-transformers' GroupByLabelBatchSampler): an even number of at least 4, not {self.train.batch_size}"
            )
        if spec.kind == "distill" and s.teacher is None:
            raise ConfigError(
                f"supervised.teacher: {cls.__name__} learns a teacher model's outputs; name the teacher (a model "
                "name or folder)"
            )
        if cls.__name__ == "CosineSimilarityLoss" and s.format == "table" and s.score_range is None:
            raise ConfigError(
                "supervised.score_range: cosine-mse regresses the cosine on the score scaled to [0, 1], so state "
                "the scores' scale, e.g. [0, 5] (the data's own lowest and highest need not be the scale's ends)"
            )


def _number(value: object) -> float | None:
    """``value`` as a float when it is one (a number, or a text that reads as one), else None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@register
class Supervised(Method):
    """One supervised stage with a sentence-transformers loss (see module doc)."""

    name = "supervised"
    config_class = SupervisedConfig
    simcse_mlp = False
    no_adapter = None  # the encoder it saves is what the loss trains
    no_matryoshka = None  # losses of cosines take it; the others refuse it (SupervisedConfig.unread)
    no_gradient_cache = None  # losses that compare the batch's rows take it; the others refuse it (unread)
    teacher_width: int | None = None  # distillation: the teacher's embedding width (train_dataset)
    labelling: dict | None = None  # distillation: what labelling cost (teacher_labels), written beside the run
    # distillation onto embeddings: the first column's texts and the teacher's labels of them, for the
    # least-squares projection (supervised.projection_init), at most PROJECTION_FIT_ROWS of each
    fit_rows: tuple[list[str], Any, Any] | None = None  # (texts, labels, the rows' data.prompts)
    set_name: str | None = None  # the training set of data.sets this method reads alone (set_method)

    @property
    def spec(self) -> LossSpec:
        return self.cfg.supervised.spec

    @property
    def keeps_start_normalize(self) -> bool:
        """A loss of directions keeps the start model's ``Normalize``; one of dot products or distances
        (MarginMSE, triplet, MSE distillation, MNRL with ``dot_score``) saves its embeddings as it trained
        them (:class:`~sentlab.losses.catalog.Capabilities`); with a loss per training set, only when
        every set's loss keeps it."""
        if self.cfg.data.sets:
            return all(self.set_method(name).keeps_start_normalize for name in self.cfg.data.sets)
        s = self.cfg.supervised
        return capabilities(s.loss_class, s.loss_args).keeps_start_normalize

    @property
    def in_batch_negatives(self) -> bool:
        """The loss scores a row against the batch's other rows; with ``data.sets``, any set's does
        (``train.no_duplicates`` then batches every set without a repeated text)."""
        if self.cfg.data.sets:
            return any(self.set_method(name).in_batch_negatives for name in self.cfg.data.sets)
        return self.spec.kind == "texts" and self.spec.compares_rows

    @property
    def batch_columns(self) -> int:
        """Sequences a row embeds (train.mini_batch_size: auto's estimate): a table's text columns."""
        if self.cfg.data.sets:  # each set names its own columns (the most any set embeds)
            return max(self.set_method(name).batch_columns for name in self.cfg.data.sets)
        columns, kind, form = self.cfg.data.columns, self.spec.kind, self.cfg.supervised.format
        if form != "table" or not columns:
            return {"snli": 3, "stsb": 2}.get(form, 3)  # triplets; scored pairs (the score is no text)
        return len(columns) if kind in ("texts", "distill") else len(columns) - 1

    def training_arguments(self) -> dict[str, object]:
        # data.sets: every set's loss is of this kind or none is (SupervisedConfig._each_set_trains)
        kinds = [self.set_method(n).spec.kind for n in self.cfg.data.sets] if self.cfg.data.sets else [self.spec.kind]
        if "classes" in kinds:  # a batch needs several texts of a class (sentence-transformers' advice)
            from sentence_transformers.base.sampler import GroupByLabelBatchSampler

            return {"batch_sampler": GroupByLabelBatchSampler}
        return {}

    def training_prompts(
        self, dataset: Dataset | DatasetDict, model: SentenceTransformer
    ) -> dict[str, str] | dict[str, dict[str, str]]:
        """``data.prompts`` by the table's columns: one text for every text column, or a mapping whose
        keys are the table's columns (anchor, positive ...) or the file's (``data.columns``); a key that
        names no text column is one line. Unset, the start model's own prompts
        (:func:`~sentlab.encoders.prompts.role_prompt`) for a loss of queries and documents (texts,
        distillation): its query prompt before the anchor, its document prompt before the others.
        With ``data.sets``, each set's (its own ``prompts``, else ``data.prompts``), by the set's name
        where they differ (sentence-transformers gives each set's batches its own)."""
        from sentlab.encoders.prompts import check_prompts_apply, role_prompt

        if isinstance(dataset, DatasetDict):
            chosen = {name: self.in_set(name, lambda m: m.training_prompts(dataset[name], model)) for name in dataset}
            first = next(iter(chosen.values()))
            return first if all(other == first for other in chosen.values()) else chosen
        given, kind = self.cfg.data.prompts, self.spec.kind
        names = dataset.column_names
        texts = [c for c in names if c not in ("label", "score")]
        if given is None:
            if kind not in ("texts", "distill"):
                return {}
            chosen = {c: role_prompt(model, "query" if i == 0 else "document") for i, c in enumerate(texts)}
            chosen = {c: p for c, p in chosen.items() if p}
            if chosen:
                say(
                    "data.prompts: the start model's own prompts: " + ", ".join(f"{c} {p!r}" for c, p in chosen.items())
                )
        elif isinstance(given, str):
            chosen = dict.fromkeys(texts, given)
        else:
            columns = self.cfg.data.columns
            by_file = dict(zip(columns.values(), columns.keys())) if isinstance(columns, dict) else {}
            if isinstance(columns, list) and self.cfg.supervised.format == "table":
                by_file = dict(zip(columns, texts))
            chosen = {}
            aliases = {"text1": "sentence1", "text2": "sentence2"}  # scored pairs' roles, as the table names them
            by_file = {name: aliases.get(role, role) if role not in texts else role for name, role in by_file.items()}
            for key, prompt in given.items():
                column = key if key in texts else by_file.get(key) or aliases.get(key)
                if column not in texts:
                    raise ConfigError(
                        f"data.prompts: {key!r} is not a text column of the training table ({', '.join(texts)}"
                        + (f"; in the file: {', '.join(by_file)}" if by_file else "")
                        + ")"
                    )
                chosen[column] = prompt
            if "positive" in chosen:  # a negative is a document as the positive is, unless named
                chosen |= {c: chosen["positive"] for c in texts if c.startswith("negative") and c not in chosen}
            chosen = {c: p for c, p in chosen.items() if p}
        check_prompts_apply(model, list(chosen.values()), "data.prompts")
        return chosen

    # -- data ------------------------------------------------------------------------------------
    def set_method(self, name: str) -> Supervised:
        """This method on the training set ``name`` of ``data.sets`` alone: its ``data`` keys in place of
        ``data.sets``, its prompts, and its loss (:meth:`SupervisedConfig.set_section`), so a set is
        read, checked, labelled and trained as ``data.train`` would be. One for each set, kept (a
        teacher's width, read as it labels, is checked when the loss is built)."""
        kept = self.__dict__.setdefault("_set_methods", {})
        if name not in kept:
            cfg, part = self.cfg, self.cfg.data.sets[name]
            read = part.model_dump(exclude_unset=True, include={"train", "columns", "limit", "split", "subset"})
            if part.prompts is not None:
                read["prompts"] = part.prompts
            section = cfg.set_section(name)
            update = {"data": cfg.data.model_copy(update={"sets": {}, **read}), "supervised": section}
            if "train.mini_batch_size" in cfg.loss_idle(section):  # read by another set's loss only
                update["train"] = cfg.train.model_copy(update={"mini_batch_size": None})
            kept[name] = type(self)(cfg.model_copy(update=update), self.paths)
            kept[name].set_name = name
            kept[name].resume_from = self.resume_from
        return kept[name]

    def in_set(self, name: str, call: Callable[[Supervised], Any]) -> Any:
        """``call`` on the training set ``name``'s method, a one-line error naming the set
        (:meth:`SupervisedConfig.name_the_set`)."""
        try:
            return call(self.set_method(name))
        except ConfigError as err:
            raise ConfigError(self.cfg.name_the_set(name, str(err))) from None

    @property
    def set_losses(self) -> bool:
        """Whether the training sets train with losses of their own (a set's loss keys differ from
        ``supervised``'s): each set's loss is then built apart (:class:`~sentlab.losses.sets.SetLosses`);
        else one loss serves all (a key given at its own default changes nothing)."""
        return any(self.cfg.set_section(name) != self.cfg.supervised for name in self.cfg.data.sets)

    def training_loss(self, model: SentenceTransformer) -> nn.Module:
        """With a loss per training set, each set's as that set alone would train it (its chunking
        and Matryoshka included), held by the set's name; else the one loss (:meth:`Method.training_loss`)."""
        sets = self.cfg.data.sets
        if not sets or not self.set_losses:
            if sets:  # one loss for every set: the width of the teacher they share, read as they were labelled
                widths = [self.set_method(name).teacher_width for name in sets]
                self.teacher_width = next((w for w in widths if w is not None), None)
            return super().training_loss(model)
        from sentlab.losses.sets import SetLosses

        losses = SetLosses({name: self.in_set(name, lambda m: m.training_loss(model)) for name in sets})
        losses.chunking = {"sets": {name: getattr(loss, "chunking", None) for name, loss in losses.items()}}
        say("data.sets: a loss per set: " + ", ".join(f"{n} {self.set_method(n).cfg.supervised.loss}" for n in sets))
        return losses

    def train_dataset(self) -> Dataset | DatasetDict:
        """The rows of ``data.train``, or a ``DatasetDict`` of ``data.sets`` by name (each read as
        ``data.train`` is), which sentence-transformers batches a set at a time (``data.sampler``)."""
        if self.cfg.data.sets:  # a batch is one set's, so the sets' columns may differ
            table = DatasetDict({name: self._one_set(name) for name in self.cfg.data.sets})
            costs = {n: self.set_method(n).labelling for n in self.cfg.data.sets if self.set_method(n).labelling}
        else:
            table = self.one_dataset()
            costs = {"": self.labelling} if self.labelling else {}
        kept = self.paths.root / "teacher_labels.json" if self.paths is not None else None
        # what the teacher's labels cost, as the run first labelled them (a resume reads them from the cache)
        if costs and kept is not None and self.paths.root.is_dir() and not kept.is_file():
            from sentlab.paths import json_text, write_text_atomic

            write_text_atomic(kept, json_text(costs.get("", costs)))
        return table

    def _one_set(self, name: str) -> Dataset:
        """The set ``name`` read as ``data.train`` is; its errors name the set (``data.sets.NAME.columns``)."""
        try:
            return self.set_method(name).one_dataset()
        except (ConfigError, DataError) as err:
            text = str(err)
            where = f"data.sets.{name}"
            named = f"{where}.{text.removeprefix('data.')}" if text.startswith("data.") else f"{where}: {text}"
            raise type(err)(named) from None

    def one_dataset(self) -> Dataset:
        s, data = self.cfg.supervised, self.cfg.data
        kind, name = self.spec.kind, s.loss
        if s.format == "snli":
            # triplets: losses of texts that take a negative, and the distillations that read one (MarginMSE,
            # DistillKLDiv: the teacher labels the triplet); MSE / EmbedDistill would pull the negative in
            reads = self.spec.max_negatives != 0 if kind == "texts" else self.spec.teacher in ("margins", "scores")
            if kind not in ("texts", "distill") or not reads:
                raise ConfigError(f"supervised.format snli gives triplets; supervised.loss {name} does not read them")
            rows = read_snli_triplets(data.train, s.split)[: data.limit]
            table = Dataset.from_dict(
                {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "negative": [r[2] for r in rows]}
            )
            return self.teacher_labels(table) if kind == "distill" else table
        if s.format == "stsb":
            if kind != "scored":
                raise ConfigError(
                    f"supervised.format stsb gives scored pairs; supervised.loss {name} does not read them (use "
                    f"{' / '.join(SCORED_LOSSES)}, or a loss of scored pairs)"
                )
            path = Path(data.train)
            pairs = read_stsb(path.parent, path.stem.removeprefix("sts-"))
            n = data.limit or len(pairs.scores)
            scores = self.scaled([float(x) for x in pairs.scores[:n]], s.score_range or (0.0, 5.0), "score")
            return Dataset.from_dict(
                {"sentence1": pairs.sentences1[:n], "sentence2": pairs.sentences2[:n], "score": scores}
            )
        if kind in ("texts", "distill"):
            table = self.text_table()
            return self.teacher_labels(table) if kind == "distill" else table
        if kind == "scored":
            return self.scored_table()
        return self.labelled_table(kind)

    def text_table(self) -> Dataset:
        """(anchor[, positive][, negative_1 ... negative_n]) texts: one negative is ``negative``."""
        s, data, spec = self.cfg.supervised, self.cfg.data, self.spec
        name = s.loss
        if isinstance(data.columns, dict) and {"text1", "text2", "score", "label"} & set(data.columns):
            scored = "label" not in data.columns
            what, losses = (
                ("{text1, text2, score} are scored pairs", ", ".join(SCORED_LOSSES))
                if scored
                else (
                    "{text1, text2, label} are labelled pairs",
                    "ContrastiveLoss, OnlineContrastiveLoss or SoftmaxLoss",
                )
            )
            raise ConfigError(
                f"data.columns: {what}; supervised.loss {name} reads (anchor, positive[, negative_1 ... negative_n]) "
                f"texts: set supervised.loss to {losses}"
            )
        if spec.teacher == "embedding" and isinstance(data.columns, dict):
            negatives = sorted(role for role in data.columns if role.startswith("negative"))
            if negatives:  # every column learns the teacher's embedding of the first: a negative would too
                raise ConfigError(
                    f"data.columns: supervised.loss {name} pulls every column toward the teacher's embedding of the "
                    f"first, so the role {negatives[0]} would be pulled toward its anchor; drop it, or use "
                    "MarginMSELoss / DistillKLDivLoss, which read negatives"
                )
        least = 1 if spec.teacher == "embedding" else 2 + spec.min_negatives
        most = None if spec.max_negatives is None else 2 + spec.max_negatives
        if spec.teacher == "embedding" and isinstance(data.columns, list) and len(data.columns) > 2:
            raise ConfigError(  # a list's third column is a negative for every other loss: a triplet file
                f"data.columns: supervised.loss {name} pulls every column toward the teacher's embedding of the "
                f"first, and a list's third column ({data.columns[2]}) is a negative for the other losses; give "
                "[text] or [source, translation] (one translation a row), or MarginMSELoss / DistillKLDivLoss, "
                "which read negatives"
            )
        columns, roles = text_columns(data.columns, least, most, f"supervised.loss {name}")
        table = self.checked(data_columns(self.cfg, columns, roles))
        for role, column in zip(roles, columns):
            if all(_number(value) is not None for value in table[role]):
                raise DataError(
                    f"{data.train}: column {column!r} ({role}) holds numbers, not texts: supervised.loss "
                    f"{name} reads texts; for scored pairs set supervised.loss to {', '.join(SCORED_LOSSES)} "
                    "and data.columns to {text1, text2, score}"
                )
        return table

    def scored_table(self) -> Dataset:
        s, data = self.cfg.supervised, self.cfg.data
        columns = column_roles(data.columns, KIND_ROLES["scored"], 3, f"supervised.loss {s.loss} (scored pairs)")
        table = self.checked(data_columns(self.cfg, columns, ["sentence1", "sentence2", "score"]))
        raw = self.numbers(table["score"], columns[2])
        if s.score_range is None:  # cosent / angle: only the order counts (cosine-mse is refused unstated)
            low, high = min(raw), max(raw)
            if low == high:
                raise DataError(f"{data.train}: every score is {low:g}; scored pairs need scores that differ")
            say(
                f"supervised.score_range: {s.loss} reads only the scores' order; mapped from the data's "
                f"[{low:g}, {high:g}] to [0, 1]"
            )
        scores = self.scaled(raw, s.score_range or (low, high), columns[2])
        return table.remove_columns("score").add_column("score", scores)

    def labelled_table(self, kind: str) -> Dataset:
        """Pairs labelled 0 / 1 (``binary``), or texts or pairs with a class: a class that reads as a
        whole number is that number, else the classes (texts) are numbered in sorted order (said)."""
        s, data = self.cfg.supervised, self.cfg.data
        roles = KIND_ROLES[kind]
        columns = column_roles(data.columns, roles, len(roles), f"supervised.loss {s.loss}")
        table = self.checked(data_columns(self.cfg, columns, list(roles)))
        values = list(table["label"])
        numbers = [_number(v) for v in values]
        if all(n is not None and math.isfinite(n) and n == int(n) for n in numbers):
            labels = [int(n) for n in numbers]
        elif kind == "binary":
            bad = next(i for i, n in enumerate(numbers) if n is None or not math.isfinite(n) or n != int(n))
            raise DataError(
                f"{data.train}:{table_line(data.train, bad)}: label column {columns[-1]!r}: {values[bad]!r} is not 0 or 1"
            )
        else:
            classes = sorted({str(v) for v in values})
            number = {c: i for i, c in enumerate(classes)}
            labels = [number[str(v)] for v in values]
            say(f"{columns[-1]}: {len(classes)} classes numbered in sorted order: " + ", ".join(classes[:5]))
        if kind == "binary" and set(labels) - {0, 1}:
            bad = next(i for i, v in enumerate(labels) if v not in (0, 1))
            raise DataError(
                f"{data.train}:{table_line(data.train, bad)}: label column {columns[-1]!r}: {values[bad]!r} is not 0 or 1"
            )
        if kind == "classes":
            self.grouped(labels, columns[-1])
        wanted = s.loss_args.get("num_labels")
        if kind == "pair-classes" and wanted is not None and (min(labels) < 0 or max(labels) >= wanted):
            raise DataError(
                f"{data.train}: labels {min(labels)} to {max(labels)} do not fit supervised.loss_args.num_labels {wanted}"
            )
        return table.remove_columns("label").add_column("label", labels)

    def grouped(self, labels: list[int], column: str) -> None:
        """Texts with a class for a batch-triplet loss: batches take two texts of a class at a time, so
        at least two classes need two texts; a class of one text is never batched (said)."""
        from collections import Counter

        counts = Counter(labels)
        usable = [c for c, n in counts.items() if n >= 2]
        if len(usable) < 2:
            raise DataError(
                f"{self.cfg.data.train}: {self.cfg.supervised.loss} needs two classes with two texts or more each "
                f"(column {column!r} has {len(usable)})"
            )
        alone = sum(1 for n in counts.values() if n == 1)
        if alone:
            say(f"{column}: {alone:,} classes have one text, which a batch of two texts a class never takes")

    def teacher_labels(self, table: Dataset) -> Dataset:
        """Distillation: the teacher's outputs as each row's ``label`` - its embedding of the first text
        (MSE, EmbedDistill), its margins sim(anchor, positive) - sim(anchor, negative_i) (MarginMSE) or its
        scores [sim(anchor, positive), sim(anchor, negative_i) ...] (DistillKLDiv), sim being the loss's
        own ``similarity_fct`` so the student is scored as the teacher was. Each column is encoded once
        through the embedding cache (:class:`~sentlab.evaluation.scoring.EmbeddingCache`, on disk: keyed
        by the teacher's weights, modules and length and by the texts), so another seed or a rerun reads
        the labels instead of encoding; what labelling cost is kept as ``labelling`` (the run's
        ``teacher_labels.json``). The labels are held in memory (rows × width floats)."""
        import time

        import torch

        from sentlab.cache import EmbeddingStore
        from sentlab.encoders.backends import calibration_of, inference_setting
        from sentlab.encoders.loading import is_cross_encoder
        from sentlab.encoders.prompts import check_prompts_apply, prompted, role_prompt
        from sentlab.evaluation.scoring import EmbeddingCache

        s = self.cfg.supervised
        if is_cross_encoder(s.teacher):
            return self.cross_encoder_labels(table)
        # the embedding cache keys the labels by the teacher's backend and precision too
        teacher = load_teacher(s.teacher, s.teacher_setting, self.cfg.model.trust_remote_code, self.cfg.data.data_dir)
        self.teacher_width = teacher.get_embedding_dimension()
        similarity = check_arguments(s.loss_class, s.loss_args).get("similarity_fct")
        if similarity is None and self.spec.teacher != "embedding":
            similarity = inspect.signature(s.loss_class.__init__).parameters["similarity_fct"].default
        texts = [c for c in table.column_names]
        batch = self.cfg.train.batch_size
        # the teacher's own query prompt before the first column, its document prompt before the others
        prompts = [role_prompt(teacher, "query" if i == 0 else "document") for i in range(len(texts))]
        try:
            check_prompts_apply(teacher, prompts, "supervised.teacher")
        except ConfigError as refused:  # no setting chooses a teacher's prompts: it encodes as it is
            say(f"{refused}; the teacher encodes without its query and document prompts")
            prompts = [""] * len(texts)
        say(
            f"supervised.teacher: labelling {len(table):,} rows with {s.teacher} ({self.spec.teacher}, "
            f"{s.teacher_setting})"
        )
        started = time.perf_counter()
        # each column encoded once through the embedding cache, kept on disk under the teacher's weights,
        # modules, length and the (prompted) texts: a second run, another seed, labels without encoding
        cache = EmbeddingCache(teacher, max_rows=0, store=EmbeddingStore.default(), min_store_rows=1)
        # an embedding route learns the first column's embedding only: the others are not encoded
        read = 1 if self.spec.teacher == "embedding" else len(texts)
        with torch.no_grad():
            vectors = [
                torch.as_tensor(cache.encode(prompted(list(table[c]), p), batch_size=batch))
                for c, p in zip(texts[:read], prompts[:read])
            ]
        if self.spec.teacher == "embedding":
            labels = vectors[0]
        else:
            # the loss's similarity_fct is pairwise (a score a row): taken 4,096 rows at a time
            scores = [
                torch.cat([similarity(a, b) for a, b in zip(vectors[0].split(4096), v.split(4096))])
                for v in vectors[1:]
            ]
            labels = torch.stack(scores, dim=1).float()
            if self.spec.teacher == "margins":
                labels = labels[:, :1] - labels[:, 1:]
        seconds = time.perf_counter() - started
        self.labelling = {
            "teacher": s.teacher,
            "setting": s.teacher_setting,
            # what ran, read back: a torch fp32 teacher on a GPU labels in TF32 under train.tf32
            "ran": " ".join(inference_setting(teacher).values()),
            "device": str(teacher.device),
            "rows": len(table),
            "texts_encoded": cache.encoded,
            "from_cache": cache.encoded == 0,
            "seconds": round(seconds, 1),
        }
        if calibration_of(teacher):  # int8-static: the sentences its ranges came from (data.data_dir's)
            self.labelling["calibration_sha256"] = calibration_of(teacher)
        say(
            f"supervised.teacher: {len(table):,} rows labelled in {seconds:.1f} s "
            + ("(read from the embedding cache)" if cache.encoded == 0 else f"({cache.encoded:,} texts encoded)")
        )
        # a batch of rows at a time into the table: never the whole label matrix as Python floats
        matrix = labels.cpu().numpy()
        if self.spec.teacher == "embedding" and s.projection_init == "least_squares":
            kept = matrix[:PROJECTION_FIT_ROWS].copy()  # a copy: the whole matrix is not kept alive for it
            self.fit_rows = (list(table[texts[0]][:PROJECTION_FIT_ROWS]), kept, self.cfg.data.prompts)
        return table.map(
            lambda _, index: {"label": matrix[index[0] : index[-1] + 1].tolist()},
            with_indices=True,
            batched=True,
            batch_size=4096,
            keep_in_memory=True,
        )

    def cross_encoder_labels(self, table: Dataset) -> Dataset:
        """Distillation from a cross-encoder (``supervised.teacher`` one): its scores of (anchor, positive)
        and (anchor, negative_i), each distinct pair scored once, as MarginMSE's margins
        score(a, p) - score(a, n_i) or DistillKLDiv's scores [score(a, p), score(a, n_i) ...]. A loss
        that learns the teacher's embeddings (MSE, EmbedDistill) cannot take one: one line."""
        from sentlab.encoders.cross_encoder import load_cross_encoder, score_pairs

        s = self.cfg.supervised
        if self.spec.teacher == "embedding":
            raise ConfigError(
                f"supervised.teacher: {s.teacher} is a cross-encoder, which scores pairs and gives no embedding; "
                f"{s.loss} learns a teacher's embeddings: take MarginMSELoss or DistillKLDivLoss, or a "
                "sentence-transformers teacher"
            )
        if s.teacher_setting != "torch fp32":
            raise ConfigError(
                f"supervised.teacher_setting: {s.teacher_setting}, but {s.teacher} is a cross-encoder, which "
                "scores in torch fp32; leave teacher_setting out"
            )
        teacher = load_cross_encoder(s.teacher, trust_remote_code=self.cfg.model.trust_remote_code)
        texts = table.column_names
        anchors = table[texts[0]]
        pairs = [(a, t) for column in texts[1:] for a, t in zip(anchors, table[column])]
        say(
            f"supervised.teacher: labelling {len(table):,} rows with the cross-encoder {s.teacher} "
            f"({len(set(pairs)):,} distinct pairs, {self.spec.teacher})"
        )
        flat = score_pairs(teacher, pairs, max(self.cfg.train.batch_size, 32))
        rows = len(table)
        scores = [[flat[c * rows + r] for c in range(len(texts) - 1)] for r in range(rows)]
        if self.spec.teacher == "margins":
            scores = [[row[0] - other for other in row[1:]] for row in scores]
        return table.add_column("label", scores)

    def numbers(self, values: list, column: str) -> list[float]:
        data = self.cfg.data
        raw = []
        for index, value in enumerate(values):  # a float a row: a labelled set, small beside its text
            number = _number(value)
            if number is None or not math.isfinite(number):
                line = table_line(data.train, index)
                what = "is not a number" if number is None else "is not finite"
                raise DataError(f"{data.train}:{line}: score column {column!r}: {value!r} {what}")
            raw.append(number)
        return raw

    def checked(self, table: Dataset) -> Dataset:
        if len(table) == 0:
            raise DataError(f"{self.cfg.data.train}: no rows")
        return table

    def scaled(self, scores: list[float], scale: tuple[float, float], column: str) -> list[float]:
        """``scores`` mapped from ``scale`` to [0, 1]; a score outside the scale is refused with its row."""
        low, high = scale
        for row, value in enumerate(scores, start=1):
            if not low <= value <= high:  # NaN too
                raise DataError(
                    f"{self.cfg.data.train}: row {row}: {column} {value:g} is outside supervised.score_range "
                    f"[{low:g}, {high:g}]"
                )
        return [(value - low) / (high - low) for value in scores]

    # -- the loss --------------------------------------------------------------------------------
    @property
    def chunks_itself(self) -> bool:
        name = self.cfg.supervised.loss_class.__name__
        return cached_class_name(name) == name

    def chunked_loss(self, model: SentenceTransformer, mini_batch_size: int) -> nn.Module:
        """``train.mini_batch_size`` for a loss sentence-transformers chunks itself: its Cached class (MNRL's,
        GISTEmbed's ...) built with the same arguments and that ``mini_batch_size``; sentlab's Gradient
        Cache around any other loss that compares the batch's rows."""
        name = self.cfg.supervised.loss_class.__name__
        cached = cached_class_name(name)
        if cached is None:
            return super().chunked_loss(model, mini_batch_size)
        from sentence_transformers.sentence_transformer import losses

        if cached != name:
            say(f"train.mini_batch_size: {name} is chunked as sentence-transformers' {cached}")
        return self.loss(model, cls=getattr(losses, cached), mini_batch_size=mini_batch_size)

    def loss(
        self, model: SentenceTransformer, cls: type | None = None, mini_batch_size: int | None = None
    ) -> nn.Module:
        """The class ``supervised.loss`` names (or ``cls``, its Cached sibling, with ``mini_batch_size``),
        built with ``supervised.loss_args`` (a model argument loaded, on the model's device) and
        ``loss.temperature`` (as the class's ``scale``, 1 / temperature, or its ``temperature``; unset:
        the class's own default)."""
        from sentlab.encoders.loading import load_encoder

        s, spec = self.cfg.supervised, self.spec
        cls = cls or s.loss_class
        arguments = check_arguments(s.loss_class, s.loss_args)
        if mini_batch_size is not None:
            arguments["mini_batch_size"] = mini_batch_size
        for argument in spec.model_arguments:
            if argument in arguments:
                guide = load_encoder(
                    str(arguments[argument]),
                    device=str(model.device),
                    trust_remote_code=self.cfg.model.trust_remote_code,
                )
                guide.requires_grad_(False)  # read, never trained (nor written into checkpoints)
                arguments[argument] = guide
        if _takes(cls, "scale"):  # 20 at the default 0.05, every scale's default in sentence-transformers
            arguments["scale"] = scale_of(self.cfg.loss.temperature)
        width = model.get_embedding_dimension()
        if spec.teacher == "embedding" and self.teacher_width is not None:
            projected = arguments.get("projection_dim")
            if (projected or width) != self.teacher_width:
                given = f"supervised.loss_args.projection_dim {projected}" if projected else f"the model's {width}"
                raise ConfigError(
                    f"supervised.teacher: its embeddings have {self.teacher_width} dimensions, not {given}; set "
                    f"supervised.loss_args.projection_dim: {self.teacher_width} (a trained projection of the model's "
                    "embeddings) or take a teacher of the model's width"
                )
        given = arguments.get("embedding_dimension")
        if given is not None and given != width:
            raise ConfigError(
                f"supervised.loss_args.embedding_dimension: {given}, but the model's embeddings have {width}"
            )
        loss = build_loss(cls, model, arguments)
        if (
            spec.teacher == "embedding"
            and s.projection_init == "least_squares"
            and getattr(loss, "projection", None) is not None
        ):
            self.fit_projection(model, loss)
        if (
            mini_batch_size is None
            and LOSSES[cls.__name__].chunks_itself
            and getattr(loss, "use_mini_batched_version", True)
        ):
            given = "loss_args" if "mini_batch_size" in s.loss_args else "its default"
            loss.chunking = {
                "mini_batch_size": loss.mini_batch_size,
                "source": f"{cls.__name__} ({given})",
                "by": cls.__name__,
            }
        for argument in spec.model_arguments:  # read only: left out of the checkpoints' loss state
            loss.read_only_modules = (*getattr(loss, "read_only_modules", ()), argument)
        return loss

    def fit_projection(self, model: SentenceTransformer, loss: nn.Module) -> None:
        """``supervised.projection_init: least_squares``: the loss's projection ``P(x) = W x + b`` (an
        ``nn.Linear`` from the model's width to the teacher's) set, before training, to the ridge
        least-squares fit of the teacher's labels T from the start model's embeddings S of the same rows,
        ``argmin_{W, b} ||S W^T + b - T||^2 + alpha ||W||^2`` (scikit-learn's ``Ridge``; ``alpha``
        :data:`PROJECTION_RIDGE` times the mean variance of S's columns times the rows, so a few rows or
        nearly collinear embeddings give a bounded map, not an exact fit through the labels), over the first
        :data:`PROJECTION_FIT_ROWS` rows, encoded as training reads them (its length, its prompt).
        sentence-transformers starts the projection random, so the student's first steps follow a random
        map's error; fitted first, only what no linear map of the start model's embeddings explains is left
        for training to change (LP-FT: Kumar et al., 2022, "Fine-Tuning can Distort Pretrained Features and
        Underperform Out-of-Distribution", a linear probe before fine-tuning). Written as
        ``projection_init[-SET].safetensors`` and loaded through the loss's own ``load_projection``;
        ``projection_init[-SET].json`` holds the rows, the prompts, alpha, the condition number of the
        system the ridge solves, the weights' norm and the MSE of the random and the fitted projection, on
        the rows and on a tenth (drawn with seed 0) held out of a second fit. A resumed run
        (:attr:`resume_from`) is not fitted again: its checkpoint restores the projection as trained. The
        fit is of the MSE, whatever distance the loss trains (EmbedDistillLoss's cosine included)."""
        import tempfile
        import time

        import numpy as np
        import torch
        from safetensors.torch import save_file
        from sklearn.linear_model import Ridge

        from sentlab.encoders.loading import finite_length
        from sentlab.encoders.prompts import role_prompt
        from sentlab.paths import atomic_path, json_text, write_text_atomic

        suffix = f"-{self.set_name}" if self.set_name else ""
        if self.resume_from is not None:
            say(
                f"supervised.projection_init: not fitted again on resume; {Path(self.resume_from).name} restores "
                f"the projection as trained (the first fit: projection_init{suffix}.json)"
            )
            return
        found = [self.fit_rows] if self.fit_rows else []
        for name in self.cfg.data.sets if not found else ():  # one loss for every set: theirs together
            if self.set_method(name).fit_rows:
                found.append(self.set_method(name).fit_rows)
        if not found:
            raise ConfigError("supervised.projection_init: least_squares needs the teacher's labels of the rows")
        groups, left = [], PROJECTION_FIT_ROWS
        for texts, labels, prompts in found:  # each set's rows with its own prompt, as training gives them
            if isinstance(prompts, dict):
                raise ConfigError(
                    "supervised.projection_init: least_squares with data.prompts by column; give one prompt for "
                    "every text (or none), which the fit encodes with as training does"
                )
            prompt = role_prompt(model, "query") if prompts is None else prompts  # the first column's
            if left > 0:
                groups.append((texts[:left], labels[:left], prompt))
                left -= len(groups[-1][0])
        texts = [t for rows, _, _ in groups for t in rows]
        if len(texts) < 2:
            raise ConfigError(f"supervised.projection_init: least_squares needs two rows or more, not {len(texts)}")
        targets = np.concatenate([labels for _, labels, _ in groups]).astype(np.float64)
        started = time.perf_counter()
        training, length = model.training, finite_length(model)  # None: a static model reads whole texts
        trained_length = None if length is None else self.cfg.model.max_seq_length
        try:
            if trained_length is not None:
                model.max_seq_length = trained_length  # training's collator truncates there
            with torch.no_grad():
                student = np.concatenate(
                    [
                        model.encode(rows, prompt=prompt, batch_size=self.cfg.train.batch_size, convert_to_numpy=True)
                        for rows, _, prompt in groups
                    ]
                ).astype(np.float64)
                projection = loss.projection
                weight = projection.weight
                before = projection(torch.as_tensor(student, dtype=weight.dtype, device=weight.device))
        finally:
            if trained_length is not None:
                model.max_seq_length = length
            model.train(training)
        random_mse = float(((before.double().cpu().numpy() - targets) ** 2).mean())
        centred = student - student.mean(0)
        eigenvalues = np.linalg.eigvalsh(centred.T @ centred / len(texts))
        shift = PROJECTION_RIDGE * float(eigenvalues.mean())  # what the ridge adds to each eigenvalue
        alpha = shift * len(texts)  # scikit-learn's Ridge sums its squares over the rows
        order = np.random.default_rng(0).permutation(len(texts))  # a tenth held out, drawn across the sets
        held, kept = order[: max(1, len(texts) // 10)], order[max(1, len(texts) // 10) :]
        probe = Ridge(alpha=shift * len(kept)).fit(student[kept], targets[kept])
        held_out_mse = float(((probe.predict(student[held]) - targets[held]) ** 2).mean())
        # the share of the held-out labels' variance the map explains (R^2, all dimensions pooled)
        spread = float(((targets[held] - targets[held].mean(0)) ** 2).mean())
        fit = Ridge(alpha=alpha).fit(student, targets)
        fitted_mse = float(((fit.predict(student) - targets) ** 2).mean())
        weights = {
            "weight": torch.as_tensor(fit.coef_, dtype=torch.float32).contiguous(),
            "bias": torch.as_tensor(fit.intercept_, dtype=torch.float32).contiguous(),
        }
        with tempfile.TemporaryDirectory(prefix="sentlab-projection-") as scratch:
            folder = self.paths.root if self.paths is not None else Path(scratch)
            path = folder / f"projection_init{suffix}.safetensors"
            with atomic_path(path) as temporary:
                save_file(weights, str(temporary))
            loss.load_projection(path)  # sentence-transformers' own loader: its shape checks
        record = {
            "rows": len(texts),
            "prompts": sorted({prompt for _, _, prompt in groups}),
            "max_seq_length": trained_length,
            "ridge_alpha": alpha,
            # of the system the ridge solves: its covariance's eigenvalues, each raised by the ridge
            "condition_number": float((eigenvalues.max() + shift) / (max(eigenvalues.min(), 0.0) + shift)),
            "weight_norm": float(np.linalg.norm(fit.coef_)),
            "mse_random_projection": random_mse,
            "mse_fitted": fitted_mse,
            "mse_fitted_held_out": held_out_mse,
            "r2_held_out": 1 - held_out_mse / spread if spread > 0 else None,
            "held_out_rows": len(held),
            "seconds": round(time.perf_counter() - started, 1),
        }
        if self.paths is not None:
            write_text_atomic(self.paths.root / f"projection_init{suffix}.json", json_text(record, indent=1))
        say(
            f"supervised.projection_init: least_squares on {len(texts):,} rows: MSE to the teacher "
            f"{random_mse:.3g} (the random projection) -> {fitted_mse:.3g} (fitted; {held_out_mse:.3g} on "
            f"{len(held):,} rows held out of a second fit, R^2 "
            + ("n/a" if record["r2_held_out"] is None else f"{record['r2_held_out']:.3f}")
            + f"), {record['seconds']} s"
        )


def text_columns(
    columns: list[str] | dict[str, str], least: int, most: int | None, what: str
) -> tuple[list[str], list[str]]:
    """The file's columns of ``data.columns`` for a loss of texts, and the names the table gives them:
    anchor, positive, then ``negative`` (one) or ``negative_1`` ... ``negative_n``; a mapping names them
    by those roles (its order does not matter). Fewer than ``least`` or more than ``most`` columns is
    one line."""
    if isinstance(columns, dict):
        negatives = [k for k in columns if k.startswith("negative")]
        count = len(negatives)
        named = ["negative"] if negatives == ["negative"] else [f"negative_{i}" for i in range(1, count + 1)]
        unknown = sorted(set(columns) - {"anchor", "positive", *named})
        if unknown:
            raise ConfigError(
                f"data.columns: {what} has the roles anchor, positive, then negative or negative_1 ... negative_n; "
                f"not {', '.join(unknown)}"
            )
        missing = [role for role in ("anchor", "positive")[: min(least, 2)] if role not in columns]
        if missing:
            raise ConfigError(f"data.columns: {what} needs the role(s) {', '.join(missing)}")
        order = [role for role in ("anchor", "positive") if role in columns] + named
        files = [columns[role] for role in order]
    else:
        files = list(columns)
    total = len(files)
    if total < least or (most is not None and total > most):
        names = ["anchor", "positive", *[f"negative_{i}" for i in range(1, 4)]]
        if most is None:
            shape = f"[{', '.join(names[:least])}] and any number of negative columns after them"
        elif most > least:
            shape = f"[{', '.join(names[:least])}] to [{', '.join(names[:most])}]"
        else:
            shape = f"[{', '.join(names[:least]).replace('negative_1', 'negative')}]"
        raise ConfigError(f"data.columns: {what} needs {shape}, got {list(columns)}")
    twice = sorted({c for c in files if files.count(c) > 1})
    if twice:
        raise ConfigError(f"data.columns: {twice[0]!r} is named twice; each role reads its own column")
    count = max(0, total - 2)
    roles = ["anchor", "positive"][: min(total, 2)]
    return files, roles + (["negative"] if count == 1 else [f"negative_{i}" for i in range(1, count + 1)])
