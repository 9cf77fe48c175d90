"""Pre-training a raw LM with the MLM method: the head only at masked positions gives transformers'
loss, a random-init run trains end to end with its held-out curve, and the saved folder is a complete
masked-LM checkpoint that sentence-transformers also loads (mean pooling)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModelForMaskedLM

from sentlab.encoders import build_encoder
from sentlab.methods import validate_config
from sentlab.methods.mlm import MLMLoss
from sentlab.training import engine
from tests.conftest import features_of

PROBE = ["a man plays the guitar", "the dog runs in the park", "a girl reads a book"]


@pytest.mark.parametrize("on_host", [True, False], ids=["head-at-chosen-positions", "head-everywhere"])
def test_the_loss_is_transformers_masked_lm_loss(tiny_backbone_no_dropout, monkeypatch, on_host):
    """Both ways of computing it (the host's, at the chosen positions; an accelerator's, at every
    position with ignore_index) give transformers' masked-LM loss, on any device."""
    from sentlab import devices

    monkeypatch.setattr(devices, "runs_on_host", lambda device: on_host)
    model = build_encoder(str(tiny_backbone_no_dropout), "mean")
    loss = MLMLoss(model).eval()
    features = features_of(model, PROBE)
    torch.manual_seed(0)
    inputs, targets = loss.mask_tokens(features["input_ids"].clone())
    with torch.no_grad():
        ours, correct, chosen = loss.scored(inputs, features["attention_mask"], targets)
        full = loss.head(input_ids=inputs, attention_mask=features["attention_mask"], labels=targets)
    # the same float32 operations on the chosen rows (the head is row-wise), only the mean's order differs
    assert float(ours) == pytest.approx(float(full.loss), abs=1e-6)
    chosen_mask = targets != -100
    assert int(chosen) == int(chosen_mask.sum()) > 0
    assert int(correct) == int((full.logits[chosen_mask].argmax(-1) == targets[chosen_mask]).sum())


def rawlm_config(corpus, heldout, out, **train):
    return validate_config(
        {
            "method": "mlm",
            "model": {
                "random_init": {
                    "layers": 2,
                    "hidden_size": 32,
                    "heads": 2,
                    "intermediate_size": 64,
                    "max_positions": 32,
                    "tokenizer": "train",
                    "vocab_size": 150,
                },
                "pooler": "mean",
                "max_seq_length": 32,
            },
            "data": {"train": str(corpus)},
            "mlm": {"save_head": True, "heldout": str(heldout), "heldout_limit": 20, "group_by_length": True},
            "train": {
                "output_dir": str(out),
                "batch_size": 16,
                "learning_rate": 1e-3,
                "max_steps": 6,
                "eval_steps": 3,
                "logging_steps": 1,
                "progress_bar": False,
                **train,
            },
            "eval": {"dev_task": "none", "final_tasks": []},
        }
    )


def test_a_raw_lm_pretrains_from_random_weights_and_saves_a_masked_lm_checkpoint(corpus_file, tmp_path):
    lines = corpus_file.read_text().splitlines()
    (tmp_path / "heldout.txt").write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    (tmp_path / "train.txt").write_text("\n".join(lines[20:]) + "\n", encoding="utf-8")
    paths = engine.train(rawlm_config(tmp_path / "train.txt", tmp_path / "heldout.txt", tmp_path / "run"))
    records = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    heldout = [r for r in records if "eval_heldout-mlm_accuracy" in r]
    assert [r["step"] for r in heldout] == [0, 3, 6] and all(0 <= r["eval_heldout-mlm_accuracy"] <= 1 for r in heldout)
    assert all("mlm_accuracy_last" in r for r in records if "loss" in r)
    assert all(np.isfinite(r["eval_heldout-mlm_loss"]) and r["eval_heldout-mlm_loss"] > 0 for r in heldout)

    masked_lm, info = AutoModelForMaskedLM.from_pretrained(paths.model, output_loading_info=True)
    assert info["missing_keys"] == [] or set(info["missing_keys"]) <= {"cls.predictions.decoder.weight"}
    st = SentenceTransformer(str(paths.model))
    assert type(st[1]).__name__ == "Pooling" and st[1].get_config_dict()["pooling_mode"] == "mean"
    np.testing.assert_array_equal(st.encode(PROBE), engine.load_encoder(paths.model).encode(PROBE))
    # the saved head is the trained one, not the random start's
    start = AutoModelForMaskedLM.from_pretrained(paths.root / "random_init")
    assert not torch.equal(
        masked_lm.cls.predictions.transform.dense.weight, start.cls.predictions.transform.dense.weight
    )
    assert torch.equal(
        masked_lm.bert.embeddings.word_embeddings.weight, st[0].auto_model.embeddings.word_embeddings.weight.cpu()
    )


def test_model_needs_a_name_or_random_init(corpus_file, tmp_path):
    from pydantic import ValidationError

    tree = rawlm_config(corpus_file, corpus_file, tmp_path / "r").to_tree()
    tree["model"]["name"] = "minilm"
    with pytest.raises(ValidationError, match="give model.name .* or model.random_init"):
        validate_config(tree)


def test_heldout_lines_are_never_trained_on(corpus_file, tmp_path):
    from sentlab.methods import get_method

    tree = rawlm_config(corpus_file, corpus_file, tmp_path / "r").to_tree()
    tree["mlm"].update({"heldout": None, "heldout_lines": 10, "heldout_limit": 5})
    tree["data"]["limit"] = 50
    cfg = validate_config(tree)
    method = get_method("mlm")(cfg, engine.RunPaths(tmp_path / "r"))
    lines = corpus_file.read_text().splitlines()
    assert method.train_dataset()["sentence"] == lines[10:60]  # limit counts after the held-out lines
    assert method.heldout_sentences() == lines[:5]
    assert method.own_dev_metric() == "eval_heldout-mlm_accuracy"


@pytest.mark.slow  # a long end-to-end run: CI's -m slow
def test_a_raw_lm_run_compares_with_its_random_start(corpus_file, data_dir, tmp_path):
    """eval.compare_start applies to a random-initialised start too: the run's own random_init/
    encoder is scored beside the pre-trained one, under its description."""
    from sentlab.encoders import load_encoder
    from sentlab.evaluation import CosineScorer, evaluate_sts
    from sentlab.evaluation.results import EvalReport

    lines = corpus_file.read_text().splitlines()
    (tmp_path / "heldout.txt").write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    (tmp_path / "train.txt").write_text("\n".join(lines[20:]) + "\n", encoding="utf-8")
    cfg = rawlm_config(tmp_path / "train.txt", tmp_path / "heldout.txt", tmp_path / "run", max_steps=2)
    cfg.eval.final_tasks, cfg.data.data_dir = ["sts"], str(data_dir)
    paths = engine.train(cfg)
    start = EvalReport.read(paths.start_results)
    assert start.model == "start model (random BERT 2x32, vocabulary train)"
    random_start = load_encoder(paths.root / "random_init", pooler="mean", max_seq_length=32)
    expected = evaluate_sts(CosineScorer(random_start), str(data_dir), tasks=["STS-B"])
    # the same weights and sentences, encoded in other batches: float32 sums differ by ~1e-7 per vector,
    # far below the 0.01 that printed Spearman x 100 resolves
    assert start.tasks["STS-B"].spearman == pytest.approx(expected.tasks["STS-B"].spearman, abs=1e-2)


def test_a_packed_raw_lm_trains_on_full_length_blocks(corpus_file, tmp_path):
    lines = corpus_file.read_text().splitlines()
    (tmp_path / "heldout.txt").write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(lines[20:] * 4) + "\n", encoding="utf-8")
    tree = rawlm_config(corpus, tmp_path / "heldout.txt", tmp_path / "run", max_steps=3, eval_steps=3).to_tree()
    tree["mlm"].update({"pack": True, "group_by_length": False})
    tree["model"]["max_seq_length"] = 16
    cfg = validate_config(tree)
    seen = []
    original = MLMLoss.forward

    def spy(self, sentence_features, labels=None):
        seen.append(sentence_features[0]["input_ids"].clone())
        return original(self, sentence_features, labels)

    MLMLoss.forward = spy
    try:
        paths = engine.train(cfg)
    finally:
        MLMLoss.forward = original
    assert len(seen) == 3
    pad = SentenceTransformer(str(paths.model)).tokenizer.pad_token_id
    # 16 blocks of 16 real tokens: no block holds a pad token (the collator's mask is all ones by
    # construction, so it is the ids that show it)
    assert all(ids.shape == (16, 16) and not (ids == pad).any() for ids in seen)
    assert "packed 304 sentences into" in paths.log.read_text()
    records = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    assert all(np.isfinite(r["loss"]) for r in records if "loss" in r)


def test_packing_and_length_grouping_are_refused_together(corpus_file, tmp_path):
    from pydantic import ValidationError

    tree = rawlm_config(corpus_file, corpus_file, tmp_path / "r").to_tree()
    tree["mlm"]["pack"] = True  # group_by_length is on in rawlm_config
    with pytest.raises(ValidationError, match="mlm.group_by_length has nothing to group"):
        validate_config(tree)
