"""A supervised stage with sentence-transformers' own losses, to chain with the unsupervised
methods as in the TSDAE paper (Sec. 4): "target → NLI+STS", "NLI+STS → target", and pre-training
followed by in-domain supervised training (Fig. 2). A run's ``model/`` is the next run's
``model.name`` (``sentlab pipeline`` chains the configs).

``supervised.loss``, sentence-transformers' losses by name:

* ``mnrl`` - ``MultipleNegativesRankingLoss`` (the paper's MNRL, Sec. 5.1: cross-entropy over
  in-batch negatives, cosine × ``scale``; with a hard-negative column, supervised SimCSE's objective
  with sentence-transformers' head-less encoder) on (anchor, positive[, negative]) rows;
* ``cosine-mse`` - ``CosineSimilarityLoss`` (MSE between the cosine and the gold score scaled to
  [0, 1]), the paper's MSE loss on STS-B train / TwitterPara;
* ``cosent`` - ``CoSENTLoss`` (Su 2022) and ``angle`` - ``AnglELoss`` (Li and Li 2023, the same
  ranking loss on the angle difference) on scored pairs.

``supervised.format`` says how ``data.train`` is read: ``table`` (a .jsonl / .csv / .tsv whose
``data.columns`` name, in order or by role, the text1 / text2 / score columns of scored pairs or the
anchor / positive[ / negative] columns of pairs and triplets), ``snli`` (a folder in SentEval's SNLI
layout; triplets from the ``supervised.split`` split) or ``stsb`` (an ``sts-<split>.csv`` of
SentEval's STS-B, scores 0-5).

Scores are on the scale ``supervised.score_range`` ([low, high]; [0, 5] for ``stsb``); a score
outside it, or one that is not a finite number, is refused with its row, and each becomes
(score - low) / (high - low). ``cosine-mse`` regresses the cosine on that value, so a table's scale
must be stated; ``cosent`` and ``angle`` read only the scores' order, and without a stated scale take
the data's lowest and highest score (said in one line).

A column of numbers is never read as a text: scored pairs under ``mnrl`` (which reads texts) are
refused in one line, as are scored roles (``{text1, text2, score}``) without a stated scored loss.
Keys the settings leave idle (``split`` outside ``snli``, ``scale`` with ``cosine-mse``,
``score_range`` with ``mnrl``, ``data.columns`` outside ``table``) and the ``loss`` section (this
method's loss is ``supervised.loss``) are refused when set (:meth:`SupervisedConfig.unread`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from datasets import Dataset
from pydantic import Field, FiniteFloat, field_validator, model_validator
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import losses
from torch import nn

from sentlab.data.nli import read_snli_triplets
from sentlab.data.readers import table_line
from sentlab.data.sts import read_stsb
from sentlab.data.tables import column_table
from sentlab.errors import ConfigError, DataError
from sentlab.methods.base import Method, column_roles, register
from sentlab.progress import say
from sentlab.training.config import TrainConfig, _Section

SCORED_LOSSES = ("cosine-mse", "cosent", "angle")


class SupervisedSection(_Section):
    loss: Literal["mnrl", "cosine-mse", "cosent", "angle"] = Field(
        "mnrl", description="mnrl: pairs or triplets; cosine-mse, cosent, angle: scored pairs"
    )
    format: Literal["table", "snli", "stsb"] = "table"
    split: str = Field("train", description="format snli: the split of the SNLI folder")
    scale: float | None = Field(
        None, gt=0, description="mnrl / cosent / angle: similarity scale (unset: 20, sentence-transformers' default)"
    )
    score_range: tuple[FiniteFloat, FiniteFloat] | None = Field(
        None,
        description="the scores' scale [low, high]: a score outside it is refused (stsb: [0, 5]; needed by "
        "cosine-mse on a table; unset with cosent / angle, which read only the order: the data's lowest and highest)",
    )

    @property
    def similarity_scale(self) -> float:
        """``scale``, or sentence-transformers' default of 20 when unset."""
        return 20.0 if self.scale is None else self.scale

    @field_validator("score_range")
    @classmethod
    def _ordered(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not value[0] < value[1]:
            raise ValueError(f"needs low < high, got {list(value)}")
        return value


class SupervisedConfig(TrainConfig):
    method: Literal["supervised"]
    supervised: SupervisedSection = Field(default_factory=SupervisedSection)

    section = "supervised"
    section_required = False
    not_read = {"loss": "its loss is supervised.loss, with the similarity scale supervised.scale"}
    idle_when = {
        **TrainConfig.idle_when,
        "train.mini_batch_size": "with supervised.loss: cosine-mse",
        "supervised.split": "outside format snli (stsb takes its split from the file's name)",
        "supervised.scale": "with loss cosine-mse",
        "supervised.score_range": "with loss mnrl",
        "data.columns": "outside format table",
    }

    def unread(self) -> dict[str, str]:
        s, idle = self.supervised, super().unread()
        if s.format != "snli":
            where = "the split is data.train's file name, sts-<split>.csv" if s.format == "stsb" else "data.train"
            idle["supervised.split"] = f"it is read with format snli only; with format {s.format}, {where}"
        if s.loss == "cosine-mse":
            idle["supervised.scale"] = "supervised.loss cosine-mse has no similarity scale"
            idle["train.mini_batch_size"] = (
                "supervised.loss cosine-mse scores each pair alone, so a smaller train.batch_size already needs "
                "less memory for the same expected gradient; Gradient Cache is for losses that compare the rows of a batch"
            )
        if s.loss not in SCORED_LOSSES:
            idle["supervised.score_range"] = f"supervised.loss {s.loss} reads no scores"
        if s.format != "table":
            idle["data.columns"] = f"supervised.format {s.format} has its own columns"
        return idle

    @model_validator(mode="after")
    def _stated_scale(self) -> SupervisedConfig:
        s = self.supervised
        if s.loss == "cosine-mse" and s.format == "table" and s.score_range is None:
            raise ValueError(
                "supervised.score_range: cosine-mse regresses the cosine on the score scaled to [0, 1], so state "
                "the scores' scale, e.g. [0, 5] (the data's own lowest and highest need not be the scale's ends)"
            )
        return self


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
    no_matryoshka = None  # a loss of cosines: the first K dimensions re-normalised are scored alike
    no_gradient_cache = None  # mnrl, cosent and angle compare the batch's rows (cosine-mse: SupervisedConfig.unread)
    batch_columns = 3  # anchor, positive, negative (at most)

    @property
    def in_batch_negatives(self) -> bool:
        return self.cfg.supervised.loss == "mnrl"

    def train_dataset(self) -> Dataset:
        s, data = self.cfg.supervised, self.cfg.data
        scored = s.loss in SCORED_LOSSES
        if s.format == "snli":
            if scored:
                raise ConfigError("supervised.format snli gives triplets; use supervised.loss: mnrl")
            rows = read_snli_triplets(data.train, s.split)[: data.limit]
            return Dataset.from_dict(
                {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "negative": [r[2] for r in rows]}
            )
        if s.format == "stsb":
            if not scored:
                raise ConfigError(
                    f"supervised.format stsb gives scored pairs; use supervised.loss {' / '.join(SCORED_LOSSES)}"
                )
            path = Path(data.train)
            pairs = read_stsb(path.parent, path.stem.removeprefix("sts-"))
            n = data.limit or len(pairs.scores)
            scores = self.scaled([float(x) for x in pairs.scores[:n]], s.score_range or (0.0, 5.0), "score")
            return Dataset.from_dict(
                {"sentence1": pairs.sentences1[:n], "sentence2": pairs.sentences2[:n], "score": scores}
            )
        if not scored:
            roles = ("anchor", "positive", "negative")
            if isinstance(data.columns, dict) and {"text1", "text2", "score"} & set(data.columns):
                raise ConfigError(
                    f"data.columns: {{text1, text2, score}} are scored pairs; supervised.loss {s.loss} reads "
                    f"(anchor, positive[, negative]) texts: set supervised.loss to {', '.join(SCORED_LOSSES)}"
                )
            columns = column_roles(data.columns, roles, 2, f"supervised.loss {s.loss} (pairs or triplets)")
            table = self.checked(column_table(data.train, columns, list(roles[: len(columns)]), limit=data.limit))
            for role, column in zip(roles, columns):
                if all(_number(value) is not None for value in table[role]):
                    raise DataError(
                        f"{data.train}: column {column!r} ({role}) holds numbers, not texts: supervised.loss "
                        f"{s.loss} reads (anchor, positive[, negative]) texts; for scored pairs set "
                        f"supervised.loss to {', '.join(SCORED_LOSSES)} and data.columns to {{text1, text2, score}}"
                    )
            return table
        columns = column_roles(data.columns, ("text1", "text2", "score"), 3, f"supervised.loss {s.loss} (scored pairs)")
        table = self.checked(column_table(data.train, columns, ["sentence1", "sentence2", "score"], limit=data.limit))
        raw = []
        for index, value in enumerate(table["score"]):  # a float a row: a labelled set, small beside its text
            number = _number(value)
            if number is None or not math.isfinite(number):
                line = table_line(data.train, index)
                what = "is not a number" if number is None else "is not finite"
                raise DataError(f"{data.train}:{line}: score column {columns[2]!r}: {value!r} {what}")
            raw.append(number)
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

    def loss(self, model: SentenceTransformer) -> nn.Module:
        s = self.cfg.supervised
        scale = s.similarity_scale
        if s.loss == "mnrl":
            return losses.MultipleNegativesRankingLoss(model, scale=scale)
        if s.loss == "cosent":
            return losses.CoSENTLoss(model, scale=scale)
        if s.loss == "angle":
            return losses.AnglELoss(model, scale=scale)
        return losses.CosineSimilarityLoss(model)
