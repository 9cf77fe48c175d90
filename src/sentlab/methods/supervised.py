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

Scores are on the scale ``supervised.score_range`` ([low, high]; [0, 5] for ``stsb``; unset: the
data's own lowest and highest score, said in one line); a score outside it is refused with its row,
and each becomes (score - low) / (high - low).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from datasets import Dataset
from pydantic import Field, field_validator
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import losses
from torch import nn

from sentlab.data.nli import read_snli_triplets
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
    split: str = Field("train", description="split of an snli folder / stsb file name")
    scale: float | None = Field(
        None, gt=0, description="mnrl / cosent / angle: similarity scale (unset: 20, sentence-transformers' default)"
    )
    score_range: tuple[float, float] | None = Field(
        None,
        description="the scores' scale [low, high]: a score outside it is refused (stsb: [0, 5]; unset: the "
        "data's lowest and highest score)",
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


@register
class Supervised(Method):
    """One supervised stage with a sentence-transformers loss (see module doc)."""

    name = "supervised"
    config_class = SupervisedConfig
    simcse_mlp = False

    @property
    def in_batch_negatives(self) -> bool:
        return self.cfg.supervised.loss == "mnrl"

    def train_dataset(self) -> Dataset:
        s, data = self.cfg.supervised, self.cfg.data
        scored = s.loss in SCORED_LOSSES
        if s.score_range is not None and not scored:
            raise ConfigError(f"supervised.score_range: supervised.loss {s.loss} reads no scores; remove it")
        if s.loss == "cosine-mse" and s.scale is not None:
            raise ConfigError("supervised.scale: supervised.loss cosine-mse has no similarity scale; remove it")
        if data.columns and s.format != "table":
            raise ConfigError(f"data.columns: supervised.format {s.format} has its own columns; remove data.columns")
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
            columns = column_roles(data.columns, roles, 2, f"supervised.loss {s.loss} (pairs or triplets)")
            return self.checked(column_table(data.train, columns, list(roles[: len(columns)]), limit=data.limit))
        columns = column_roles(data.columns, ("text1", "text2", "score"), 3, f"supervised.loss {s.loss} (scored pairs)")
        table = self.checked(column_table(data.train, columns, ["sentence1", "sentence2", "score"], limit=data.limit))
        try:  # a float a row: the scored pairs are a labelled set, small beside their text
            raw = [float(value) for value in table["score"]]
        except ValueError as err:
            raise DataError(f"{data.train}: score column {columns[2]!r} is not a number ({err})") from None
        if s.score_range is None:
            low, high = min(raw), max(raw)
            if low == high:
                raise DataError(f"{data.train}: every score is {low:g}; scored pairs need scores that differ")
            say(f"supervised.score_range: read from the data as [{low:g}, {high:g}] (set it to state the scale)")
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
