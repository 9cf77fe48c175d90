"""SentEval transfer tasks with frozen embeddings and scikit-learn logistic regression.

The validation schemes are SentEval's (``senteval/tools/validation.py``), with its classifier path
``usepytorch=False`` (``LogisticRegression(C=reg, random_state=seed)``, scikit-learn's defaults):

* MR, CR, SUBJ, MPQA - inner k-fold (:func:`nested_cv_accuracy`): outer stratified k folds; in each,
  C in {2^-2 .. 2^3} is chosen by an inner stratified k-fold CV on the outer training part, refit
  there, and scored on the held-out fold; the test accuracy is the mean over outer folds.
* SST-2 - dev split (:func:`dev_selected_accuracy`): C in {2^-2 .. 2^3} chosen on dev, test once.
* TREC, MRPC - k-fold on train (:func:`kfold_selected_accuracy`): C in {2^-1 .. 2^5} chosen by a
  stratified k-fold CV on train, refit on all of train, test once. MRPC also reports F1.

Folds: ``StratifiedKFold(k, shuffle=True, random_state=1111)``; mean fold scores are rounded to
two decimals (x 100) before the arg-max, the first best C wins - all as SentEval does, since both
decide the selected C. ``k`` is 10 (the papers' setting; SentEval's own default is 5).

MRPC pair features as SentEval's ``mrpc.py`` builds them: ``[|u - v|, u * v]``; ``pair_features=
"full"`` gives ``[u, v, |u - v|, u * v]`` (SentEval's SNLI / InferSent features) instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from sentlab.data.transfer import TRANSFER_TASKS, TransferData, load_transfer_task
from sentlab.errors import DataError
from sentlab.evaluation.features import FeatureFn
from sentlab.evaluation.results import EvalReport, MetricsResult

SEED = 1111
KFOLD = 10
C_GRID = tuple(2.0**t for t in range(-2, 4))  # InnerKFoldClassifier, SplitClassifier
C_GRID_KFOLD = tuple(2.0**t for t in range(-1, 6))  # KFoldClassifier
PAIR_FEATURES = ("senteval", "full")


def _fit(C: float, X: np.ndarray, y: np.ndarray, seed: int) -> tuple[LogisticRegression, bool]:
    """Fit one classifier; also says whether lbfgs stopped at its iteration cap."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf = LogisticRegression(C=C, random_state=seed).fit(X, y)
    return clf, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def _fit_score(
    C: float, X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int
) -> tuple[float, bool]:
    clf, capped = _fit(C, X[train], y[train], seed)
    return float(clf.score(X[test], y[test])), capped


class _Counter:
    """Counts fits that hit lbfgs's iteration cap (reported, as SentEval would just warn)."""

    def __init__(self) -> None:
        self.fits = 0
        self.capped = 0

    def add(self, results: Iterable[tuple[float, bool]]) -> list[float]:
        scores = []
        for score, capped in results:
            scores.append(score)
            self.fits += 1
            self.capped += int(capped)
        return scores


def _select(mean_scores: Sequence[float]) -> tuple[int, float]:
    """Index of the best grid value and its score, x 100 and rounded first as SentEval does."""
    rounded = [round(100 * float(s), 2) for s in mean_scores]
    best = int(np.argmax(rounded))
    return best, rounded[best]


def nested_cv_accuracy(
    X: np.ndarray,
    y: np.ndarray,
    kfold: int = KFOLD,
    seed: int = SEED,
    grid: Sequence[float] = C_GRID,
    n_jobs: int | None = None,
) -> dict[str, float]:
    """SentEval's InnerKFoldClassifier: ``{"accuracy", "dev_accuracy", ...}`` (x 100)."""
    outer = list(StratifiedKFold(kfold, shuffle=True, random_state=seed).split(X, y))
    inner_cv = StratifiedKFold(kfold, shuffle=True, random_state=seed)
    jobs = [
        delayed(_fit_score)(C, X, y, train[inner_train], train[inner_test], seed)
        for train, _ in outer
        for inner_train, inner_test in inner_cv.split(np.zeros(len(train)), y[train])  # folds need y only
        for C in grid
    ]
    counter = _Counter()
    scores = np.reshape(counter.add(Parallel(n_jobs=n_jobs)(jobs)), (len(outer), kfold, len(grid)))
    chosen, dev = [], []
    for per_fold in scores.mean(axis=1):  # (outer fold, C): mean over the inner folds
        best, score = _select(per_fold)
        chosen.append(grid[best])
        dev.append(score)
    test = counter.add(
        Parallel(n_jobs=n_jobs)(
            delayed(_fit_score)(C, X, y, train, held_out, seed) for C, (train, held_out) in zip(chosen, outer)
        )
    )
    return {
        "accuracy": round(float(np.mean([round(100 * s, 2) for s in test])), 2),
        "dev_accuracy": round(float(np.mean(dev)), 2),
        "C": chosen,
        "n_fits": counter.fits,
        "n_fits_at_iteration_cap": counter.capped,
    }


def kfold_selected_accuracy(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    kfold: int = KFOLD,
    seed: int = SEED,
    grid: Sequence[float] = C_GRID_KFOLD,
    n_jobs: int | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """SentEval's KFoldClassifier: C by k-fold CV on train, refit on train, score test."""
    folds = list(StratifiedKFold(kfold, shuffle=True, random_state=seed).split(X_train, y_train))
    counter = _Counter()
    scores = counter.add(
        Parallel(n_jobs=n_jobs)(
            delayed(_fit_score)(C, X_train, y_train, tr, te, seed) for C in grid for tr, te in folds
        )
    )
    best, dev = _select(np.reshape(scores, (len(grid), len(folds))).mean(axis=1))
    C = grid[best]
    clf, capped = _fit(C, X_train, y_train, seed)
    counter.add([(0.0, capped)])
    predicted = clf.predict(X_test)
    return (
        {
            "accuracy": round(100 * float(np.mean(predicted == y_test)), 2),
            "dev_accuracy": dev,
            "C": C,
            "n_fits": counter.fits,
            "n_fits_at_iteration_cap": counter.capped,
        },
        predicted,
    )


def dev_selected_accuracy(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_dev: np.ndarray,
    y_dev: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    seed: int = SEED,
    grid: Sequence[float] = C_GRID,
    n_jobs: int | None = None,
) -> dict[str, float]:
    """SentEval's SplitClassifier: C by dev accuracy, then the test accuracy of that classifier."""
    fitted = Parallel(n_jobs=n_jobs)(delayed(_fit)(C, X_train, y_train, seed) for C in grid)
    best, dev = _select([clf.score(X_dev, y_dev) for clf, _ in fitted])
    clf = fitted[best][0]  # lbfgs is deterministic: refitting with the chosen C gives the same model
    return {
        "accuracy": round(100 * float(clf.score(X_test, y_test)), 2),
        "dev_accuracy": dev,
        "C": grid[best],
        "n_fits": len(fitted),
        "n_fits_at_iteration_cap": sum(capped for _, capped in fitted),
    }


def pair_features(u: np.ndarray, v: np.ndarray, kind: str = "senteval") -> np.ndarray:
    if kind == "senteval":
        return np.c_[np.abs(u - v), u * v]
    if kind == "full":
        return np.c_[u, v, np.abs(u - v), u * v]
    raise DataError(f"unknown pair features {kind!r} (available: {', '.join(PAIR_FEATURES)})")


def score_transfer(
    data: TransferData,
    features: FeatureFn,
    kfold: int = KFOLD,
    seed: int = SEED,
    pair_kind: str = "senteval",
    n_jobs: int | None = None,
) -> MetricsResult:
    """Accuracy (and MRPC's F1) of one task, x 100."""
    task = data.task
    embed = lambda split: np.asarray(features(split.sentences), dtype=np.float64)  # noqa: E731
    if task.protocol == "cv":
        split = data.splits["all"]
        scores = nested_cv_accuracy(embed(split), split.labels, kfold, seed, n_jobs=n_jobs)
        n = len(split)
    elif task.protocol == "split":
        tr, dv, te = (data.splits[k] for k in ("train", "dev", "test"))
        scores = dev_selected_accuracy(
            embed(tr), tr.labels, embed(dv), dv.labels, embed(te), te.labels, seed, n_jobs=n_jobs
        )
        n = len(te)
    else:
        tr, te = data.splits["train"], data.splits["test"]
        if task.pairs:
            X_tr = pair_features(embed(tr), np.asarray(features(tr.sentences2), np.float64), pair_kind)
            X_te = pair_features(embed(te), np.asarray(features(te.sentences2), np.float64), pair_kind)
        else:
            X_tr, X_te = embed(tr), embed(te)
        scores, predicted = kfold_selected_accuracy(X_tr, tr.labels, X_te, te.labels, kfold, seed, n_jobs=n_jobs)
        if task.pairs:
            scores["f1"] = round(100 * float(f1_score(te.labels, predicted)), 2)
        n = len(te)
    extra = {k: scores.pop(k) for k in ("C", "n_fits", "n_fits_at_iteration_cap") if k in scores}
    extra.update({"protocol": task.protocol, "kfold": kfold, "n_empty_sentences": data.n_empty})
    if task.pairs:
        extra["pair_features"] = pair_kind
    return MetricsResult(main_metric="accuracy", scores=scores, n=n, extra=extra)


def evaluate_transfer(
    features: FeatureFn,
    data_dir: str | Path | None = None,
    tasks: Iterable[str] = tuple(TRANSFER_TASKS),
    report: EvalReport | None = None,
    kfold: int = KFOLD,
    pair_kind: str = "senteval",
    n_jobs: int | None = None,
    model_name: str = "model",
) -> EvalReport:
    """Run the transfer tasks; ``transfer_avg`` is the mean accuracy when all seven ran."""
    report = report or EvalReport(model=model_name)
    accuracies = []
    for name in tasks:
        result = score_transfer(load_transfer_task(name, data_dir), features, kfold, pair_kind=pair_kind, n_jobs=n_jobs)
        report.tasks[name] = result
        accuracies.append(result.scores["accuracy"])
    if len(accuracies) == len(TRANSFER_TASKS):
        report.summary["transfer_avg"] = float(np.mean(accuracies))
    return report
