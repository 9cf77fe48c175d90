"""Randomly initialised encoders: a BERT-architecture masked LM with random weights and a chosen
vocabulary, written as an ordinary transformers folder so every method trains it like any backbone.

The vocabulary is either a named model's (``tokenizer: minilm``: the packaged all-MiniLM-L6-v2's
uncased WordPiece, 30,522 tokens, as BERT-base) or a WordPiece vocabulary trained on the training
text with the ``tokenizers`` library (``tokenizer: train``, ``vocab_size``: a smaller vocabulary
makes the MLM head's and TSDAE decoder's softmax cheaper on a CPU). The folder holds a
``BertForMaskedLM`` (encoder *and* LM head, both at transformers' initialisation, ``seed``), so
``AutoModelForMaskedLM.from_pretrained(folder)`` loads both and the MLM / TSDAE heads start from it.

A folder is described by ``random_init.json`` (the spec and the training text's sha256), written
last: a folder that matches is reused, one that does not (or half-written) is rebuilt.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sentlab.errors import ConfigError

SPEC_FILE = "random_init.json"


class RandomInit(BaseModel):
    """``model.random_init``: the architecture and vocabulary of a randomly initialised encoder."""

    model_config = ConfigDict(extra="forbid")

    layers: int = Field(4, gt=0)
    hidden_size: int = Field(256, gt=0)
    heads: int = Field(4, gt=0)
    intermediate_size: int = Field(1024, gt=0)
    max_positions: int = Field(128, gt=1, description="position embeddings (the longest input it can read)")
    dropout: float = Field(0.1, ge=0, lt=1, description="hidden and attention dropout (BERT: 0.1)")
    seed: int = 0
    tokenizer: str = Field(
        "minilm",
        description="a model (alias, folder, hub name) whose vocabulary to use, or "
        "'train': a WordPiece vocabulary trained on data.train",
    )
    vocab_size: int = Field(8192, gt=100, description="tokenizer: train - the vocabulary size")
    lowercase: bool = Field(True, description="tokenizer: train - lower-case and strip accents, as uncased BERT")

    @model_validator(mode="after")
    def _heads_divide(self) -> RandomInit:
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not a multiple of heads {self.heads}")
        return self


def build_random_masked_lm(
    spec: RandomInit, folder: Path, texts: Iterable[str] | None = None, texts_sha256: str = ""
) -> Path:
    """Write (or reuse) ``folder``: a random BertForMaskedLM of ``spec`` and its tokenizer."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    description = {"spec": spec.model_dump(), "texts_sha256": texts_sha256 if spec.tokenizer == "train" else ""}
    record = folder / SPEC_FILE
    if record.is_file() and _read(record) == description:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tokenizer = _tokenizer(spec, texts)
    torch.manual_seed(spec.seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=spec.max_positions,
        hidden_dropout_prob=spec.dropout,
        attention_probs_dropout_prob=spec.dropout,
        pad_token_id=tokenizer.pad_token_id,
    )
    BertForMaskedLM(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.model_max_length = spec.max_positions
    tokenizer.save_pretrained(folder)
    record.write_text(json.dumps(description, indent=1) + "\n", encoding="utf-8")  # last: the folder is whole
    return folder


def _tokenizer(spec: RandomInit, texts: Iterable[str] | None):
    from transformers import AutoTokenizer, BertTokenizerFast

    if spec.tokenizer != "train":
        from sentlab.encoders.loading import resolve_model_path

        path = resolve_model_path(spec.tokenizer)
        if (Path(path) / "0_Transformer").is_dir():
            path = str(Path(path) / "0_Transformer")
        return AutoTokenizer.from_pretrained(path)
    if texts is None:
        raise ConfigError("model.random_init.tokenizer: train needs the training text (data.train)")
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=spec.lowercase, strip_accents=spec.lowercase)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.decoder = decoders.WordPiece()
    wordpiece.train_from_iterator(
        texts, trainers.WordPieceTrainer(vocab_size=spec.vocab_size, special_tokens=special, show_progress=False)
    )
    from tokenizers.processors import TemplateProcessing

    cls, sep = wordpiece.token_to_id("[CLS]"), wordpiece.token_to_id("[SEP]")
    wordpiece.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return BertTokenizerFast(
        tokenizer_object=wordpiece,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        do_lower_case=spec.lowercase,
    )


def _read(path: Path) -> object:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
