"""Each of sentlab's losses used as a sentence-transformers user would: imported from
``sentlab.losses``, given a dataset built with public helpers, and trained for a few steps by a plain
``SentenceTransformerTrainer`` (no sentlab engine). The trained parameters must move and the loss
must stay finite."""

from __future__ import annotations

import math

import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

from sentlab import losses
from tests.conftest import DEVICE, WORDS, make_tiny_backbone

SENTENCES = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + i % 5)) for i in range(48)]


def sentence_model(folder, seed: int = 0) -> SentenceTransformer:
    transformer = Transformer(str(make_tiny_backbone(folder, seed=seed)), max_seq_length=24)
    return SentenceTransformer(
        modules=[transformer, Pooling(transformer.get_embedding_dimension(), "mean")], device=str(DEVICE)
    )


def frozen_vectors(folder, sentences):
    return sentence_model(folder, seed=7).encode(sentences, convert_to_numpy=True, normalize_embeddings=True)


def build(name: str, model: SentenceTransformer, tmp_path):
    """(loss, train dataset, the parameters the loss trains) for one of sentlab's losses."""
    if name == "SimCSELoss":
        return losses.SimCSELoss(model), Dataset.from_dict({"sentence": SENTENCES}), model
    if name == "RankCSELoss":
        teacher = frozen_vectors(tmp_path / "teacher", SENTENCES)
        loss = losses.RankCSELoss(
            losses.SimCSELoss(model), [teacher], [1.0], distillation="listnet", tau_student=0.05, tau_teacher=0.025
        )
        return loss, losses.indexed_sentences(SENTENCES), model
    if name == "RankEncoderLoss":
        e1_train = frozen_vectors(tmp_path / "e1", SENTENCES)
        e1_corpus = frozen_vectors(tmp_path / "e1", SENTENCES[::2])
        loss = losses.RankEncoderLoss(losses.SimCSELoss(model), e1_train, e1_corpus)
        return loss, losses.indexed_sentences(SENTENCES), model
    if name == "TSDAELoss":
        return losses.TSDAELoss(model), losses.noisy_pairs(SENTENCES, noise="delete", ratio=0.6), model
    if name == "MLMLoss":
        return losses.MLMLoss(model), Dataset.from_dict({"sentence": SENTENCES}), model
    if name == "FlowNLLLoss":
        from sentlab.encoders.flow import GlowFlow

        for parameter in model.parameters():
            parameter.requires_grad_(False)
        flow = GlowFlow(model.get_embedding_dimension(), steps=2, hidden_channels=8)
        model.append(flow)
        return losses.FlowNLLLoss(model), Dataset.from_dict({"sentence": SENTENCES}), flow
    if name in ("RSELoss", "GradientCache"):  # Gradient Cache around the one loss with parameters of its own
        rows = Dataset.from_dict({"head": SENTENCES[:24], "tail": SENTENCES[24:], "label": [i % 2 for i in range(24)]})
        loss = losses.RSELoss(model, relations=["entailment", "duplicate_question"])
        if name == "GradientCache":
            loss = losses.GradientCache(loss, mini_batch_size=4)
        return loss, rows, loss  # the relation vectors are the loss's parameters
    raise AssertionError(name)


LOSS_CLASSES = sorted(name for name in losses.__all__ if name.endswith("Loss") or name == "GradientCache")


def test_every_exported_loss_is_covered_and_has_an_example():
    assert LOSS_CLASSES == [
        "FlowNLLLoss",
        "GradientCache",
        "MLMLoss",
        "RSELoss",
        "RankCSELoss",
        "RankEncoderLoss",
        "SimCSELoss",
        "TSDAELoss",
    ]
    for name in LOSS_CLASSES:
        assert "Example::" in (getattr(losses, name).__doc__ or ""), f"{name} has no docstring example"


@pytest.mark.parametrize("name", LOSS_CLASSES)
def test_loss_trains_with_a_plain_sentence_transformers_trainer(name, tmp_path):
    torch.manual_seed(0)
    model = sentence_model(tmp_path / "model")
    loss, dataset, trained = build(name, model, tmp_path)
    before = [p.detach().cpu().clone() for p in trained.parameters() if p.requires_grad]
    assert before, "nothing to train"
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        max_steps=3,
        learning_rate=1e-2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=dataset, loss=loss)
    trainer.train()
    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert logged and all(math.isfinite(value) for value in logged)
    after = [p.detach().cpu() for p in trained.parameters() if p.requires_grad]  # use_cpu moved them
    assert any(not torch.equal(a, b) for a, b in zip(before, after)), f"{name}: no parameter moved"
