"""RankCSE (Liu et al. 2023): InfoNCE + ranking consistency + listwise distillation from frozen
teachers (Eq. 1-6, :class:`sentlab.losses.rankcse.RankCSELoss`).

The teachers' vectors of the training sentences are computed once before training and cached as
``RUN/teacher_vectors/teacher<k>/vectors.npy`` (+ its record); each training row carries its index
as the ``label`` column.
"""

from __future__ import annotations

from typing import Literal

from datasets import Dataset
from pydantic import Field, model_validator
from sentence_transformers import SentenceTransformer
from torch import nn

from sentlab.data.tables import with_row_index
from sentlab.losses.rankcse import RankCSELoss
from sentlab.methods.base import (
    TEACHER_SETTING_HELP,
    Method,
    TeacherSetting,
    frozen_vectors,
    load_teacher,
    register,
    train_sha256,
    train_table,
)
from sentlab.rank.index import encoder_fingerprint
from sentlab.training.config import TrainConfig, _Section


class RankCSESection(_Section):
    """Defaults follow App. A.1 (tau_2 / tau_3 are grid-searched there)."""

    teachers: list[str] = Field(min_length=1, description="frozen teachers (alias, folder or hub name)")
    teacher_weights: list[float] | None = Field(None, description="alpha_k, summing to 1 (default: equal)")
    beta: float = Field(1.0, ge=0, description="weight of the ranking consistency (Eq. 2); 0 = off")
    gamma: float = Field(1.0, ge=0, description="weight of the ranking distillation (Eq. 3); 0 = off")
    distillation: Literal["listnet", "listmle"] = "listnet"
    tau_student: float = Field(0.05, gt=0, description="tau_2")
    tau_teacher: float = Field(0.05, gt=0, description="tau_3 (ListNet)")
    use_infonce: bool = Field(True, description="keep InfoNCE (Eq. 1)")
    encode_batch_size: int = Field(256, gt=0, description="batch size for the teachers' one-off encoding")
    teacher_setting: TeacherSetting = Field("torch fp32", description=f"every teacher: {TEACHER_SETTING_HELP}")


class RankCSEConfig(TrainConfig):
    method: Literal["rankcse"]
    rankcse: RankCSESection
    not_read = {
        "loss.hard_negative_weight": "it reads one text column; hard negatives are simcse-sup's or supervised's third column"
    }

    section = "rankcse"
    section_hint = "rankcse.teachers"

    @model_validator(mode="after")
    def _terms_and_weights(self) -> RankCSEConfig:
        r = self.rankcse
        if not r.use_infonce and r.beta == 0 and r.gamma == 0:
            raise ValueError("rankcse: every term of Eq. 6 is switched off (use_infonce, beta, gamma)")
        weights = r.teacher_weights
        if weights is not None and (len(weights) != len(r.teachers) or abs(sum(weights) - 1) > 1e-6):
            raise ValueError("rankcse.teacher_weights: one weight per teacher, summing to 1")
        return self


@register
class RankCSEMethod(Method):
    name = "rankcse"
    in_batch_negatives = True
    no_adapter = None  # the encoder it saves is what the loss trains
    no_matryoshka = None  # a loss of cosines: the first K dimensions re-normalised are scored alike
    no_gradient_cache = None  # the loss compares the batch's rows: train.mini_batch_size applies
    config_class = RankCSEConfig
    run_files = {"teacher_vectors": "teacher_vectors"}

    def train_dataset(self) -> Dataset:
        return with_row_index(train_table(self.cfg))  # label: the row of its frozen teacher vectors

    def prepare(self, dataset: Dataset) -> None:
        self.teacher_vectors = []
        sha256 = train_sha256(self.cfg)
        for k, name in enumerate(self.cfg.rankcse.teachers):
            setting = self.cfg.rankcse.teacher_setting
            teacher = load_teacher(name, setting, self.cfg.model.trust_remote_code, self.cfg.data.data_dir)
            self.teacher_vectors.append(
                frozen_vectors(
                    teacher,
                    # the setting named: onnx / openvino fp32 keep torch fp32's weights fingerprint
                    encoder_fingerprint(teacher) + ("" if setting == "torch fp32" else f":{setting}"),
                    dataset,
                    sha256,
                    self.paths.teacher_vectors / f"teacher{k}",
                    self.cfg.rankcse.encode_batch_size,
                    self.cfg.train.progress_bar,
                )
            )

    def loss(self, model: SentenceTransformer) -> nn.Module:
        r = self.cfg.rankcse
        return RankCSELoss(
            self.simcse_loss(model),
            self.teacher_vectors,
            r.teacher_weights,
            beta=r.beta,
            gamma=r.gamma,
            distillation=r.distillation,
            tau_student=r.tau_student,
            tau_teacher=r.tau_teacher,
            use_infonce=r.use_infonce,
        )
