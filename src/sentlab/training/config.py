"""Training configs: a typed schema, YAML loading, ``--set key=value`` overrides, one-line errors.

A config has five sections; unknown keys are errors (so a typo never silently falls back to a
default). See ``configs/`` for presets with the papers' settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sentlab.encoders.loading import DEFAULT_PROMPT_TEMPLATE
from sentlab.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSection(_Section):
    name: str = Field(description="backbone or sentence-transformers model: alias, local folder, or hub name")
    pooler: Literal["cls", "cls_before_pooler", "mean", "first_last_avg", "prompt"] | None = None
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    max_seq_length: int = Field(32, gt=0)
    num_layers: int | None = Field(None, gt=0, description="keep only the first N transformer layers "
                                                           "(a smaller student, e.g. for distillation)")


class DataSection(_Section):
    train: str = Field(description="training file (.txt: one sentence a line; .jsonl/.csv/.tsv: columns)")
    columns: list[str] = Field(default_factory=list, description="columns to read from a table file")
    limit: int | None = Field(None, gt=0, description="use only the first N rows")
    data_dir: str | None = Field(None, description="evaluation data folder (default: $SENTLAB_DATA or ../shared/data)")


class LossSection(_Section):
    name: Literal["simcse"] = "simcse"
    temperature: float = Field(0.05, gt=0)
    hard_negative_weight: float = 0.0


class TrainSection(_Section):
    output_dir: str
    batch_size: int = Field(64, gt=0, description="per device")
    learning_rate: float = Field(3e-5, gt=0)
    epochs: float = Field(1.0, gt=0)
    max_steps: int = Field(-1, description="stop after this many steps (-1: run the epochs)")
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    eval_steps: int = Field(125, gt=0, description="evaluate on STS-B dev every N steps")
    save_steps: int | None = Field(None, gt=0, description="checkpoint every N steps (default: eval_steps)")
    save_total_limit: int | None = Field(2, gt=0)
    keep_best: bool = Field(True, description="reload the checkpoint with the best STS-B dev score at the end")
    logging_steps: int = Field(10, gt=0)
    mixed_precision: Literal["no", "fp16", "bf16"] = "no"
    seed: int = 42
    dataloader_workers: int = Field(0, ge=0)
    progress_bar: bool = True


class EvalSection(_Section):
    dev_task: Literal["STS-B", "none"] = "STS-B"
    dev_limit: int | None = Field(None, gt=0, description="use only the first N dev pairs (quick runs)")
    final_tasks: list[Literal["sts"]] = Field(default_factory=lambda: ["sts"])


class RankSection(_Section):
    """RankEncoder re-training (method ``rankencoder``); defaults are the paper's (Sec. 4.3)."""

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


class RankCSESection(_Section):
    """RankCSE (method ``rankcse``); defaults follow App. A.1 (tau_2 / tau_3 are grid-searched there)."""

    teachers: list[str] = Field(min_length=1, description="frozen teachers (alias, folder or hub name)")
    teacher_weights: list[float] | None = Field(None, description="alpha_k, summing to 1 (default: equal)")
    beta: float = Field(1.0, ge=0, description="weight of the ranking consistency (Eq. 2); 0 = off")
    gamma: float = Field(1.0, ge=0, description="weight of the ranking distillation (Eq. 3); 0 = off")
    distillation: Literal["listnet", "listmle"] = "listnet"
    tau_student: float = Field(0.05, gt=0, description="tau_2")
    tau_teacher: float = Field(0.05, gt=0, description="tau_3 (ListNet)")
    use_infonce: bool = Field(True, description="keep InfoNCE (Eq. 1)")
    encode_batch_size: int = Field(256, gt=0, description="batch size for the teachers' one-off encoding")


class TrainConfig(_Section):
    method: Literal["simcse-unsup", "simcse-sup", "rankencoder", "rankcse"]
    model: ModelSection
    data: DataSection
    loss: LossSection = Field(default_factory=LossSection)
    rank: RankSection | None = None
    rankcse: RankCSESection | None = None
    train: TrainSection
    eval: EvalSection = Field(default_factory=EvalSection)

    @model_validator(mode="after")
    def _method_sections(self) -> TrainConfig:
        if self.method == "rankencoder":
            if self.rank is None:
                raise ValueError("method rankencoder needs a 'rank' section (rank.base_encoder, rank.corpus)")
            if (self.rank.corpus is None) == (self.rank.index is None):
                raise ValueError("rank: give exactly one of rank.corpus and rank.index")
        elif self.rank is not None:
            raise ValueError(f"the 'rank' section is only for method rankencoder, not {self.method}")
        if self.method == "rankcse":
            if self.rankcse is None:
                raise ValueError("method rankcse needs a 'rankcse' section (rankcse.teachers)")
            r = self.rankcse
            if not r.use_infonce and r.beta == 0 and r.gamma == 0:
                raise ValueError("rankcse: every term of Eq. 6 is switched off (use_infonce, beta, gamma)")
            weights = self.rankcse.teacher_weights
            if weights is not None and (len(weights) != len(self.rankcse.teachers) or abs(sum(weights) - 1) > 1e-6):
                raise ValueError("rankcse.teacher_weights: one weight per teacher, summing to 1")
        elif self.rankcse is not None:
            raise ValueError(f"the 'rankcse' section is only for method rankcse, not {self.method}")
        return self

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(), sort_keys=False)


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


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``key=value`` overrides, validate; errors are one line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        tree = yaml.safe_load(path.read_text("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    for key, value in parse_overrides(overrides or []):
        _set_dotted(tree, key, value)
    try:
        return TrainConfig.model_validate(tree)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        if first["type"] == "extra_forbidden":
            message = f"unknown key {where!r}"
        elif first["type"] == "missing":
            message = f"missing required key {where!r}"
        elif first["type"] == "value_error" and not first["loc"]:
            message = first["msg"].removeprefix("Value error, ")
        else:
            message = f"{where}: {first['msg']} (got {first.get('input')!r})"
        more = f" (+{len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
        raise ConfigError(f"{path}: {message}{more}") from None
