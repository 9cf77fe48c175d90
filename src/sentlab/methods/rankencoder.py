"""RankEncoder re-training (Seonwoo et al. 2023): E2 learns from E1's rank similarities (Eq. 4-6),
and the final model scores with Eq. 7.

What E1 contributes is computed once, before training (Sec. 3.4, App. A.7)::

    RUN/base_index/                E1's corpus index (unless rank.index names a prebuilt one)
    RUN/base_train_vectors/        E1's vectors of the training sentences (vectors.npy + its record)
    RUN/model/rankencoder/         E2's corpus index: RUN/model is a RankEncoder folder (Eq. 7)
    RUN/results-rankencoder.json   STS results of Eq. 7 with rank.lambda_inf

Each training row carries its index as the ``label`` column (its row of E1's vectors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from datasets import Dataset
from pydantic import Field, model_validator
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.data.tables import sentence_table, text_record, with_row_index
from sentlab.encoders.loading import load_encoder
from sentlab.errors import DataError
from sentlab.evaluation.results import EvalReport
from sentlab.evaluation.scoring import EmbeddingCache
from sentlab.losses.rankencoder import RankEncoderLoss
from sentlab.methods.base import Method, frozen_vectors, register, train_sha256, train_table
from sentlab.rank.index import CorpusIndex, encoder_fingerprint
from sentlab.rank.model import RankEncoder, RankScorer
from sentlab.training.config import TrainConfig, _Section


class RankSection(_Section):
    """RankEncoder re-training; defaults are the paper's (Sec. 4.3)."""

    base_encoder: str = Field(description="E1, the frozen base encoder (alias, folder or hub name)")
    corpus: str | None = Field(None, description="corpus file, one sentence a line (the index is built in the run)")
    corpus_limit: int | None = Field(None, gt=0, description="use the first N corpus lines")
    index: str | None = Field(None, description="a prebuilt index of E1 (sentlab index build) instead of corpus")
    lambda_train: float = Field(0.05, ge=0)
    tau_lower: float | None = Field(0.5, description="Eq. 6 lower bound (null: none, Eq. 4)")
    tau_upper: float | None = Field(0.8, description="Eq. 6 upper bound (null: none, Eq. 4)")
    combine: Literal["hinge", "weighted_sum"] = "hinge"
    lambda_inf: float = Field(0.1, ge=0, le=1, description="Eq. 7 weight saved with the trained RankEncoder")
    encode_batch_size: int = Field(256, gt=0, description="batch size for E1 / E2 corpus encoding")


class RankEncoderConfig(TrainConfig):
    method: Literal["rankencoder"]
    rank: RankSection
    not_read = {
        "loss.hard_negative_weight": "it reads one text column; hard negatives are simcse-sup's or supervised's third column"
    }

    section = "rank"
    section_hint = "rank.base_encoder, rank.corpus"

    @model_validator(mode="after")
    def _one_corpus(self) -> RankEncoderConfig:
        if (self.rank.corpus is None) == (self.rank.index is None):
            raise ValueError("rank: give exactly one of rank.corpus and rank.index")
        return self


@register
class RankEncoderMethod(Method):
    name = "rankencoder"
    in_batch_negatives = True
    no_adapter = "RankEncoder saves a corpus index beside the encoder, which merging an adapter would leave behind"
    no_matryoshka = None  # a loss of cosines: the first K dimensions re-normalised are scored alike
    no_gradient_cache = None  # the loss compares the batch's rows: train.mini_batch_size applies
    config_class = RankEncoderConfig
    run_files = {
        "base_index": "base_index",
        "base_train_vectors": "base_train_vectors",
        "rank_results": "results-rankencoder.json",
    }

    def train_dataset(self) -> Dataset:
        return with_row_index(train_table(self.cfg))  # label: the row of its frozen E1 vectors

    def prepare(self, dataset: Dataset) -> None:
        """E1's corpus index and E1's vectors of the training sentences (cached, reused by --resume)."""
        r, progress = self.cfg.rank, self.cfg.train.progress_bar
        e1 = load_encoder(r.base_encoder, trust_remote_code=self.cfg.model.trust_remote_code)
        fingerprint = encoder_fingerprint(e1)
        if r.index is not None:
            index = CorpusIndex.load(r.index)
            index.check_encoder(e1, fingerprint)
        else:
            corpus_sha256 = text_record(r.corpus, limit=r.corpus_limit)["sha256"]
            corpus = sentence_table(r.corpus, limit=r.corpus_limit)["sentence"]  # lazy: read a chunk at a time
            try:
                index = CorpusIndex.load(self.paths.base_index)
                index.check_encoder(e1, fingerprint)
                index.check_corpus(corpus, sha256=corpus_sha256)
            except DataError:
                index = CorpusIndex.build(
                    e1,
                    corpus,
                    r.base_encoder,
                    batch_size=r.encode_batch_size,
                    show_progress_bar=progress,
                    sha256=corpus_sha256,
                )
                index.save(self.paths.base_index)
        self.index = index
        self.train_vectors = frozen_vectors(
            e1,
            fingerprint,
            dataset,
            train_sha256(self.cfg),
            self.paths.base_train_vectors,
            r.encode_batch_size,
            progress,
        )

    def loss(self, model: SentenceTransformer) -> nn.Module:
        r = self.cfg.rank
        return RankEncoderLoss(
            self.simcse_loss(model),
            self.train_vectors,
            self.index.vectors,
            lambda_train=r.lambda_train,
            tau_lower=r.tau_lower,
            tau_upper=r.tau_upper,
            combine=r.combine,
        )

    def save(self, model: SentenceTransformer) -> None:
        """A RankEncoder folder: Eq. 7 needs E2's own rank vectors, so E2 indexes E1's corpus."""
        index = CorpusIndex.build(
            model,
            self.index.sentences,
            str(self.paths.model),
            batch_size=self.cfg.rank.encode_batch_size,
            show_progress_bar=self.cfg.train.progress_bar,
            sha256=self.index.corpus_sha256,
        )
        self.rank_encoder = RankEncoder(model, index, self.cfg.rank.lambda_inf)
        self.rank_encoder.save(self.paths.model)

    def evaluate_encoded(self, cache: EmbeddingCache) -> dict[Path, EvalReport]:
        """E2's cosine results, and Eq. 7 with rank.lambda_inf."""
        from sentlab.evaluation import evaluate_sts

        reports = super().evaluate_encoded(cache)
        lambda_inf = self.cfg.rank.lambda_inf
        scorer = RankScorer(
            cache, self.rank_encoder.index, lambda_inf, name=f"{self.paths.model} (Eq. 7, lambda_inf={lambda_inf:g})"
        )
        report = evaluate_sts(scorer, self.cfg.data.data_dir)
        report.settings.update({"config": self.cfg.model_dump(), "lambda_inf": lambda_inf})
        reports[self.paths.rank_results] = report
        return reports
