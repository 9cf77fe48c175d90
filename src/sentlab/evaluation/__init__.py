"""Evaluations: STS (SentEval / SimCSE protocol), geometry (alignment, uniformity)."""

from sentlab.evaluation.results import EvalReport, TaskResult
from sentlab.evaluation.scoring import CosineScorer, PairScorer
from sentlab.evaluation.sts import evaluate_sts

__all__ = ["CosineScorer", "EvalReport", "PairScorer", "TaskResult", "evaluate_sts"]
