"""Packed pre-training blocks (run_mlm's group_texts) against a naive second implementation."""

from __future__ import annotations

import pytest
from datasets import Dataset

from sentlab.data.packing import BlockCollator, pack_blocks
from sentlab.encoders import build_encoder


def naive_blocks(tokenizer, sentences: list[str], length: int, batch: int) -> list[list[int]]:
    """Sentence by sentence: ids with special tokens appended to a list, cut every ``length`` ids,
    the tail of each group of ``batch`` sentences dropped."""
    blocks = []
    for start in range(0, len(sentences), batch):
        stream: list[int] = []
        for sentence in sentences[start : start + batch]:
            stream += tokenizer.encode(sentence, add_special_tokens=True)
        while len(stream) >= length:
            blocks.append(stream[:length])
            stream = stream[length:]
    return blocks


@pytest.mark.parametrize("batch", [7, 10_000])
def test_blocks_are_the_sentence_streams_cut_at_full_length(tiny_backbone, corpus_file, batch):
    tokenizer = build_encoder(str(tiny_backbone), "mean").tokenizer
    sentences = corpus_file.read_text().splitlines()
    blocks = pack_blocks(Dataset.from_dict({"sentence": sentences}), tokenizer, 16, batch_size=batch)
    assert blocks.column_names == ["input_ids"]
    expected = naive_blocks(tokenizer, sentences, 16, batch)
    assert blocks["input_ids"] == expected and len(expected) > 10
    if batch >= len(sentences):  # one stream: only its last partial block is left out
        total = sum(len(tokenizer.encode(s)) for s in sentences)
        assert len(expected) == total // 16
        # each sentence keeps its [CLS] ... [SEP] in the stream (none truncated); the dropped tail
        # (< 16 ids) holds at most the last two of these 3-8-word sentences
        flat = [i for block in expected for i in block]
        assert flat.count(tokenizer.cls_token_id) >= len(sentences) - 2


def test_a_block_batch_is_full_length_with_no_padding():
    batch = BlockCollator("sentence")([{"input_ids": [5, 6, 7]}, {"input_ids": [8, 9, 10]}])
    assert batch["sentence_input_ids"].tolist() == [[5, 6, 7], [8, 9, 10]]
    assert batch["sentence_attention_mask"].tolist() == [[1, 1, 1], [1, 1, 1]]


def test_a_block_shorter_than_two_tokens_is_refused(tiny_backbone):
    tokenizer = build_encoder(str(tiny_backbone), "mean").tokenizer
    with pytest.raises(ValueError, match="at least 2 tokens"):
        pack_blocks(Dataset.from_dict({"sentence": ["a b"]}), tokenizer, 1)
