"""A supervised stage with sentence-transformers' own losses, to chain with the unsupervised
methods as in the TSDAE paper (Sec. 4): "target → NLI+STS", "NLI+STS → target", and pre-training
followed by in-domain supervised training (Fig. 2). A run's ``model/`` is the next run's
``model.name`` (``sentlab pipeline`` chains the configs).

``supervised.loss``:

* ``mnrl`` - ``MultipleNegativesRankingLoss`` (the paper's MNRL, Sec. 5.1: cross-entropy over
  in-batch negatives, cosine × ``scale``) on (anchor, positive[, hard negative]) rows;
* ``cosine-mse`` - ``CosineSimilarityLoss`` (MSE between the cosine and the gold score scaled to
  [0, 1]), the paper's MSE loss on STS-B train / TwitterPara;
* ``cosent`` - ``CoSENTLoss`` on scored pairs.

``supervised.format`` says how ``data.train`` is read: ``table`` (a .jsonl / .csv / .tsv with
``data.columns``: 2-3 text columns for mnrl, 2 text columns + a score column otherwise), ``snli``
(a folder in SentEval's SNLI layout; triplets from the ``supervised.split`` split) or ``stsb`` (an
``sts-<split>.csv`` of SentEval's STS-B, scores 0-5).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from datasets import Dataset
from pydantic import Field
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import losses
from torch import nn

from sentlab.data.nli import read_snli_triplets
from sentlab.data.sts import read_stsb
from sentlab.data.tables import column_table
from sentlab.errors import ConfigError, DataError
from sentlab.methods.base import Method, register
from sentlab.training.config import TrainConfig, _Section


class SupervisedSection(_Section):
    loss: Literal["mnrl", "cosine-mse", "cosent"] = "mnrl"
    format: Literal["table", "snli", "stsb"] = "table"
    split: str = Field("train", description="split of an snli folder / stsb file name")
    scale: float = Field(20.0, gt=0, description="mnrl / cosent: similarity scale")
    score_max: float = Field(5.0, gt=0, description="scores are divided by this (STS: 5)")


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

    def train_dataset(self) -> Dataset:
        s, data = self.cfg.supervised, self.cfg.data
        scored = s.loss != "mnrl"
        if s.format == "snli":
            if scored:
                raise ConfigError("supervised.format snli gives triplets; use supervised.loss: mnrl")
            rows = read_snli_triplets(data.train, s.split)[: data.limit]
            return Dataset.from_dict(
                {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "negative": [r[2] for r in rows]}
            )
        if s.format == "stsb":
            if not scored:
                raise ConfigError("supervised.format stsb gives scored pairs; use supervised.loss cosine-mse or cosent")
            path = Path(data.train)
            pairs = read_stsb(path.parent, path.stem.removeprefix("sts-"))
            n = data.limit or len(pairs.scores)
            return Dataset.from_dict(
                {
                    "sentence1": pairs.sentences1[:n],
                    "sentence2": pairs.sentences2[:n],
                    "score": [float(x) / s.score_max for x in pairs.scores[:n]],
                }
            )
        columns = data.columns
        if scored and len(columns) != 3:
            raise ConfigError(f"data.columns: scored pairs need [text1, text2, score], got {columns}")
        if not scored and len(columns) not in (2, 3):
            raise ConfigError(
                f"data.columns: mnrl needs [anchor, positive] or [anchor, positive, negative], got {columns}"
            )
        if not scored:
            names = ["anchor", "positive", "negative"][: len(columns)]
            return column_table(data.train, columns, names, limit=data.limit)
        table = column_table(data.train, columns, ["sentence1", "sentence2", "score"], limit=data.limit)
        try:  # a float a row: the scored pairs are a labelled set, small beside their text
            scores = [float(value) / s.score_max for value in table["score"]]
        except ValueError as err:
            raise DataError(f"{data.train}: score column {columns[2]!r} is not a number ({err})") from None
        return table.remove_columns("score").add_column("score", scores)

    def loss(self, model: SentenceTransformer) -> nn.Module:
        s = self.cfg.supervised
        if s.loss == "mnrl":
            return losses.MultipleNegativesRankingLoss(model, scale=s.scale)
        if s.loss == "cosent":
            return losses.CoSENTLoss(model, scale=s.scale)
        return losses.CosineSimilarityLoss(model)
