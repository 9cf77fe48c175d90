"""Randomly initialised encoders: seeded, a complete masked-LM folder, a vocabulary named or trained,
reused when the spec matches and rebuilt when it does not."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForMaskedLM

from sentlab.encoders.random_init import SPEC_FILE, RandomInit, build_random_masked_lm
from tests.conftest import WORDS

TEXTS = [" ".join(WORDS[i : i + 6]) for i in range(len(WORDS) - 6)] * 3


def tiny(**changes) -> RandomInit:
    return RandomInit(
        **{
            "layers": 2,
            "hidden_size": 32,
            "heads": 2,
            "intermediate_size": 64,
            "max_positions": 32,
            "tokenizer": "train",
            "vocab_size": 120,
            **changes,
        }
    )


def weights(folder) -> dict[str, torch.Tensor]:
    return AutoModelForMaskedLM.from_pretrained(folder).state_dict()


def test_the_same_spec_gives_the_same_weights_and_another_seed_others(tmp_path):
    a = build_random_masked_lm(tiny(), tmp_path / "a", TEXTS, "t")
    b = build_random_masked_lm(tiny(), tmp_path / "b", TEXTS, "t")
    c = build_random_masked_lm(tiny(seed=1), tmp_path / "c", TEXTS, "t")
    wa, wb, wc = weights(a), weights(b), weights(c)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert not torch.equal(
        wa["bert.encoder.layer.0.attention.self.query.weight"], wc["bert.encoder.layer.0.attention.self.query.weight"]
    )


def test_a_trained_vocabulary_has_the_size_asked_and_knows_the_text(tmp_path):
    from transformers import AutoTokenizer

    folder = build_random_masked_lm(tiny(), tmp_path / "m", TEXTS, "t")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert len(tokenizer) <= 120 and tokenizer.mask_token == "[MASK]"
    ids = tokenizer("the dog plays in the park")["input_ids"]
    assert tokenizer.unk_token_id not in ids and ids[0] == tokenizer.cls_token_id
    model = AutoModelForMaskedLM.from_pretrained(folder)
    assert model.config.vocab_size == len(tokenizer) and model.config.hidden_size == 32


def test_a_named_vocabulary_is_that_models(tmp_path, tiny_backbone):
    from transformers import AutoTokenizer

    folder = build_random_masked_lm(tiny(tokenizer=str(tiny_backbone)), tmp_path / "m")
    assert AutoTokenizer.from_pretrained(folder).get_vocab() == AutoTokenizer.from_pretrained(tiny_backbone).get_vocab()


def test_a_matching_folder_is_reused_and_another_spec_or_a_half_written_one_rebuilt(tmp_path):
    folder = build_random_masked_lm(tiny(), tmp_path / "m", TEXTS, "t")
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    build_random_masked_lm(tiny(), folder, TEXTS, "t")
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # reused
    build_random_masked_lm(tiny(layers=1), folder, TEXTS, "t")
    assert AutoModelForMaskedLM.from_pretrained(folder).config.num_hidden_layers == 1
    (folder / SPEC_FILE).unlink()  # killed before its description was written
    build_random_masked_lm(tiny(layers=1), folder, TEXTS, "t")
    assert (folder / SPEC_FILE).is_file()


def test_bad_specs_are_errors():
    with pytest.raises(ValueError, match="not a multiple of heads"):
        tiny(hidden_size=30, heads=4)
