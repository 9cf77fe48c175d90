"""What a ``sentlab adapt`` run is, as data: its arms (:data:`ARMS`, ``ARM@LR``), its budget, its
settings and plan. Both the run (:mod:`sentlab.adapt`) and its report (:mod:`sentlab.reporting.adapt`)
read these, so neither imports the other's module for them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sentlab.errors import ConfigError


@dataclass(frozen=True)
class Arm:
    method: str
    learning_rate: float
    paper: str


ARMS: dict[str, Arm] = {
    "tsdae": Arm("tsdae", 3e-5, "TSDAE (Wang et al., 2021), App. B"),
    "ct": Arm("ct", 1e-5, "CT (Carlsson et al., 2021), as in TSDAE Sec. 5"),
    "mlm": Arm("mlm", 5e-5, "MLM (Devlin et al., 2019), as in TSDAE Sec. 5"),
    "simcse": Arm("simcse-unsup", 5e-5, "SimCSE (Gao et al., 2021), unsupervised"),
    # 1e-4: at 1e-3 the flow's likelihood rose and diverged on CQADupStack titles (docs/results.md)
    "bert-flow": Arm("bert-flow", 1e-4, "BERT-flow (Li et al., 2020)"),
}


def _short(rate: float) -> str:
    """A learning rate as one writes it: 1e-5, not 1e-05."""
    return f"{rate:g}".replace("e-0", "e-")


def arm_spec(name: str) -> Arm:
    """The arm ``name``: a key of :data:`ARMS`, or ``KEY@LR`` for that arm at learning rate ``LR``."""
    key, at, rate = name.partition("@")
    if key not in ARMS:
        raise ConfigError(f"unknown method {key!r} for adapt (choose from {', '.join(ARMS)})")
    if not at:
        return ARMS[key]
    try:
        learning_rate = float(rate)
    except ValueError:
        learning_rate = math.nan
    if not (math.isfinite(learning_rate) and learning_rate > 0):
        raise ConfigError(
            f"{name}: after '@' give the arm's learning rate, a positive number (e.g. {key}@{_short(ARMS[key].learning_rate / 10)})"
        )
    return replace(ARMS[key], learning_rate=learning_rate)


GENERAL_TASKS = {"sts-b": ["STS-B"], "sts": ["STS avg"], "none": []}  # --general -> the task names it adds


@dataclass
class Budget:
    steps: int | None = None
    sentences: int | None = None
    minutes: float | None = None

    def __post_init__(self) -> None:
        given = [name for name, value in asdict(self).items() if value is not None]
        if len(given) != 1:
            raise ConfigError("give exactly one budget: --steps, --sentences or --minutes")
        if any(value <= 0 for value in asdict(self).values() if value is not None):
            raise ConfigError("the budget must be positive")

    def max_steps(self, batch_size: int) -> int:
        if self.steps is not None:
            return self.steps
        if self.sentences is not None:
            return math.ceil(self.sentences / batch_size)
        return -1

    def describe(self) -> str:
        return (
            f"{self.steps} steps"
            if self.steps is not None
            else f"{self.sentences} sentences"
            if self.sentences is not None
            else f"{self.minutes} minutes"
        )


@dataclass
class AdaptSettings:
    text: str
    text_sha256: str
    model: str
    pooler: str | None
    max_seq_length: int
    batch_size: int
    budget: dict[str, Any]
    dev_card: str | None
    general: str
    data_dir: str | None
    eval_steps: int
    trust_remote_code: bool = False  # model.trust_remote_code of every arm, and of the start model's scoring
    model_sha256: str | None = None  # a local start model by its files: retrained at the same path, another model
    dev_card_identity: str | None = None  # the dev card's settings and data (TaskCard.identity): it picks each
    # arm's kept checkpoint, so a changed dev card is another plan

    def comparable(self) -> dict[str, Any]:
        """What a rerun must have asked alike (a folder written before trust_remote_code, model_sha256 or
        dev_card_identity existed: off, a hub model, no dev card)."""
        unset = {"trust_remote_code": False, "model_sha256": None, "dev_card_identity": None}
        return {k: v for k, v in asdict(self).items() if k != "text" and not (k in unset and v == unset[k])}


@dataclass
class AdaptPlan:
    settings: AdaptSettings
    cards: list[str]
    arms: list[str]
    seeds: list[int]
    output: Path
    progress_bar: bool = False
    # each card's identity (TaskCard.identity), hashed once a run for every model it scores
    card_identities: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
