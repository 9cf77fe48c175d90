"""sentence-transformers' losses by class name, declared as data: the rows each one reads, whether it
compares a batch's rows (Gradient Cache, ``train.no_duplicates``), whether it scores the embeddings'
directions only (Matryoshka), and the teacher labels a distillation loss needs. The ``supervised``
method builds any loss listed in :data:`LOSSES` from ``supervised.loss`` (a class name, or one of
sentlab's short names in :data:`SHORT_NAMES`) and ``supervised.loss_args`` (the class's own
arguments, checked against its signature by :func:`check_arguments`).

The rows a loss reads (its ``kind``), as sentence-transformers documents them in each class's
"Inputs" table:

=================  ===============================================  ====================================
kind               columns                                          losses
=================  ===============================================  ====================================
``texts``          anchor, positive[, negative_1 ... negative_n]    MNRL (and cached, symmetric), GISTEmbed
                                                                    (and cached), MegaBatchMargin (pairs),
                                                                    Triplet (one negative)
``scored``         text1, text2, score in [0, 1]                    CosineSimilarity, CoSENT, AnglE
``binary``         text1, text2, label 0 or 1                       Contrastive, OnlineContrastive
``classes``        text, label (a class number)                     BatchAll/BatchHard/BatchSemiHard/
                                                                    BatchHardSoftMargin triplet losses
``pair-classes``   text1, text2, label (a class number)             Softmax (SBERT's NLI classifier)
``distill``        texts, labels from ``supervised.teacher``        MSE, EmbedDistill (the teacher's
                                                                    embedding of the first text), MarginMSE
                                                                    (its margins), DistillKLDiv (its scores)
=================  ===============================================  ====================================

Losses that are not a supervised stage are refused with where sentlab offers them
(:data:`ELSEWHERE`): TSDAE's and CT's are methods, Matryoshka is ``train.matryoshka_dims``.

Example::

    from sentlab.losses.catalog import loss_class, check_arguments

    cls = loss_class("GISTEmbedLoss")            # or "mnrl"; "GISTEmbedLos" -> "did you mean GISTEmbedLoss?"
    arguments = check_arguments(cls, {"temperature": 0.05})
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass

from torch import nn

from sentlab.errors import ConfigError

KINDS = ("texts", "scored", "binary", "classes", "pair-classes", "distill")


@dataclass(frozen=True)
class LossSpec:
    """What one sentence-transformers loss reads and which of sentlab's settings apply to it."""

    kind: str  # one of KINDS: the rows it reads
    min_negatives: int = 0  # texts / distill: negative columns a row needs at least
    max_negatives: int | None = None  # ... and at most (None: any number, an n-tuple)
    compares_rows: bool = False  # the loss of a row depends on the batch's other rows
    directions: bool = (
        False  # scored by cosines by default: the first K dimensions re-normalised are scorable (Matryoshka)
    )
    chunks_itself: bool = False  # a Cached* loss: its own mini_batch_size (Gradient Cache inside)
    teacher: str | None = None  # distill: the teacher's labels ("embedding", "margins", "scores")
    model_arguments: tuple[str, ...] = ()  # arguments that name a model (GISTEmbed's guide)


_RANKING = dict(kind="texts", compares_rows=True, directions=True)
_CACHED = dict(_RANKING, chunks_itself=True)
_GIST = dict(_RANKING, max_negatives=1, model_arguments=("guide",))
_BATCH_TRIPLET = dict(kind="classes", compares_rows=True)

LOSSES: dict[str, LossSpec] = {
    "MultipleNegativesRankingLoss": LossSpec(**_RANKING),
    "CachedMultipleNegativesRankingLoss": LossSpec(**_CACHED),
    "MultipleNegativesSymmetricRankingLoss": LossSpec(**_RANKING),
    "CachedMultipleNegativesSymmetricRankingLoss": LossSpec(**_CACHED),
    "GISTEmbedLoss": LossSpec(**_GIST),
    "CachedGISTEmbedLoss": LossSpec(**dict(_GIST, max_negatives=None, chunks_itself=True)),
    "MegaBatchMarginLoss": LossSpec(**dict(_RANKING, max_negatives=0, chunks_itself=True)),
    "TripletLoss": LossSpec(kind="texts", min_negatives=1, max_negatives=1),
    "CosineSimilarityLoss": LossSpec(kind="scored", directions=True),
    "CoSENTLoss": LossSpec(kind="scored", compares_rows=True, directions=True),
    "AnglELoss": LossSpec(kind="scored", compares_rows=True, directions=True),
    "ContrastiveLoss": LossSpec(kind="binary", directions=True),  # cosine distance unless loss_args say otherwise
    "OnlineContrastiveLoss": LossSpec(kind="binary", compares_rows=True, directions=True),
    "BatchAllTripletLoss": LossSpec(**_BATCH_TRIPLET),
    "BatchHardTripletLoss": LossSpec(**_BATCH_TRIPLET),
    "BatchSemiHardTripletLoss": LossSpec(**_BATCH_TRIPLET),
    "BatchHardSoftMarginTripletLoss": LossSpec(**_BATCH_TRIPLET),
    "SoftmaxLoss": LossSpec(kind="pair-classes"),
    "MSELoss": LossSpec(kind="distill", max_negatives=0, teacher="embedding"),  # [text] or [source, translation]
    "EmbedDistillLoss": LossSpec(kind="distill", max_negatives=0, teacher="embedding"),
    "MarginMSELoss": LossSpec(kind="distill", min_negatives=1, teacher="margins"),
    "DistillKLDivLoss": LossSpec(kind="distill", min_negatives=1, teacher="scores"),
}

# the losses sentence-transformers chunks itself (Gradient Cache inside): train.mini_batch_size builds
# the Cached class of a loss that has one (its arguments a superset), and sets a Cached class's own
# mini_batch_size, so one setting chunks every loss that can be chunked
CACHED_SIBLINGS = {
    "MultipleNegativesRankingLoss": "CachedMultipleNegativesRankingLoss",
    "MultipleNegativesSymmetricRankingLoss": "CachedMultipleNegativesSymmetricRankingLoss",
    "GISTEmbedLoss": "CachedGISTEmbedLoss",
}


def cached_class_name(name: str) -> str | None:
    """The sentence-transformers class that chunks the loss ``name`` itself: its Cached sibling, the class
    itself when it is one, else None (sentlab's :class:`~sentlab.losses.gradcache.GradientCache` wraps it)."""
    if name in CACHED_SIBLINGS.values():
        return name
    return CACHED_SIBLINGS.get(name)


# sentlab's short names (the method's first four losses)
SHORT_NAMES = {
    "mnrl": "MultipleNegativesRankingLoss",
    "cosine-mse": "CosineSimilarityLoss",
    "cosent": "CoSENTLoss",
    "angle": "AnglELoss",
}

# sentence-transformers' losses that are not one supervised stage: where sentlab has them, or why not
ELSEWHERE = {
    "DenoisingAutoEncoderLoss": "TSDAE is the method tsdae",
    "ContrastiveTensionLoss": "contrastive tension is the method ct",
    "ContrastiveTensionLossInBatchNegatives": "contrastive tension with in-batch negatives is the method ct with ct.in_batch: true",
    "MatryoshkaLoss": "Matryoshka wraps the loss through train.matryoshka_dims / train.matryoshka_weights",
    "Matryoshka2dLoss": "Matryoshka over layers too is not offered; train.matryoshka_dims wraps the loss over dimensions",
    "AdaptiveLayerLoss": "it wraps another loss to train early exits, which sentlab's saved models do not use",
    "GlobalOrthogonalRegularizationLoss": "it is a regulariser added to another loss on the same batch, and sentlab trains one loss a batch",
}

# arguments that name a function or module: the value is a name in these namespaces
_NAMED = {
    "similarity_fct": "sentence_transformers.util",
    "loss_fct": "torch.nn",
    "cos_score_transformation": "torch.nn",
}


def loss_class(name: str) -> type[nn.Module]:
    """The sentence-transformers loss class ``name`` names (a class in :data:`LOSSES`, or a short
    name); anything else is one line with the closest names."""
    from sentence_transformers.sentence_transformer import losses

    name = SHORT_NAMES.get(name, name)
    if name in LOSSES:
        return getattr(losses, name)
    if name in ELSEWHERE:
        raise ConfigError(f"supervised.loss {name}: {ELSEWHERE[name]}")
    close = closest(name, [*SHORT_NAMES, *LOSSES])
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise ConfigError(
        f"supervised.loss {name}: not a sentence-transformers loss sentlab trains; {hint}"
        f"(sentlab's short names {', '.join(SHORT_NAMES)}, or a class name of docs/guides/own-data.md#losses)"
    )


def closest(name: str, known: list[str], cutoff: float = 0.5) -> list[str]:
    """The names of ``known`` closest to ``name``, blind to case (``MNRL`` -> ``mnrl``)."""
    folded = {k.lower(): k for k in known}
    return [folded[k] for k in difflib.get_close_matches(name.lower(), list(folded), n=3, cutoff=cutoff)]


def spec(name: str) -> LossSpec:
    """The :class:`LossSpec` of a loss named as :func:`loss_class` takes it."""
    return LOSSES[loss_class(name).__name__]


def _named(argument: str, value: object) -> object:
    """``value`` of an argument that takes a function or module, given by name in a config."""
    import importlib

    if not isinstance(value, str):
        raise ConfigError(f"supervised.loss_args.{argument}: give a name in {_NAMED[argument]}, got {value!r}")
    module = importlib.import_module(_NAMED[argument])
    found = getattr(module, value, None)
    if not callable(found) or value.startswith("_"):
        names = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
        close = closest(value, names, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ConfigError(f"supervised.loss_args.{argument}: {value!r} is not in {_NAMED[argument]}{hint}")
    return found() if isinstance(found, type) else found  # torch.nn: an instance of the module class


def _distance(cls: type, argument: str, default: object, value: object) -> object:
    """A ``distance_metric`` given by name: an attribute of the class that holds the default
    (``TripletDistanceMetric.COSINE``, ``SiameseDistanceMetric.EUCLIDEAN`` ...); a plain default
    (a string) is passed as it is."""
    from sentence_transformers.sentence_transformer import losses

    holders = [
        getattr(losses, n)
        for n in ("TripletDistanceMetric", "SiameseDistanceMetric", "BatchHardTripletLossDistanceFunction")
    ]
    holder = next((h for h in holders if any(v is default for v in vars(h).values()) or _static(h, default)), None)
    if holder is None:
        return value
    names = [n for n in vars(holder) if not n.startswith("_")]
    if value not in names:
        close = closest(str(value), names, cutoff=0.3)
        raise ConfigError(
            f"supervised.loss_args.{argument}: {value!r} is not a {holder.__name__} of {cls.__name__} "
            f"(choose from {', '.join(close or names)})"
        )
    return getattr(holder, value)


def _typed(cls: type, argument: str, value: object) -> object:
    """``value`` checked against the argument's annotation where it is a plain type (a number, a flag,
    a text, or a literal), so ``temperature: "0.05"`` is one line now, not an error inside a step."""
    import typing

    from pydantic import TypeAdapter, ValidationError

    try:
        annotation = typing.get_type_hints(cls.__init__).get(argument)
    except Exception:  # an annotation that does not resolve: the class checks the value itself
        return value
    if annotation is None:
        return value
    try:
        adapter = TypeAdapter(annotation)
    except Exception:  # a type pydantic does not know (a module, a function): the class checks it
        return value
    try:
        return adapter.validate_python(value, strict=True)
    except ValidationError as strict:
        failed = strict
    if not isinstance(value, str):  # YAML's list for a tuple, an integer for a float: converted
        try:
            return adapter.validate_python(value)
        except ValidationError as lax:
            failed = lax
    why = failed.errors()[0]["msg"]  # a text where a number is asked stays refused
    raise ConfigError(f"supervised.loss_args.{argument}: {value!r} for {cls.__name__}: {why}") from None


# arguments that count something: below 1 they pass the type check and crash inside the first step
POSITIVE_ARGUMENTS = ("mini_batch_size", "num_labels", "projection_dim", "embedding_dimension")


def _similarity_kind(function: object) -> str:
    """ "matrix" for a similarity of every row with every row (``cos_sim``: n x m), "pairwise" for row i
    with row i (``pairwise_cos_sim``: n), read off the function on a probe."""
    import torch

    probe = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 12 + 0.1
    return "matrix" if function(probe, probe.flip(0)).dim() == 2 else "pairwise"


def _same_similarity_kind(cls: type, argument: str, value: object, default: object) -> None:
    """A ``similarity_fct`` of the kind the loss's own default is: a pairwise function where a loss
    scores every row against every row (MNRL) crashes at the first step, and the reverse too."""
    if not callable(default):
        return
    wanted, given = _similarity_kind(default), _similarity_kind(value)
    if wanted != given:
        example = "cos_sim, dot_score" if wanted == "matrix" else "pairwise_cos_sim, pairwise_dot_score"
        raise ConfigError(
            f"supervised.loss_args.{argument}: {getattr(value, '__name__', value)} is a {given} similarity; "
            f"{cls.__name__} needs a {wanted} one (sentence_transformers.util: {example})"
        )


def _static(holder: type, function: object) -> bool:
    return any(getattr(v, "__func__", None) is function for v in vars(holder).values())


COSINE_FUNCTIONS = ("cos_sim", "pairwise_cos_sim", "COSINE", "COSINE_DISTANCE", "cosine_distance")


def by_directions(name: str, arguments: dict[str, object]) -> bool:
    """Whether the loss ``name`` with ``arguments`` (as a config gives them: functions by name) scores
    the embeddings' directions alone, so Matryoshka's truncated, re-normalised embeddings are what it
    trains: its default, unless ``similarity_fct`` or ``distance_metric`` names another function."""
    for argument in ("similarity_fct", "distance_metric"):
        if argument in arguments:
            return arguments[argument] in COSINE_FUNCTIONS
    return LOSSES[name].directions


@dataclass(frozen=True)
class Capabilities:
    """Which of sentlab's training settings a loss (with its arguments) takes, as one record so the
    answers cannot drift apart: each ``no_*`` is None where the setting applies, else the one line that
    refuses it; ``keeps_start_normalize``: the saved model may end in the start model's ``Normalize``
    (a loss of directions: its scores are unchanged), not where it scored dot products or distances,
    which unit length would change."""

    no_gradient_cache: str | None
    no_matryoshka: str | None
    keeps_start_normalize: bool


def capabilities(cls: type[nn.Module], arguments: dict[str, object], name: str | None = None) -> Capabilities:
    """The :class:`Capabilities` of sentence-transformers' loss ``cls`` with ``arguments`` (as a config
    gives them), ``name`` being how the messages call it."""
    spec, name = LOSSES[cls.__name__], name or cls.__name__
    cache = None
    if cached_class_name(cls.__name__):  # train.mini_batch_size is the Cached class's mini_batch_size
        pass
    elif spec.chunks_itself and arguments.get("use_mini_batched_version") is False:
        cache = f"supervised.loss {name} with use_mini_batched_version: false embeds the batch whole, unchunked"
    elif spec.chunks_itself:
        cache = f"supervised.loss {name} splits the batch itself: set its supervised.loss_args.mini_batch_size"
    elif not spec.compares_rows:
        cache = (
            f"supervised.loss {name} scores each row alone, so a smaller train.batch_size already needs "
            "less memory for the same expected gradient; Gradient Cache is for losses that compare the rows of a batch"
        )
    elif not hasattr(cls, "compute_loss_from_embeddings"):
        cache = (
            f"supervised.loss {name} does not compute its value from the batch's embeddings, which Gradient Cache needs"
        )
    directions = by_directions(cls.__name__, arguments)
    matryoshka = (
        None
        if directions
        else (
            f"supervised.loss {name} with these loss_args scores distances, dot products, classes or a "
            "teacher's outputs, not the embeddings' directions alone, so a truncated embedding is not what it trained"
        )
    )
    return Capabilities(no_gradient_cache=cache, no_matryoshka=matryoshka, keeps_start_normalize=directions)


def check_arguments(cls: type[nn.Module], arguments: dict[str, object]) -> dict[str, object]:
    """``arguments`` of ``cls`` checked against its signature: an unknown name is refused with the
    closest names, a required argument missing (other than the model and the ones sentlab fills) is
    refused, and a function or distance given by name is resolved. A model argument (GISTEmbed's
    ``guide``) stays a name: the method loads it."""
    signature = inspect.signature(cls.__init__)
    parameters = {n: p for n, p in signature.parameters.items() if n not in ("self", "model")}
    filled = {"embedding_dimension"}  # SoftmaxLoss: the model's, when not given
    checked = {}
    for name, value in arguments.items():
        if name not in parameters:
            close = closest(name, list(parameters))
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise ConfigError(
                f"supervised.loss_args.{name}: {cls.__name__} takes no such argument; {hint}"
                f"(it takes {', '.join(parameters)})"
            )
        default = parameters[name].default
        if name in _NAMED:
            value = _named(name, value)
            if name == "similarity_fct":
                _same_similarity_kind(cls, name, value, default)
        elif name == "distance_metric" and isinstance(value, str):
            value = _distance(cls, name, default, value)
        elif name not in LOSSES[cls.__name__].model_arguments:
            value = _typed(cls, name, value)
        if name in POSITIVE_ARGUMENTS and isinstance(value, int) and value < 1:
            raise ConfigError(f"supervised.loss_args.{name}: {value} for {cls.__name__}: it counts, so at least 1")
        checked[name] = value
    spec_ = LOSSES[cls.__name__]
    missing = [
        n
        for n, p in parameters.items()
        if p.default is inspect.Parameter.empty and n not in checked and n not in filled and p.kind != p.VAR_KEYWORD
    ]
    if missing:
        what = "a model name or folder" if missing[0] in spec_.model_arguments else "a value"
        raise ConfigError(f"supervised.loss_args.{missing[0]}: {cls.__name__} needs it ({what})")
    return checked


def build_loss(cls: type[nn.Module], model, arguments: dict[str, object]) -> nn.Module:
    """``cls(model, **arguments)`` (arguments from :func:`check_arguments`, model arguments already
    loaded), with SoftmaxLoss's ``embedding_dimension`` the model's when not given; an argument the class
    refuses as it is built (a wrong type or value) is one line."""
    if cls.__name__ == "SoftmaxLoss" and "embedding_dimension" not in arguments:
        arguments = {**arguments, "embedding_dimension": model.get_embedding_dimension()}
    try:
        return cls(model, **arguments)
    except (TypeError, ValueError, AssertionError) as error:
        raise ConfigError(f"supervised.loss_args: {cls.__name__} refused them: {error}") from None
