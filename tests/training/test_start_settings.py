"""Saved models keep the settings of the start model that training does not change: the start
model's inference length (not the training length), the pooling, and the start model's unit-length
normalisation - for every registered method but RSE (All-Above included), whose relational scores
cos(h + r, h') read the embeddings' length as training saw it (a Normalize appended at saving would
shrink h and leave r). The start model here is a sentence-transformers folder
that normalises and reloads with 20 tokens (its backbone allows 64); each run names a pooler (which
rebuilds the pipeline from the backbone, where ``Normalize`` and the length used to be lost) and
trains with 12 tokens."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

from sentlab.methods import METHODS, validate_config
from sentlab.training import engine
from sentlab.training.config import TrainConfig
from tests.conftest import write_scored_pairs_card

MAX_SEQ_LENGTH = 12  # training
START_LENGTH = 20  # the start model's own; its backbone's tokenizer and positions allow 64
PROBE = ["a man plays the guitar", "a dog runs in the park"]


@pytest.fixture(scope="module")
def normalizing_start(tiny_backbone, tmp_path_factory):
    transformer = Transformer(str(tiny_backbone), max_seq_length=START_LENGTH)
    model = SentenceTransformer(
        modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean"), Normalize()]
    )
    folder = tmp_path_factory.mktemp("start") / "model"
    model.save(str(folder))
    return folder


def sections(method: str, tiny_backbone, corpus_file, tmp_path) -> tuple[str, dict]:
    """(the training file, the method's own sections) of a tiny run of ``method``."""
    lines = corpus_file.read_text().splitlines()
    if method == "simcse-sup":
        table = tmp_path / "nli.csv"
        table.write_text(
            "sent0,sent1,hard_neg\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(lines, lines[1:], lines[2:]))
        )
        return str(table), {}
    if method == "supervised":
        table = tmp_path / "pairs.tsv"
        table.write_text(
            "sentence1\tsentence2\tscore\n"
            + "".join(f"{a}\t{b}\t{i % 6}\n" for i, (a, b) in enumerate(zip(lines, lines[1:])))
        )
        return str(table), {"supervised": {"loss": "cosine-mse", "score_range": [0, 5]}}
    if method == "rse":
        qqp = tmp_path / "qqp.tsv"
        qqp.write_text("".join(f"{i % 2}\t{a}\t{b}\t{i}\n" for i, (a, b) in enumerate(zip(lines, lines[1:]))))
        return str(corpus_file), {
            "rse": {
                "sources": [{"relation": "duplicate_question", "path": str(qqp), "format": "qqp"}],
                "weights": {"duplicate_question": 1.0},
            }
        }
    if method == "rankcse":
        return str(corpus_file), {"rankcse": {"teachers": [str(tiny_backbone)]}}
    if method == "rankencoder":
        return str(corpus_file), {
            "rank": {
                "base_encoder": str(tiny_backbone),
                "corpus": str(corpus_file),
                "tau_lower": None,
                "tau_upper": None,
                "lambda_train": 1.0,
            }
        }
    return str(corpus_file), {}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_saved_model_keeps_the_start_models_length_pooling_and_normalisation(
    method, normalizing_start, tiny_backbone, corpus_file, tmp_path
):
    train_file, own = sections(method, tiny_backbone, corpus_file, tmp_path)
    cfg = validate_config(
        {
            "method": method,
            "model": {"name": str(normalizing_start), "pooler": "mean", "max_seq_length": MAX_SEQ_LENGTH},
            "data": {
                **({"train": train_file} if method != "rse" else {}),  # RSE reads rse.sources
                **({"columns": ["sentence1", "sentence2", "score"]} if method == "supervised" else {}),
            },
            "train": {
                "output_dir": str(tmp_path / "run"),
                "batch_size": 8,
                "learning_rate": 5e-4,
                "max_steps": 2,
                "logging_steps": 1,
                "progress_bar": False,
            },
            "eval": {"dev_task": "none", "final_tasks": []},
            **own,
        }
    )
    paths = engine.train(cfg, evaluate=False)
    model = SentenceTransformer(str(paths.model), trust_remote_code=method == "bert-flow")
    assert model.max_seq_length == START_LENGTH
    pooling = [m for m in model if isinstance(m, Pooling)]
    assert len(pooling) == 1 and pooling[0].pooling_mode == "mean"
    if method == "rse":  # the relation vectors were learnt beside the un-normalised embeddings
        assert not any(isinstance(module, Normalize) for module in model)
        norms = np.linalg.norm(model.encode(PROBE), axis=1)
        assert not np.allclose(norms, 1.0, rtol=1e-3), norms
        return
    assert isinstance(model[-1], Normalize)
    np.testing.assert_allclose(np.linalg.norm(model.encode(["a man plays the guitar"]), axis=1), 1.0, rtol=1e-5)


def simcse_run(name, corpus_file, out, **model) -> TrainConfig:
    return validate_config(
        {
            "method": "simcse-unsup",
            "model": {"name": str(name), "pooler": "mean", "max_seq_length": MAX_SEQ_LENGTH, **model},
            "data": {"train": str(corpus_file)},
            "train": {"output_dir": str(out), "batch_size": 8, "max_steps": 1, "progress_bar": False},
            # the final evaluation records the length; the start model's comparison adds nothing here
            "eval": {"dev_task": "none", "final_tasks": ["sts"], "compare_start": False},
        }
    )


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_the_saved_and_evaluated_length_is_the_start_models_or_the_one_asked_for(
    normalizing_start, tiny_backbone, corpus_file, data_dir, tmp_path, monkeypatch
):
    """Plain sentence-transformers reads the length back, the final evaluation ran at it (read from the
    model it was given), and results.json records it beside the training length."""
    from sentlab.methods.base import Method

    evaluated, real_evaluate = [], Method.evaluate

    def watched(self, model):
        evaluated.append(model.max_seq_length)
        return real_evaluate(self, model)

    monkeypatch.setattr(Method, "evaluate", watched)
    cases = [
        (normalizing_start, {}, START_LENGTH),  # a sentence-transformers start: its own max_seq_length
        (tiny_backbone, {}, 64),  # a plain backbone: min(tokenizer's model_max_length, positions)
        (normalizing_start, {"inference_max_seq_length": 16}, 16),  # asked for
    ]
    for k, (start, extra, expected) in enumerate(cases):
        evaluated.clear()
        paths = engine.train(simcse_run(start, corpus_file, tmp_path / f"run{k}", **extra))
        assert SentenceTransformer(str(paths.model)).max_seq_length == expected
        assert evaluated == [expected]
        settings = json.loads(paths.results.read_text())["settings"]
        assert settings["max_seq_length"] == {"training": MAX_SEQ_LENGTH, "saved_and_evaluated": expected}
        assert f"saved model's max_seq_length: {expected} (" in paths.log.read_text()


@pytest.fixture
def dev_card(corpus_file, tmp_path):
    return write_scored_pairs_card(tmp_path, corpus_file, "dev")


def dev_selected_run(backbone, corpus_file, card, out) -> TrainConfig:
    return validate_config(
        {
            "method": "simcse-unsup",
            "model": {"name": str(backbone), "pooler": "mean", "max_seq_length": 16},
            "data": {"train": str(corpus_file)},
            "train": {
                "output_dir": str(out),
                "batch_size": 8,
                "learning_rate": 5e-4,
                "max_steps": 4,
                "eval_steps": 2,
                "logging_steps": 1,
                "progress_bar": False,
            },
            "eval": {"dev_task": str(card), "final_tasks": []},
        }
    )


@pytest.mark.parametrize("start_wins", [True, False])
def test_the_start_model_is_a_candidate_of_checkpoint_selection(
    start_wins, tiny_backbone, corpus_file, dev_card, tmp_path
):
    """Constructed: the start model's recorded dev score is set above (or below) every checkpoint's, so
    step 0 must win (or lose) the selection; a first run records the real score of the start model."""
    from sentlab.evaluation.dev_tasks import score_dev_task

    cfg = dev_selected_run(tiny_backbone, corpus_file, dev_card, tmp_path / "real")
    paths = engine.train(cfg, evaluate=False)
    recorded = json.loads((paths.root / "start_dev.json").read_text())
    start = engine.load_encoder(str(tiny_backbone), pooler="mean")
    assert recorded["metric"] == "eval_dev_spearman"
    # the same model and items through the same scorer, in another batch order: float32 rounding only
    assert 100 * recorded["value"] == pytest.approx(score_dev_task(start, str(dev_card)), abs=1e-3)  # x 100
    selection = json.loads((paths.root / "selection.json").read_text())
    # the decision itself, from the dev scores the run logged (not the file that wrote it)
    dev = {
        r["step"]: r["eval_dev_spearman"]
        for r in map(json.loads, paths.metrics.read_text().splitlines())
        if "eval_dev_spearman" in r and r.get("step", 0) > 0
    }
    best_step = max(dev, key=dev.get)  # the first of equal ones, as the trainer keeps
    assert selection["best_checkpoint"] == pytest.approx(dev[best_step])
    assert selection["kept_step"] == (0 if recorded["value"] > dev[best_step] else best_step)

    run = tmp_path / "constructed"
    run.mkdir()
    value = 1e9 if start_wins else -1e9
    (run / "start_dev.json").write_text(json.dumps({"metric": "eval_dev_spearman", "value": value}))
    paths = engine.train(dev_selected_run(tiny_backbone, corpus_file, dev_card, run), evaluate=False)
    selection = json.loads((paths.root / "selection.json").read_text())
    saved = SentenceTransformer(str(paths.model)).encode(PROBE)
    if start_wins:
        assert selection["kept_step"] == 0
        np.testing.assert_array_equal(saved, start.encode(PROBE))  # the very weights of the start model
    else:
        assert selection["kept_step"] in (2, 4) and not np.allclose(saved, start.encode(PROBE))


@pytest.mark.parametrize(
    "loss, loss_args, keeps",
    [
        ("mnrl", {}, True),  # cosine: the start's Normalize changes no score
        ("mnrl", {"similarity_fct": "dot_score"}, False),  # dot products: unit length would change them
        ("TripletLoss", {}, False),  # Euclidean distances
    ],
)
def test_a_supervised_loss_of_dot_products_or_distances_saves_its_embeddings_as_trained(
    loss, loss_args, keeps, normalizing_start, corpus_file, tmp_path
):
    """The RSE fix for the supervised method: Normalize is appended at saving only for a loss of
    directions (the record that also decides Matryoshka, so the two cannot disagree)."""
    from sentlab.losses.catalog import capabilities, loss_class

    lines = corpus_file.read_text().splitlines()
    table = tmp_path / "triplets.tsv"
    table.write_text("a\tp\tn\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(lines, lines[1:], lines[2:])))
    cfg = validate_config(
        {
            "method": "supervised",
            "model": {"name": str(normalizing_start), "pooler": "mean", "max_seq_length": MAX_SEQ_LENGTH},
            "data": {"train": str(table), "columns": ["a", "p", "n"]},
            "supervised": {"loss": loss, "loss_args": loss_args},
            "train": {"output_dir": str(tmp_path / "run"), "batch_size": 8, "max_steps": 1, "progress_bar": False},
            "eval": {"dev_task": "none", "final_tasks": []},
        }
    )
    can = capabilities(loss_class(loss), loss_args)
    assert can.keeps_start_normalize == keeps == (can.no_matryoshka is None)
    model = SentenceTransformer(str(engine.train(cfg, evaluate=False).model))
    assert any(isinstance(m, Normalize) for m in model) == keeps
    norms = np.linalg.norm(model.encode(PROBE), axis=1)
    assert np.allclose(norms, 1.0, rtol=1e-5) == keeps, norms


def test_a_static_start_refuses_what_it_lacks_in_one_line_from_one_table(tiny_static, tmp_path, capsys):
    """START_KIND_LACKS["static"], read by the config (each setting refused naming what a static model
    lacks, a dumped default passing), by the methods and by the commands (--backend, --max-seq-length)."""
    import yaml

    from sentlab.cli import main
    from sentlab.methods import validate_config
    from tests.conftest import the_error

    text = tmp_path / "s.txt"
    text.write_text("the dog\n", encoding="utf-8")
    tree = {
        "method": "supervised",
        "model": {"name": str(tiny_static)},
        "data": {"train": str(text)},
        "train": {"output_dir": str(tmp_path / "run")},
        "supervised": {"loss": "mnrl"},
    }
    for section, key, value, lacks in [
        ("model", "max_seq_length", 64, "length"),
        ("model", "inference_max_seq_length", 64, "length"),
        ("model", "model_kwargs", {"attn_implementation": "eager"}, "transformers backbone"),
        ("model", "trust_remote_code", True, "modelling code"),
        ("model", "num_layers", 1, "layers"),
        ("model", "pooler", "cls", "pooler"),
        ("train", "mini_batch_size", "auto", "activations to chunk"),
    ]:
        with pytest.raises(ValueError, match=f"{section}.{key}: .*static model .*which has no {lacks}"):
            validate_config({**tree, section: {**tree[section], key: value}})
    with pytest.raises(ValueError, match="trains with the supervised method only"):
        validate_config({key: value for key, value in tree.items() if key != "supervised"} | {"method": "simcse-unsup"})
    checkpointed = {**tree, "train": {**tree["train"], "trainer_args": {"gradient_checkpointing": True}}}
    with pytest.raises(ValueError, match="gradient_checkpointing: .*static model .*no activations to chunk"):
        validate_config(checkpointed)
    cfg = validate_config(tree)  # dumped whole and read back: the defaults it never read pass
    assert validate_config(yaml.safe_load(cfg.to_yaml())).to_tree() == cfg.to_tree()
    assert "max_seq_length" not in cfg.to_yaml()
    argv = ["encode", "--model", str(tiny_static), "--input", str(text), "--output", str(tmp_path / "e.npy")]
    for extra, lacks in (["--backend", "onnx"], "transformer graph"), (["--max-seq-length", "8"], "length"):
        assert main([*argv, *extra]) != 0
        assert f"which has no {lacks}" in the_error(capsys.readouterr().err)
