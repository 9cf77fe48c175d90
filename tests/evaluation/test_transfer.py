"""Transfer classifiers against a literal loop version of SentEval's validation code, and features."""

from __future__ import annotations

import joblib
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from sentlab.data.transfer import load_transfer_task
from sentlab.errors import SentlabError
from sentlab.evaluation.features import cls_layer_average, feature_function
from sentlab.evaluation.transfer import (
    C_GRID,
    C_GRID_KFOLD,
    dev_selected_accuracy,
    evaluate_transfer,
    kfold_selected_accuracy,
    nested_cv_accuracy,
    pair_features,
)
from tests.fake_data import write_transfer


def naive_inner_kfold(X, y, k):
    """SentEval's InnerKFoldClassifier.run (usepytorch=False), written out as loops."""
    regs = [2**t for t in range(-2, 4, 1)]
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=1111)
    innerskf = StratifiedKFold(n_splits=k, shuffle=True, random_state=1111)
    dev, test = [], []
    for train_idx, test_idx in skf.split(X, y):
        X_train, X_test, y_train, y_test = X[train_idx], X[test_idx], y[train_idx], y[test_idx]
        scores = []
        for reg in regs:
            regscores = []
            for inner_train, inner_test in innerskf.split(X_train, y_train):
                clf = LogisticRegression(C=reg, random_state=1111).fit(X_train[inner_train], y_train[inner_train])
                regscores.append(clf.score(X_train[inner_test], y_train[inner_test]))
            scores.append(round(100 * np.mean(regscores), 2))
        optreg = regs[np.argmax(scores)]
        dev.append(np.max(scores))
        clf = LogisticRegression(C=optreg, random_state=1111).fit(X_train, y_train)
        test.append(round(100 * clf.score(X_test, y_test), 2))
    return round(np.mean(dev), 2), round(np.mean(test), 2)


def naive_kfold(X_tr, y_tr, X_te, y_te, k):
    regs = [2**t for t in range(-1, 6, 1)]
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=1111)
    scores = []
    for reg in regs:
        fold = [
            LogisticRegression(C=reg, random_state=1111).fit(X_tr[a], y_tr[a]).score(X_tr[b], y_tr[b])
            for a, b in skf.split(X_tr, y_tr)
        ]
        scores.append(round(100 * np.mean(fold), 2))
    optreg = regs[np.argmax(scores)]
    clf = LogisticRegression(C=optreg, random_state=1111).fit(X_tr, y_tr)
    return np.max(scores), round(100 * clf.score(X_te, y_te), 2)


def noisy_data(n=120, dim=6, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim))
    y = (X[:, 0] + X[:, 1] * 0.5 + rng.normal(scale=1.0, size=n) > 0).astype(int)
    if classes == 3:
        y = np.digitize(X[:, 0] + rng.normal(scale=0.8, size=n), [-0.4, 0.4])
    return X, y


def test_grids_are_sentevals():
    assert C_GRID == (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    assert C_GRID_KFOLD == (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


@pytest.mark.parametrize("k, n_jobs", [(5, None), (3, 2)])
def test_nested_cv_equals_sentevals_loops(k, n_jobs):
    X, y = noisy_data()
    with joblib.parallel_config(backend="threading"):  # parallel order of completion, no process start-up
        result = nested_cv_accuracy(X, y, kfold=k, n_jobs=n_jobs)
    assert (result["dev_accuracy"], result["accuracy"]) == naive_inner_kfold(X, y, k)
    assert result["n_fits"] == k * k * 6 + k and len(result["C"]) == k


def test_kfold_selection_equals_sentevals_loops_multiclass():
    X, y = noisy_data(n=150, classes=3)
    result, predicted = kfold_selected_accuracy(X[:100], y[:100], X[100:], y[100:], kfold=4)
    assert (result["dev_accuracy"], result["accuracy"]) == naive_kfold(X[:100], y[:100], X[100:], y[100:], 4)
    assert result["accuracy"] == round(100 * np.mean(predicted == y[100:]), 2)


def test_dev_selection_picks_the_best_dev_c_and_reports_its_test_accuracy():
    X, y = noisy_data(n=200, seed=3)
    result = dev_selected_accuracy(X[:100], y[:100], X[100:150], y[100:150], X[150:], y[150:])
    dev = [
        round(100 * LogisticRegression(C=c, random_state=1111).fit(X[:100], y[:100]).score(X[100:150], y[100:150]), 2)
        for c in C_GRID
    ]
    best = C_GRID[int(np.argmax(dev))]
    assert result["C"] == best and result["dev_accuracy"] == max(dev)
    clf = LogisticRegression(C=best, random_state=1111).fit(X[:100], y[:100])
    assert result["accuracy"] == round(100 * clf.score(X[150:], y[150:]), 2)


def test_pair_features_by_hand():
    u, v = np.array([[1.0, 2.0]]), np.array([[3.0, 1.0]])
    assert pair_features(u, v).tolist() == [[2.0, 1.0, 3.0, 2.0]]
    assert pair_features(u, v, "full").tolist() == [[1.0, 2.0, 3.0, 1.0, 2.0, 1.0, 3.0, 2.0]]


def keyword_features(sentences):
    """Two features: the first word marks the fake tasks' class ("dog" / "who"); length is noise."""
    return np.array([[float(s.split()[0] in ("dog", "who")), len(s.split()) / 10] for s in sentences])


def test_all_seven_tasks_on_learnable_fake_data(tmp_path):
    write_transfer(tmp_path, n=20)
    report = evaluate_transfer(keyword_features, tmp_path, kfold=3)
    assert list(report.tasks) == ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC"]
    for name in ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC"):
        assert report.tasks[name].main == 100.0, name
    mrpc = report.tasks["MRPC"]
    assert mrpc.extra["pair_features"] == "senteval" and "f1" in mrpc.scores
    assert report.summary["transfer_avg"] == pytest.approx(np.mean([r.main for r in report.tasks.values()]))


def test_mrpc_paraphrases_are_found_from_pair_features(tmp_path):
    write_transfer(tmp_path, n=20)

    def bag_of_words(sentences):  # identical sentences -> |u - v| = 0
        vocab = sorted({w for s in sentences for w in s.split()} | {"dog", "cat"})
        return np.array([[s.split().count(w) for w in vocab] for s in sentences], dtype=float)

    data = load_transfer_task("MRPC", tmp_path)
    every = (
        data.splits["train"].sentences
        + data.splits["train"].sentences2
        + data.splits["test"].sentences
        + data.splits["test"].sentences2
    )
    vocab_rows = dict(zip(every, bag_of_words(every)))
    report = evaluate_transfer(lambda s: np.stack([vocab_rows[x] for x in s]), tmp_path, tasks=["MRPC"], kfold=3)
    assert report.tasks["MRPC"].scores["accuracy"] >= 90.0
    assert report.tasks["MRPC"].scores["f1"] >= 90.0


@pytest.fixture
def tiny_st_model(tiny_backbone):
    from sentlab.encoders import build_encoder

    return build_encoder(str(tiny_backbone), "mean").eval()


def test_cls_layer_average_equals_transformers_hidden_states(tiny_st_model):
    sentences = ["the dog runs", "a cat sits on the big red car", ""]
    got = cls_layer_average(tiny_st_model, sentences, last=2, batch_size=2)
    model = tiny_st_model[0].auto_model
    for i, sentence in enumerate(sentences):
        inputs = tiny_st_model[0].tokenizer(sentence, return_tensors="pt").to(tiny_st_model.device)
        with torch.no_grad():
            hidden = model(**inputs, output_hidden_states=True).hidden_states
        expected = (hidden[-1][0, 0] + hidden[-2][0, 0]) / 2
        # one sentence alone vs batches of two (padding): float32 rounding of O(1) hidden states
        np.testing.assert_allclose(got[i], expected.cpu().numpy(), atol=1e-5)
    with pytest.raises(SentlabError, match="cls-last9: the model has 2 layers"):
        cls_layer_average(tiny_st_model, sentences, last=9)
    with pytest.raises(SentlabError, match="unknown features 'pooler'"):
        feature_function("pooler", tiny_st_model)
    np.testing.assert_allclose(feature_function("cls-last2", tiny_st_model)(sentences), got, atol=1e-6)
