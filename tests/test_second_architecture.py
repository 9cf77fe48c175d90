"""Every path on a second architecture: a tiny randomly initialised MPNet of all-mpnet-base-v2's config
(``MPNetModel``: relative position buckets, positions after the padding index, attention layers named
``q``, ``k``, ``v``, ``o``; ``MPNetTokenizerFast`` with ``<s>`` / ``</s>`` / ``<pad>`` / ``<mask>`` around a
WordPiece vocabulary). BERT (MiniLM) is the architecture the rest of the suite trains; each test here
runs one path end to end on MPNet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentlab.training import engine
from tests.conftest import WORDS, make_tiny_backbone
from tests.methods.test_baselines import method_config

PROBE = ["a man plays the guitar", "a dog runs in the park", "the girl reads a book"]


def make_tiny_mpnet(path: Path, seed: int = 0) -> Path:
    """all-mpnet-base-v2's architecture at 2 layers of 32 (its tokenizer's special tokens, pad id 1 and
    positions after it, 32 relative-position buckets); the vocabulary: the suite's words and a few
    WordPiece continuations (model2vec distils subword vocabularies only)."""
    import torch
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["<s>", "<pad>", "</s>", "[UNK]", ".", ",", '"', ":", *WORDS, "##s", "##ing", "##ed", "##a", "<mask>"]
    tokenizer = MPNetTokenizerFast(
        vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True, model_max_length=64, unk_token="[UNK]"
    )
    assert tokenizer.tokenize("the dogs") == ["the", "dog", "##s"]  # a vocabulary that splits words
    torch.manual_seed(seed)
    config = MPNetConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=66,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        relative_attention_num_buckets=32,
    )
    MPNetModel(config).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def mpnet(tmp_path_factory) -> Path:
    return make_tiny_mpnet(tmp_path_factory.mktemp("tiny-mpnet"))


@pytest.fixture
def pairs(tmp_path) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"q": f"a {w} runs", "p": f"the {w} is running"}) + "\n" for w in WORDS[:40]))
    return path


def trained(method, backbone, data, tmp_path, section=None, columns=None, pooler="mean", **train) -> Path:
    """A 2-step run of ``method`` on ``backbone``; its saved model folder."""
    cfg = method_config(
        method,
        backbone,
        data,
        tmp_path / "run",
        pooler,
        section,
        {"columns": columns} if columns else None,
        max_steps=2,
        **train,
    )
    return engine.train(cfg, evaluate=False).model


def same_after_reload(folder: Path) -> np.ndarray:
    """The saved model's embeddings, checked to be what a second load gives (sentence-transformers alone)."""
    from sentence_transformers import SentenceTransformer

    first = engine.load_encoder(str(folder)).encode(PROBE)
    np.testing.assert_allclose(SentenceTransformer(str(folder), device="cpu").encode(PROBE), first, atol=1e-6)
    return first


def test_supervised_simcse_and_matryoshka_train_and_reload_on_mpnet(mpnet, pairs, corpus_file, tmp_path):
    model = trained("supervised", mpnet, pairs, tmp_path / "s", {"supervised": {"loss": "mnrl"}}, ["q", "p"])
    assert same_after_reload(model).shape == (3, 32)
    assert json.loads((model / "config.json").read_text())["model_type"] == "mpnet"
    model = trained("simcse-unsup", mpnet, corpus_file, tmp_path / "u")
    same_after_reload(model)
    model = trained(
        "supervised",
        mpnet,
        pairs,
        tmp_path / "m",
        {"supervised": {"loss": "mnrl"}},
        ["q", "p"],
        matryoshka_dims=[32, 16],
    )
    assert same_after_reload(model).shape == (3, 32)
    from sentlab.encoders.matryoshka import trained_dims

    assert trained_dims(model) == [32, 16]


def test_tsdae_on_mpnet_refuses_a_tied_decoder_in_one_line_and_trains_an_untied_one(mpnet, corpus_file, tmp_path):
    from sentlab.errors import ConfigError

    with pytest.raises(ConfigError, match="transformers has no CausalLM class for the mpnet architecture"):
        trained("tsdae", mpnet, corpus_file, tmp_path / "tied", pooler="cls")
    decoder = make_tiny_backbone(tmp_path / "bert-decoder")  # another tokenizer: the texts are tokenized again
    model = trained(
        "tsdae", mpnet, corpus_file, tmp_path / "u", {"tsdae": {"tie": False, "decoder": str(decoder)}}, pooler="cls"
    )
    same_after_reload(model)


def test_lora_takes_mpnets_query_and_value_projections_by_default(mpnet, pairs, tmp_path):
    """peft has no default target modules for MPNet; sentlab names its attention's q and v (BERT's
    query and value), and the adapter trains, saves and merges."""
    pytest.importorskip("peft")
    from sentlab.methods import validate_config

    cfg = method_config(
        "supervised",
        mpnet,
        pairs,
        tmp_path / "run",
        "mean",
        {"supervised": {"loss": "mnrl"}},
        {"columns": ["q", "p"]},
        max_steps=2,
    )
    tree = cfg.model_dump()
    tree["model"]["adapter"] = {"rank": 4}
    folder = engine.train(validate_config(tree), evaluate=False).model
    adapter = json.loads((folder / "adapter_config.json").read_text())
    assert sorted(adapter["target_modules"]) == ["q", "v"]
    same_after_reload(folder)


@pytest.mark.parametrize("backend, precision", [("onnx", "int8"), ("openvino", "int8-static")])
def test_encode_on_mpnet_agrees_with_torch(backend, precision, mpnet, pairs, tmp_path):
    pytest.importorskip("onnxruntime" if backend == "onnx" else "openvino")
    from sentlab.cli import main

    model = trained("supervised", mpnet, pairs, tmp_path / "s", {"supervised": {"loss": "mnrl"}}, ["q", "p"])
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(PROBE * 20) + "\n")
    outputs = {}
    for name, (b, p) in {"torch": ("torch", "fp32"), backend: (backend, precision)}.items():
        out = tmp_path / f"{name}.npy"
        argv = ["encode", "--model", str(model), "--backend", b, "--precision", p, "--input", str(sentences)]
        assert main([*argv, "--output", str(out), "--quiet"]) == 0
        outputs[name] = np.load(out)
        ran = json.loads(out.with_name(out.name + ".json").read_text())["plan"]["model"]
        assert (ran["backend"], ran["precision"]) == (b, p)  # what ran, read back: never a silent torch
    a, b = outputs["torch"], outputs[backend]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cosine.min() > 0.99  # int8 weights (and activations) on a tiny model: a few thousandths off fp32


def test_distill_static_mine_and_a_task_card_run_on_mpnet(mpnet, pairs, corpus_file, tmp_path):
    pytest.importorskip("model2vec")
    from sentlab.cli import main
    from sentlab.evaluation.task_cards import load_task_card, score_task_card

    model = trained("supervised", mpnet, pairs, tmp_path / "s", {"supervised": {"loss": "mnrl"}}, ["q", "p"])
    student = tmp_path / "student"
    argv = ["distill-static", "--model", str(model), "--output", str(student)]
    assert main([*argv, "--pca-dims", "16", "--quiet"]) == 0
    assert engine.load_encoder(str(student)).encode(PROBE).shape == (3, 16)

    mined = tmp_path / "mined.jsonl"
    argv = ["mine", "--model", str(model), "--input", str(pairs), "--columns", "[q, p]", "--output", str(mined)]
    assert main([*argv, "--num-negatives", "1", "--quiet"]) == 0
    rows = [json.loads(line) for line in mined.read_text().splitlines()]
    assert rows and all(r["negative"] not in (r["anchor"], r["positive"]) for r in rows)

    (tmp_path / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"the {w} is running"}) + "\n"
            for i, w in enumerate(WORDS[:20])
        )
    )
    (tmp_path / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": f"a {w} runs"}) + "\n" for i, w in enumerate(WORDS[:20]))
    )
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(20)))
    card = tmp_path / "card.yaml"
    card.write_text("name: r\nkind: retrieval\ncorpus: corpus.jsonl\nqrels: qrels.tsv\nqueries: queries.jsonl\n")
    from sentlab.evaluation.scoring import CosineScorer

    result = score_task_card(CosineScorer(engine.load_encoder(str(model))), load_task_card(card))
    assert result.n == 20 and 0 < result.main <= 100
