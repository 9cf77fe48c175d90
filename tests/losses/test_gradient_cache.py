"""Gradient Cache (``sentlab.losses.GradientCache``, ``train.mini_batch_size``): for every loss that
takes it, the chunked step's value and gradients equal the whole batch's, dropout included; a run in
chunks trains to the weights of a run without; the methods whose loss takes each row alone refuse it.

Float64 where gradients are compared: float32 gradients of these tiny models already differ by ~1e-4
of their norm between two summation orders, which would hide a small caching error; in float64 the
two paths agree to ~1e-12, and a stale, unscaled or mis-assigned cache is off by O(1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import yaml
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import losses as st_losses

from sentlab import losses
from sentlab.encoders import build_encoder
from sentlab.errors import ConfigError
from sentlab.methods import load_config
from sentlab.training import engine
from tests.conftest import DEVICE, features_of, tiny_config

TEXTS = [
    "a man plays the guitar",
    "the dog runs in the park",
    "a girl reads a book",
    "two cats sleep",
    "a boy swims",
    "the woman eats food",
    "a child is playing",
]
OTHER = ["a man plays music", "a dog runs", "the girl reads", "cats are asleep", "a child in water", "food", "play"]
NEGATIVE = ["a woman sits", "the cat eats", "a boy swims", "dogs bark", "a man reads", "a park", "the ball"]


def encoder(backbone) -> torch.nn.Module:
    return build_encoder(str(backbone), "mean").double()


def frozen(rows: int, dim: int = 6, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dim))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def case(name: str, model):
    """(loss, columns of texts, labels) of one loss that takes Gradient Cache."""
    rows = torch.arange(len(TEXTS), device=DEVICE)
    if name == "simcse-unsup":
        return losses.SimCSELoss(model, gather_across_devices=False), [TEXTS], None
    if name == "simcse-sup":
        loss = losses.SimCSELoss(model, hard_negative_weight=0.5, gather_across_devices=False)
        return loss, [TEXTS, OTHER, NEGATIVE], None
    if name == "rankcse":
        base = losses.SimCSELoss(model, gather_across_devices=False)
        loss = losses.RankCSELoss(base, [frozen(len(TEXTS)), frozen(len(TEXTS), seed=1)], [1 / 3, 2 / 3])
        return loss, [TEXTS], rows
    if name == "rankencoder":
        base = losses.SimCSELoss(model, gather_across_devices=False)
        loss = losses.RankEncoderLoss(base, frozen(len(TEXTS)), frozen(20, seed=2), tau_lower=None, tau_upper=None)
        return loss, [TEXTS], rows
    if name == "rse":
        loss = losses.RSELoss(model, ["entailment", "duplicate_question"], gather_across_devices=False).double()
        with torch.no_grad():
            loss.relation_vectors.normal_(0, 1.0)  # large enough to matter in the gradient
        return loss, [TEXTS, OTHER, NEGATIVE], rows % 2
    if name == "mnrl":  # sentence-transformers' own losses, as `supervised` builds them
        return st_losses.MultipleNegativesRankingLoss(model), [TEXTS, OTHER, NEGATIVE], None
    if name in ("cosent", "angle"):
        scores = torch.tensor([0.1, 0.9, 0.4, 0.7, 0.2, 0.5, 0.3], dtype=torch.float64, device=DEVICE)
        loss = st_losses.CoSENTLoss(model) if name == "cosent" else st_losses.AnglELoss(model)
        return loss, [TEXTS, OTHER], scores
    if name == "mnsrl":  # an n-tuple: two negative columns
        loss = st_losses.MultipleNegativesSymmetricRankingLoss(model)
        return loss, [TEXTS, OTHER, NEGATIVE, list(reversed(NEGATIVE))], None
    if name == "batch-hard":  # a class a row (supervised's texts with a class)
        return st_losses.BatchHardTripletLoss(model), [TEXTS], rows % 3
    raise AssertionError(name)


CASES = [
    "simcse-unsup",
    "simcse-sup",
    "rankcse",
    "rankencoder",
    "rse",
    "mnrl",
    "cosent",
    "angle",
    "mnsrl",
    "batch-hard",
]


def gradients(model, loss, columns, labels, scale: float = 3.0):
    """The value and the gradient of every trainable parameter (the model's and the loss's own) after
    backward of ``scale`` x the loss (a factor as fp16 loss scaling and accumulation apply)."""
    parameters = dict(model.named_parameters())
    in_model = {id(p) for p in model.parameters()}
    # the loss's own parameters by their own name, however deep the wrappers put them
    parameters.update({n.rsplit(".", 1)[-1]: p for n, p in loss.named_parameters() if id(p) not in in_model})
    for p in parameters.values():
        p.grad = None
    value = loss([features_of(model, texts) for texts in columns], labels)
    (value * scale).backward()
    return float(value), {n: p.grad.clone() for n, p in parameters.items() if p.grad is not None}


def assert_same(expected: dict, got: dict, relative: float = 1e-9, shift_free: bool = False):
    assert set(expected) == set(got)
    floor = 1e-15
    if shift_free:
        # a loss of distances ignores a shift all embeddings share, so the last LayerNorm's bias (under
        # mean pooling) has a gradient of 0 in exact arithmetic, float64 rounding ~1e-16 an entry: that
        # one is compared against 1e-12 of the largest gradient, not its own
        floor = 1e-12 * max(float(g.norm()) for g in expected.values())
    for name, grad in expected.items():
        if "key.bias" in name:  # softmax ignores a shift shared by all keys: this gradient is 0 up to rounding
            continue
        bound = floor if "LayerNorm.bias" in name else 1e-15
        assert float((got[name] - grad).norm()) <= relative * float(grad.norm()) + bound, name


@pytest.mark.parametrize("name", CASES)
def test_chunks_give_the_whole_batchs_loss_and_gradients(name, tiny_backbone_no_dropout):
    """Without dropout both paths see the same embeddings: chunks of 2 rows (the last one short) give
    the value and every gradient of the whole batch in one piece, the loss's own parameters included
    and scaled by the outer factor."""
    torch.manual_seed(0)
    model = encoder(tiny_backbone_no_dropout)
    loss, columns, labels = case(name, model)
    value, whole = gradients(model, loss, columns, labels)
    value_c, chunked = gradients(model, losses.GradientCache(loss, mini_batch_size=2), columns, labels)
    assert math.isclose(value, value_c, rel_tol=1e-10)
    assert_same(whole, chunked, shift_free=name == "batch-hard")
    assert len(chunked) > 10 and any(float(g.abs().max()) > 1e-6 for g in chunked.values())


@pytest.mark.parametrize("name", CASES)
def test_dropout_is_replayed_exactly(name, tiny_backbone):
    """With dropout, the gradient is the one of the loss the first pass computed: the same as a plain
    graph over the same chunks drawn from the same random state (the reference below, no caching).
    Without the replay, the second pass would draw other masks and the gradients would differ by
    O(1)."""
    model = encoder(tiny_backbone).train()
    loss, columns, labels = case(name, model)
    features = [features_of(model, texts) for texts in columns]
    chunk = 3

    torch.manual_seed(5)
    cached = losses.GradientCache(loss, mini_batch_size=chunk)
    value_c, chunked = gradients(model, cached, columns, labels)

    torch.manual_seed(5)  # the reference: each column's chunks embedded in the same order, with graph
    parameters = dict(model.named_parameters())
    in_model = {id(p) for p in model.parameters()}
    # the loss's own parameters by their own name, however deep the wrappers put them
    parameters.update({n.rsplit(".", 1)[-1]: p for n, p in loss.named_parameters() if id(p) not in in_model})
    for p in parameters.values():
        p.grad = None
    embeddings = []
    for column in losses.gradcache.loss_columns(loss, features):
        rows = column["input_ids"].size(0)
        parts = []
        for begin in range(0, rows, chunk):
            piece = {k: v[begin : begin + chunk] for k, v in column.items() if isinstance(v, torch.Tensor)}
            width = int(piece["attention_mask"].sum(1).max())  # as sentence-transformers trims padding
            piece = {k: v[:, :width] if v.dim() == 2 else v for k, v in piece.items()}
            parts.append(model(piece)["sentence_embedding"])
        embeddings.append(torch.cat(parts))
    value = loss.compute_loss_from_embeddings(embeddings, labels)
    (value * 3.0).backward()
    reference = {n: p.grad.clone() for n, p in parameters.items() if p.grad is not None}
    assert math.isclose(float(value), value_c, rel_tol=1e-10)
    assert_same(reference, chunked, shift_free=name == "batch-hard")


def test_a_run_in_chunks_trains_to_the_weights_of_a_run_without(tiny_backbone_no_dropout, corpus_file, tmp_path):
    """Unsupervised SimCSE with dropout 0, batch 8, four steps: chunks of 2 rows end at the weights of
    the whole batch, up to float32 rounding (far below what the steps moved them)."""
    runs = {}
    for name, size in (("whole", None), ("chunks", 2)):
        cfg = tiny_config(
            tiny_backbone_no_dropout, corpus_file, tmp_path / name, pooler="mean", max_steps=4, mini_batch_size=size
        )
        paths = engine.train(cfg, evaluate=False)
        saved = SentenceTransformer(str(paths.model), device="cpu")
        runs[name] = {n: p.detach().double() for n, p in saved.named_parameters()}
        runtime = (paths.root / "runtime.json").read_text()
        assert ('"mini_batch_size": 2' in runtime) == (size == 2)
    start = build_encoder(str(tiny_backbone_no_dropout), "mean").cpu()
    start = {n: p.detach().double() for n, p in start.named_parameters()}
    moved = differ = 0.0
    for name, whole in runs["whole"].items():
        if "key.bias" in name:  # a zero gradient up to rounding: AdamW turns its rounding into full-size steps
            continue
        moved += float((whole - start[name]).norm() ** 2)
        differ += float((runs["chunks"][name] - whole).norm() ** 2)
    # float32: the two runs' gradients differ by ~1e-6 of their norm a step, AdamW's steps by as little
    assert moved > 0 and differ <= 1e-4 * moved, (differ, moved)


def write_yaml(path, tree):
    path.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "method, section, reason",
    [
        ("tsdae", {}, "reconstructs each sentence"),
        ("mlm", {}, "each row's tokens"),
        ("ct", {}, "two encoders"),
        ("bert-flow", {}, "frozen embedding"),
        ("supervised", {"supervised": {"loss": "cosine-mse", "format": "stsb"}}, "scores each row alone"),
        ("supervised", {"supervised": {"loss": "TripletLoss"}}, "scores each row alone"),
        ("supervised", {"supervised": {"loss": "MegaBatchMarginLoss"}}, "loss_args.mini_batch_size"),
        # unchunked by its own setting: the refusal does not point to a key the config refuses in turn
        (
            "supervised",
            {"supervised": {"loss": "MegaBatchMarginLoss", "loss_args": {"use_mini_batched_version": False}}},
            "use_mini_batched_version: false embeds the batch whole, unchunked",
        ),
    ],
)
def test_methods_whose_loss_takes_each_row_alone_refuse_chunks(method, section, reason, corpus_file, tmp_path):
    tree = {
        "method": method,
        "model": {"name": "m"},
        "data": {"train": str(corpus_file)},
        "train": {"output_dir": str(tmp_path), "mini_batch_size": 4},
        **section,
    }
    with pytest.raises(ConfigError) as refused:
        load_config(write_yaml(tmp_path / "config.yaml", tree))
    message = str(refused.value)
    assert "train.mini_batch_size" in message and reason in message and "\n" not in message


@pytest.mark.parametrize(
    "loss, arguments, built",
    [
        ("mnrl", {}, "CachedMultipleNegativesRankingLoss"),
        ("GISTEmbedLoss", {"guide": None}, "CachedGISTEmbedLoss"),
        ("CachedMultipleNegativesRankingLoss", {}, "CachedMultipleNegativesRankingLoss"),
        ("CoSENTLoss", {}, "GradientCache"),  # no Cached class in sentence-transformers: sentlab's wrapper
    ],
)
def test_train_mini_batch_size_is_the_one_gradient_cache_setting(
    loss, arguments, built, tiny_backbone_no_dropout, tmp_path
):
    """train.mini_batch_size chunks every loss that compares the batch's rows: sentence-transformers'
    Cached class where it has one (with the loss's own arguments), sentlab's GradientCache elsewhere; the
    Cached class's own loss_args.mini_batch_size beside it is refused as the same setting set twice."""
    from sentlab.methods.supervised import Supervised
    from sentlab.training import engine
    from tests.methods.test_supervised import supervised as supervised_config

    train = tmp_path / "rows.tsv"
    train.write_text("a\tp\n" + "".join(f"text {i}\tother {i}\n" for i in range(8)))
    arguments = {k: (str(tiny_backbone_no_dropout) if v is None else v) for k, v in arguments.items()}
    columns = ["a", "p"]
    if loss == "CoSENTLoss":
        train.write_text("a\tp\ts\n" + "".join(f"text {i}\tother {i}\t{i % 5}\n" for i in range(8)))
        columns = {"text1": "a", "text2": "p", "score": "s"}
    section = {"loss": loss, "loss_args": arguments} | ({"score_range": [0, 4]} if loss == "CoSENTLoss" else {})
    cfg = supervised_config(tmp_path, tiny_backbone_no_dropout, train, columns, **section)
    cfg.train.mini_batch_size = 3
    method = Supervised(cfg, engine.RunPaths(tmp_path / "run"))
    chunked = method.training_loss(method.build_model())
    assert type(chunked).__name__ == built and chunked.mini_batch_size == 3
    assert chunked.chunking == {"mini_batch_size": 3, "source": "set", "by": built}
    if loss.startswith("Cached"):  # auto's "the whole batch" is one chunk of every row, not the class default
        cfg.train.mini_batch_size = "auto"
        method.auto_mini_batch = lambda model: (None, "the whole batch (a stand-in estimate)")
        whole = method.training_loss(method.build_model())
        assert whole.mini_batch_size == cfg.train.batch_size
        assert whole.chunking == {"mini_batch_size": cfg.train.batch_size, "source": "auto", "by": built}
    if loss.startswith("Cached"):  # its own argument beside the one setting
        tree = cfg.to_tree()
        tree["supervised"]["loss_args"] = {**arguments, "mini_batch_size": 4}
        with pytest.raises(ValueError, match="set train.mini_batch_size only"):
            type(cfg).model_validate(tree)


def test_the_moved_rse_key_is_read_where_it_is_now_for_a_version(corpus_file, tmp_path, capsys, monkeypatch):
    """rse.mini_batch_size (0.1.0) is train.mini_batch_size from 0.2.0: read there, in a file or as
    --set (which overrides a preset's train.mini_batch_size), with one notice a process until 0.3.0;
    both set to different values, refused."""
    from sentlab.training import config

    monkeypatch.setattr(config, "_NOTICED", set())
    tree = {
        "method": "rse",
        "model": {"name": "m"},
        "rse": {
            "sources": [{"relation": "same_sent", "path": str(corpus_file), "format": "text"}],
            "mini_batch_size": 4,
        },
        "train": {"output_dir": str(tmp_path)},
    }
    path = write_yaml(tmp_path / "config.yaml", tree)
    assert load_config(path).train.mini_batch_size == 4
    assert load_config(path, ["rse.mini_batch_size=8"]).train.mini_batch_size == 8
    notices = [line for line in capsys.readouterr().err.splitlines() if "rse.mini_batch_size" in line]
    assert len(notices) == 1 and "removed in sentlab 0.3.0" in notices[0] and "train.mini_batch_size" in notices[0]
    tree["train"]["mini_batch_size"] = 4  # the same value twice: read
    assert load_config(write_yaml(tmp_path / "config.yaml", tree)).train.mini_batch_size == 4
    tree["train"]["mini_batch_size"] = 8
    with pytest.raises(ConfigError, match=r"rse\.mini_batch_size: it is train\.mini_batch_size now"):
        load_config(write_yaml(tmp_path / "config.yaml", tree))
    # at its old default (null, as a 0.1.0 run folder's config lists it) the old key was not set: no notice,
    # no clash with the new key, and the new key stays unset where nothing else sets it
    monkeypatch.setattr(config, "_NOTICED", set())
    capsys.readouterr()
    tree["rse"]["mini_batch_size"] = None
    assert load_config(write_yaml(tmp_path / "config.yaml", tree)).train.mini_batch_size == 8
    del tree["train"]["mini_batch_size"]
    cfg = load_config(write_yaml(tmp_path / "config.yaml", tree))
    assert cfg.train.mini_batch_size is None and "mini_batch_size" not in cfg.train.model_fields_set
    assert "rse.mini_batch_size" not in capsys.readouterr().err
    # an explicit --set is a setting, whatever its value: read where the key is now, with the notice
    tree["train"]["mini_batch_size"] = "auto"
    path = write_yaml(tmp_path / "config.yaml", tree)
    assert load_config(path, ["rse.mini_batch_size=null"]).train.mini_batch_size is None
    assert "rse.mini_batch_size" in capsys.readouterr().err


def test_a_loss_without_embeddings_is_refused(tiny_backbone_no_dropout):
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    with pytest.raises(ValueError, match="does not compute its value from embeddings"):
        losses.GradientCache(losses.TSDAELoss(model), mini_batch_size=2)
