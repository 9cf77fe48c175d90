"""Cross-encoders as teachers: sentence-transformers' ``CrossEncoder``, which reads a (query, text) pair
together and gives it one score. ``sentlab mine --cross-encoder`` rescores its candidates with one
(margins and score caps against its scores), and ``supervised.teacher`` takes one for the labels of
MarginMSE (Hofstätter et al. 2020: the teacher's margin score(q, p) - score(q, n)) and DistillKLDiv
(the teacher's scores [score(q, p), score(q, n_1) ...]). A teacher's score is the cross-encoder's logit,
before the activation it was saved with (a sigmoid for a one-label sentence-transformers model), as the
papers take a reranker's scores; in mining, the margins hold against what its ``predict`` gives."""

from __future__ import annotations

from pathlib import Path

from sentlab.encoders.loading import (
    _first_line,
    check_weight_files,
    is_cross_encoder,
    refuse_remote_code,
    resolve_model_path,
)
from sentlab.errors import ModelLoadError


def load_cross_encoder(name: str | Path, device: str | None = None, trust_remote_code: bool = False, what: str = ""):
    """The cross-encoder ``name`` (alias, folder or hub name); a model that is not one is one line
    naming ``what`` asked for it."""
    from sentence_transformers import CrossEncoder

    path = resolve_model_path(name)
    if not is_cross_encoder(path):
        raise ModelLoadError(
            f"{what or name}: {name} is not a cross-encoder (a model that scores a pair of texts together: "
            "sentence-transformers' CrossEncoder, or a sequence classifier with one label)"
        )
    check_weight_files(path)
    refuse_remote_code(name, path, trust_remote_code)
    try:
        model = CrossEncoder(path, device=device, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, RuntimeError) as err:
        raise ModelLoadError(f"{name}: cannot load the cross-encoder ({_first_line(err)})") from None
    if model.num_labels != 1:
        raise ModelLoadError(f"{name}: a cross-encoder of {model.num_labels} labels; a teacher gives one score a pair")
    return model


def score_pairs(model, pairs: list[tuple[str, str]], batch_size: int) -> list[float]:
    """The cross-encoder's logit of each pair (its score before its activation: the teacher scores of
    MarginMSE, Hofstätter et al. 2020, and of DistillKLDiv's softmax), each distinct pair scored once
    (an anchor's positive repeated over its rows is read once)."""
    import torch

    distinct = list(dict.fromkeys(pairs))
    scores = model.predict(
        distinct,
        batch_size=batch_size,
        show_progress_bar=False,
        convert_to_numpy=True,
        activation_fn=torch.nn.Identity(),
    )
    by_pair = dict(zip(distinct, (float(s) for s in scores)))
    return [by_pair[pair] for pair in pairs]
