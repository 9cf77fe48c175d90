"""Masked-language-model training on the target sentences, the TSDAE paper's MLM baseline (Sec. 5.2).

BERT's original objective (Devlin et al. 2019): 15 % of the tokens are chosen; of those 80 % become
[MASK], 10 % a random token, 10 % stay; cross-entropy on the chosen ones. The masking is
transformers' ``DataCollatorForLanguageModeling.torch_mask_tokens`` draw, made on the device for
each tokenised batch (:meth:`MLMLoss.mask_tokens`, so it is drawn afresh every step); the LM head
is transformers' masked-LM class of the encoder's architecture, its body tied to the encoder
(:mod:`sentlab.losses.lm_heads`). The sentence embedding is the mean of the output token states
(``model.pooler: mean``). Paper preset: 100k steps, batch 8, lr 5e-5 (the ``mlm-bert-base``
preset). The head is training-only; the saved model is the encoder with mean pooling.

Pre-training a raw LM from random weights (``model.random_init``, the ``rawlm-*`` preset) uses the
same method with two additions:

* ``mlm.heldout``: sentences never trained on (a held-out slice of the general-domain text), scored
  at every evaluation with a fixed mask (``mlm.heldout_seed``) for the held-out MLM loss and
  masked-token accuracy (``eval_heldout-mlm_loss`` / ``_accuracy``, the latter keeps the best
  checkpoint when there is no other dev task); each logged training step also has the batch's
  masked-token accuracy (``mlm_accuracy_last``);
* ``mlm.save_head: true`` saves the final model as a complete masked-LM checkpoint in transformers'
  own layout (``AutoModelForMaskedLM.from_pretrained(folder)`` loads encoder *and* head, as for
  bert-base-uncased) that is also a sentence-transformers folder with mean pooling.
"""

from __future__ import annotations

from typing import Literal

import torch
from datasets import Dataset
from pydantic import Field, model_validator
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from torch import nn

from sentlab.data.packing import BlockCollator, pack_blocks
from sentlab.data.readers import read_sentences
from sentlab.errors import ConfigError
from sentlab.losses.mlm import MLMLoss
from sentlab.methods.base import Method, read_train_sentences, register, train_table
from sentlab.progress import say
from sentlab.training.config import TrainConfig, _Section


class MLMSection(_Section):
    probability: float = Field(0.15, gt=0, lt=1, description="share of tokens chosen for prediction (BERT: 0.15)")
    save_head: bool = Field(
        False,
        description="save the final model with its masked-LM head, in transformers' "
        "layout (a raw LM that later methods start from)",
    )
    heldout: str | None = Field(
        None, description="held-out sentences (one a line): MLM loss and masked-token accuracy at every evaluation"
    )
    heldout_lines: int | None = Field(
        None,
        gt=0,
        description="hold out the first N lines of data.train instead: "
        "never trained on (training reads the lines after "
        "them), scored at every evaluation",
    )
    heldout_limit: int | None = Field(2000, gt=0, description="use the first N held-out sentences")
    heldout_seed: int = Field(0, description="the held-out mask (the same at every evaluation)")
    group_by_length: bool = Field(
        False, description="batches of similar length (less padding; sentlab.training.samplers), for pre-training"
    )
    pack: bool = Field(
        False,
        description="pre-training: the sentences' token streams concatenated and cut into blocks of "
        "model.max_seq_length tokens (run_mlm's group_texts; sentlab.data.packing), no padding; "
        "train.batch_size counts blocks",
    )

    @model_validator(mode="after")
    def _one_batching(self) -> MLMSection:
        if self.pack and self.group_by_length:
            raise ValueError(
                "mlm.pack makes every row a full-length block, so mlm.group_by_length has nothing to group; keep one"
            )
        return self


class MLMConfig(TrainConfig):
    method: Literal["mlm"]
    mlm: MLMSection = Field(default_factory=MLMSection)
    not_read = {"loss": "its objective is set in the mlm section"}

    section = "mlm"
    section_required = False


class HeldoutMLMEvaluator(SentenceEvaluator):
    """MLM loss and masked-token accuracy on held-out sentences, with one fixed mask for every
    evaluation (so the curve compares checkpoints, not masks): ``heldout-mlm_loss`` and
    ``heldout-mlm_accuracy`` (primary), token-weighted over the set."""

    name = "heldout-mlm"

    def __init__(self, loss: MLMLoss, sentences: list[str], max_seq_length: int, seed: int = 0, batch_size: int = 64):
        super().__init__()
        self.loss, self.batch_size = loss, batch_size
        self.primary_metric = "accuracy"
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            self.batches = []
            tokenizer = loss.encoder.tokenizer
            for start in range(0, len(sentences), batch_size):
                encoded = tokenizer(
                    sentences[start : start + batch_size],
                    padding=True,
                    truncation=True,
                    max_length=max_seq_length,
                    return_tensors="pt",
                )
                inputs, targets = loss.mask_tokens(encoded["input_ids"].clone())
                self.batches.append((inputs, encoded["attention_mask"], targets))
        finally:
            torch.random.set_rng_state(generator_state)

    def __call__(self, model, output_path=None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        was_training = self.loss.training
        self.loss.eval()
        total_loss, correct, chosen = 0.0, 0, 0
        device = model.device
        with torch.no_grad():
            for inputs, attention_mask, targets in self.batches:
                loss, hits, count = self.loss.scored(inputs.to(device), attention_mask.to(device), targets.to(device))
                total_loss += float(loss) * int(count)
                correct, chosen = correct + int(hits), chosen + int(count)
        self.loss.train(was_training)
        metrics = self.prefix_name_to_metrics(
            {"loss": total_loss / max(chosen, 1), "accuracy": correct / max(chosen, 1)}, self.name
        )
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


@register
class MLM(Method):
    """Masked-language-model training (the body of the model is trained; mean pooling at inference)."""

    min_batch_size = 1  # learns from each sentence on its own
    name = "mlm"
    config_class = MLMConfig
    simcse_mlp = False
    no_adapter = (
        "MLM's head runs a copy of the encoder tied by weight name, which an adapter's wrapped layers leave untied"
    )
    no_matryoshka = "the masked-LM loss trains no sentence embedding"
    no_gradient_cache = (
        "the masked-LM loss predicts each row's tokens from that row alone, and there is no sentence embedding to "
        "cache; a smaller train.batch_size already needs less memory for the same expected gradient"
    )

    def loss(self, model: SentenceTransformer) -> nn.Module:
        self._loss = MLMLoss(model, self.cfg.mlm.probability)
        return self._loss

    def train_dataset(self) -> Dataset:
        """The training sentences, after the held-out lines when ``mlm.heldout_lines`` sets some apart."""
        skip = self.cfg.mlm.heldout_lines or 0
        limit = self.cfg.data.limit
        cfg = self.cfg.model_copy(
            update={"data": self.cfg.data.model_copy(update={"limit": skip + limit if limit is not None else None})}
        )
        table = train_table(cfg)
        if len(table) <= skip:
            raise ConfigError(f"{self.cfg.data.train}: nothing left to train on after the {skip} held-out lines")
        return table.select(range(skip, len(table))) if skip else table

    def heldout_sentences(self) -> list[str] | None:
        m = self.cfg.mlm
        if m.heldout and m.heldout_lines:
            raise ConfigError("mlm.heldout and mlm.heldout_lines both name held-out sentences; keep one")
        if m.heldout_lines:  # only the lines it needs, not the whole training file again
            count = min(m.heldout_lines, m.heldout_limit or m.heldout_lines)
            return read_train_sentences(
                self.cfg.model_copy(update={"data": self.cfg.data.model_copy(update={"limit": count})})
            )
        return read_sentences(m.heldout, limit=m.heldout_limit) if m.heldout else None

    def batching(self, dataset: Dataset, model: SentenceTransformer):
        """With ``mlm.pack``: the sentences packed into blocks of ``model.max_seq_length`` tokens by the
        model's tokenizer (:func:`~sentlab.data.packing.pack_blocks`), batched by
        :class:`~sentlab.data.packing.BlockCollator`."""
        if not self.cfg.mlm.pack:
            return dataset, None
        length = self.cfg.model.max_seq_length
        blocks = pack_blocks(dataset, model.tokenizer, length)
        say(f"packed {len(dataset):,} sentences into {len(blocks):,} blocks of {length} tokens (mlm.pack)")
        return blocks, BlockCollator()

    def training_arguments(self) -> dict[str, object]:
        if not self.cfg.mlm.group_by_length:
            return {}
        from sentlab.training.samplers import LengthGroupedBatchSampler

        return {"batch_sampler": LengthGroupedBatchSampler}

    def own_dev_metric(self) -> str | None:
        m = self.cfg.mlm
        return f"eval_{HeldoutMLMEvaluator.name}_accuracy" if m.heldout or m.heldout_lines else None

    def dev_evaluator(self, evaluator, loss: nn.Module):
        """The held-out MLM evaluator (``mlm.heldout``), beside the dev task when there is one."""
        sentences = self.heldout_sentences()
        if sentences is None:
            return evaluator
        heldout = HeldoutMLMEvaluator(loss, sentences, self.cfg.model.max_seq_length, seed=self.cfg.mlm.heldout_seed)
        if evaluator is None:
            return heldout
        from sentence_transformers.sentence_transformer.evaluation import (
            SequentialEvaluator,
        )

        return SequentialEvaluator([evaluator, heldout], main_score_function=lambda scores: scores[0])

    def save(self, model: SentenceTransformer) -> None:
        """The encoder as a sentence-transformers folder; with ``mlm.save_head``, its transformers files
        are the masked-LM model's (encoder and head, the head's body tied to the trained encoder)."""
        super().save(model)
        if self.cfg.mlm.save_head:
            self._loss.head.save_pretrained(self.paths.model, safe_serialization=True)
