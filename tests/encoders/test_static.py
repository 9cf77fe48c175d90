"""Static students (``sentlab distill-static``): the saved student loads in plain sentence-transformers
and in model2vec and encodes what sentlab encodes; training on the corpus moves it toward the teacher;
the supervised method trains it; what means nothing for it, and the extra's absence, is one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentlab.cli import main


def distill_args(teacher, out, corpus, *extra):
    return ["distill-static", "--model", str(teacher), "--output", str(out), "--corpus", str(corpus)] + [
        "--pca-dims",
        "16",
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Sentences of the tiny vocabulary, and two words all-MiniLM-L6-v2's WordPiece splits."""
    import random

    from tests.conftest import WORDS

    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) for _ in range(60)]
    path = tmp_path_factory.mktemp("static-corpus") / "corpus.txt"
    path.write_text("\n".join(["zebra okapis", "zebra quaggas"] * 4 + lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def student(corpus, tmp_path_factory):
    """all-MiniLM-L6-v2's student (a real WordPiece vocabulary: model2vec distils subword tokenizers
    only), offered the most frequent words of the corpus."""
    folder = tmp_path_factory.mktemp("static") / "student"
    assert main(distill_args("minilm", folder, corpus, "--vocabulary-size", "500")) == 0
    return folder


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_the_student_loads_in_sentence_transformers_and_model2vec_and_encodes_alike(student, tmp_path, capsys):
    from model2vec import StaticModel
    from sentence_transformers import SentenceTransformer

    from sentlab.encoders.loading import is_static_model, load_encoder
    from sentlab.encoders.static import is_static

    plain = SentenceTransformer(str(student), device="cpu")
    assert is_static(plain) and is_static_model(student)
    record = json.loads((student / "distill.json").read_text())
    assert record["dims"] == 16 and record["normalize"] is True  # all-MiniLM-L6-v2 normalises: so does its student
    assert len(load_encoder("minilm").tokenizer.tokenize("quaggas")) > 1  # the teacher splits it
    assert len(plain[0].tokenizer.encode("quaggas", add_special_tokens=False).tokens) == 1  # the corpus word, whole
    sentences = ["zebra okapis", "the man plays a game", "quaggas"]
    ours = plain.encode(sentences)
    theirs = StaticModel.from_pretrained(str(student / "model2vec")).encode(sentences)
    # the same token vectors averaged by two libraries (sums in another order): equal to float32 rounding
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    text = tmp_path / "s.txt"
    text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    assert main(["encode", "--model", str(student), "--input", str(text), "--output", str(tmp_path / "e.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "e.npy"), ours, rtol=1e-5, atol=1e-6)
    # its record is strict JSON (an unbounded length is null, not Infinity), and a second encode reuses it
    record = json.loads((tmp_path / "e.npy.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert record["plan"]["model"]["max_seq_length"] is None
    capsys.readouterr()
    assert main(["encode", "--model", str(student), "--input", str(text), "--output", str(tmp_path / "e.npy")]) == 0
    assert "already holds these embeddings" in capsys.readouterr().err
    assert is_static(load_encoder(student))


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_options_that_mean_nothing_for_a_static_model_are_one_line(student, tmp_path, capsys):
    text = tmp_path / "s.txt"
    text.write_text("zebra\n", encoding="utf-8")
    argv = ["encode", "--model", str(student), "--input", str(text), "--output", str(tmp_path / "e.npy")]
    assert main([*argv, "--backend", "onnx"]) != 0
    assert "which has no transformer graph to export" in capsys.readouterr().err
    from sentlab.progress import set_quiet

    set_quiet(False)
    assert main(argv) == 0  # encode's default batch follows the model, and says so
    assert "a static model: batches of 4,096 sentences" in capsys.readouterr().err


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--corpus", "CORPUS"], "--corpus is read by --vocabulary-size and --train"),
        (["--sentences", "5"], "--sentences N reads the first N sentences of --corpus"),
        (["--seed", "3"], "--seed draws --train's PCA"),
        (["--corpus", "missing.txt", "--train"], "missing.txt: file not found"),
        (["--pca-dims", "1000"], "--pca-dims 1000: the teacher's embeddings have 384 dimensions"),
        (["--vocabulary-size", "-1", "--corpus", "CORPUS"], "give 0 or more"),
        (["--label-backend", "onnx"], "--label-backend / --label-precision choose the runtime the teacher labels"),
        (
            [
                "--label-backend",
                "openvino",
                "--label-precision",
                "int8",
                "--corpus",
                "CORPUS",
                "--vocabulary-size",
                "5",
            ],
            "give --train, or leave",
        ),
        (["--no-cache"], "--no-cache keeps --train's labels out of the embedding cache"),
        (["--data-dir", "elsewhere"], "--data-dir holds the Wikipedia sentences --label-precision int8-static"),
        (["--label-precision", "int8"], "--label-backend torch --label-precision int8: not a setting a teacher labels"),
    ],
)
def test_bad_settings_are_one_line(corpus, tmp_path, capsys, extra, message):
    argv = ["distill-static", "--model", "minilm", "--output", str(tmp_path / "s"), "--quiet"]
    argv += [str(corpus) if value == "CORPUS" else value for value in extra]
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own refusal: one line, exit 2
        code = stop.code
    assert code != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    (tmp_path / "file").write_text("x")
    assert main(["distill-static", "--model", "minilm", "--output", str(tmp_path / "file")]) != 0
    assert "is not a folder" in capsys.readouterr().err


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_training_starts_from_the_distilled_vectors_with_their_weights_folded_in(student):
    """model2vec keeps its Zipf / SIF weights apart from the vectors; tokenlearn trains the vectors
    alone, so they are folded in first: the folded model encodes as the weighted one does."""
    from model2vec import StaticModel

    from sentlab.encoders.static import with_weights_folded

    weighted = StaticModel.from_pretrained(str(student / "model2vec"))
    assert weighted.weights is not None  # what the fold is for
    folded = with_weights_folded(weighted)
    assert folded.weights is None
    sentences = ["zebra okapis", "the man plays a game"]
    # the same products summed (weight x vector, then the mean): equal to float32 rounding
    np.testing.assert_allclose(folded.encode(sentences), weighted.encode(sentences), rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_a_rerun_reuses_the_student_and_other_settings_are_refused(student, tiny_backbone, capsys):
    corpus = json.loads((student / "distill.json").read_text())["asked"]["corpus"]
    assert main(distill_args("minilm", student, corpus, "--vocabulary-size", "500")) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert main(distill_args("minilm", student, corpus, "--vocabulary-size", "400")) != 0
    assert "distilled otherwise" in capsys.readouterr().err
    # a word-level tokenizer (the tiny BERT's) is not distilled: one line, not model2vec's traceback
    word_level = ["distill-static", "--model", str(tiny_backbone), "--output", str(student.parent / "word-level")]
    assert main([*word_level, "--pca-dims", "16", "--quiet"]) != 0
    assert "distils subword tokenizers only" in capsys.readouterr().err


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_training_on_the_corpus_moves_the_student_toward_the_teacher(student, corpus, tmp_path):
    """The similarities of the corpus's pairs under the student agree more with the teacher's after
    tokenlearn's training on that corpus than after distillation alone (the same student otherwise)."""
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer

    from sentlab.encoders.loading import load_encoder

    texts = corpus.read_text().splitlines()
    teacher = load_encoder("minilm").encode(texts, normalize_embeddings=True)
    upper = np.triu_indices(len(texts), 1)

    def agreement(folder):
        embedded = SentenceTransformer(str(folder), device="cpu").encode(texts, normalize_embeddings=True)
        return spearmanr((teacher @ teacher.T)[upper], (embedded @ embedded.T)[upper])[0]

    assert main(distill_args("minilm", tmp_path / "trained", corpus, "--vocabulary-size", "500", "--train")) == 0
    record = json.loads((tmp_path / "trained" / "distill.json").read_text())
    assert record["sentences_trained"] == len(texts) and record["train_seconds"] > 0
    assert agreement(tmp_path / "trained") > agreement(student) + 0.05


@pytest.mark.slow  # three students of all-MiniLM-L6-v2 and its onnx export (about two minutes)
def test_the_labels_run_in_the_chosen_backend_are_cached_under_it_and_recorded(corpus, tmp_path):
    """--label-backend onnx --label-precision int8: the record says so; a second seed reads the labels
    from the cache; torch fp32 labels of the same sentences are not served from int8's entry."""
    pytest.importorskip("onnxruntime")
    int8 = ["--vocabulary-size", "50", "--train", "--sentences", "40", "--label-backend", "onnx"]
    int8 += ["--label-precision", "int8"]
    records = {}
    for name, extra in (
        ("int8-seed-1", [*int8, "--seed", "1"]),
        ("int8-seed-2", [*int8, "--seed", "2"]),
        ("fp32-seed-1", ["--vocabulary-size", "50", "--train", "--sentences", "40", "--seed", "1"]),
    ):
        assert main(distill_args("minilm", tmp_path / name, corpus, *extra)) == 0
        records[name] = json.loads((tmp_path / name / "distill.json").read_text())
    first, second, fp32 = records.values()
    # torch fp32 is what every student was labelled in before the choice: its asked settings are unchanged
    assert first["asked"]["labels"] == "onnx int8" and "labels" not in fp32["asked"]
    assert (first["labels"]["backend"], first["labels"]["precision"]) == ("onnx", "int8")
    assert first["labels"]["ran"] == "onnx int8" and fp32["labels"]["ran"] == "torch fp32"
    distinct = len(set(corpus.read_text().splitlines()[:40]))
    assert first["labels"]["texts_encoded"] == distinct and not first["labels"]["from_cache"]
    assert second["labels"]["from_cache"] and second["labels"]["texts_encoded"] == 0
    assert fp32["labels"]["texts_encoded"] == distinct  # another setting's labels: encoded, not read


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_the_supervised_method_trains_a_static_student(student, tmp_path):
    from sentence_transformers import SentenceTransformer

    from sentlab.methods import validate_config
    from sentlab.training import engine

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(json.dumps({"q": f"zebra {w}", "p": f"quagga {w}"}) + "\n" for w in ("man", "plays", "the", "a")) * 2
    )
    cfg = validate_config(
        {
            "method": "supervised",
            "model": {"name": str(student)},
            "data": {"train": str(pairs), "columns": {"anchor": "q", "positive": "p"}},
            "train": {
                "output_dir": str(tmp_path / "run"),
                "batch_size": 4,
                "max_steps": 2,
                "learning_rate": 0.1,
                "progress_bar": False,
            },
            "eval": {"final_tasks": []},
            "supervised": {"loss": "mnrl"},
        }
    )
    paths = engine.train(cfg, evaluate=False)
    before = SentenceTransformer(str(student), device="cpu")[0].embedding.weight
    after = SentenceTransformer(str(paths.model), device="cpu")[0].embedding.weight
    assert after.shape == before.shape and not np.allclose(after.detach(), before.detach())  # trained, and saved


@pytest.mark.slow  # all-MiniLM-L6-v2's student, distilled once for the module (about a minute)
def test_a_static_student_trains_and_is_scored_with_the_defaults_and_refuses_a_transformers_settings(
    student, data_dir, tmp_path
):
    """The final STS evaluation and the start model's, at their defaults (whole texts: no length to set);
    other methods, and a pooler, layers or a length, are refused in one line."""
    from sentlab.errors import ConfigError, ModelLoadError
    from sentlab.methods import validate_config
    from sentlab.training import engine

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"q": f"zebra {i}", "p": f"quagga {i}"}) + "\n" for i in range(8)))
    tree = {
        "method": "supervised",
        "model": {"name": str(student)},
        "data": {"train": str(pairs), "columns": {"anchor": "q", "positive": "p"}, "data_dir": str(data_dir)},
        "train": {"output_dir": str(tmp_path / "run"), "batch_size": 4, "max_steps": 1, "progress_bar": False},
        "supervised": {"loss": "mnrl"},
    }
    paths = engine.train(validate_config(tree))
    results = json.loads(paths.results.read_text())
    assert results["settings"]["max_seq_length"] is None and "STS-B" in results["tasks"]
    assert paths.start_results.is_file()
    # a config built without validation meets the same table where the method builds its start
    layers = validate_config({**tree, "train": {**tree["train"], "output_dir": str(tmp_path / "l")}})
    layers.model.num_layers = 1
    with pytest.raises(ModelLoadError, match="static model .*which has no layers; unset num_layers"):
        engine.train(layers)
    corpus = tmp_path / "c.txt"
    corpus.write_text("zebra\nquagga\n" * 8)
    simcse = validate_config(
        {
            "method": "simcse-unsup",
            "model": {"name": "minilm"},
            "data": {"train": str(corpus)},
            "train": {**tree["train"], "output_dir": str(tmp_path / "s")},
        }
    )
    simcse.model.name = str(student)
    with pytest.raises(ConfigError, match="trains with the supervised method only"):
        engine.train(simcse)
    text = tmp_path / "s.txt"
    text.write_text("zebra\n")
    argv = ["encode", "--model", str(student), "--input", str(text), "--output", str(tmp_path / "e.npy")]
    assert main([*argv, "--max-seq-length", "8"]) != 0


def test_without_the_extra_the_command_is_one_line(corpus_file, tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "model2vec" else real(name, *a))
    assert main(distill_args("minilm", tmp_path / "s", corpus_file)) != 0
    assert "the static extra: pip install -e '.[static]' in sentlab's checkout" in capsys.readouterr().err
