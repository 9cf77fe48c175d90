import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from sentlab.encoders import build_encoder, load_encoder
from tests.conftest import features_of


def test_prompt_pooler_is_the_mask_state_of_the_filled_template(tiny_backbone, tmp_path):
    model = build_encoder(str(tiny_backbone), "prompt", prompt_template='this : "{sentence}" means [MASK] .')
    tokenizer = AutoTokenizer.from_pretrained(tiny_backbone)
    backbone = AutoModel.from_pretrained(tiny_backbone).eval()
    batch = tokenizer(['this : "a man plays" means [MASK] .'], return_tensors="pt")
    with torch.no_grad():
        states = backbone(**batch).last_hidden_state[0]
    position = batch["input_ids"][0].tolist().index(tokenizer.mask_token_id)
    np.testing.assert_allclose(model.encode(["a man plays"])[0], states[position].cpu().numpy(), atol=1e-5)
    model.save(str(tmp_path / "p"))
    np.testing.assert_array_equal(load_encoder(tmp_path / "p").encode(["a man plays"]), model.encode(["a man plays"]))


def test_long_sentences_are_cut_so_the_mask_survives(tiny_backbone):
    model = build_encoder(str(tiny_backbone), "prompt", max_seq_length=12)
    long = " ".join(["dog"] * 50)
    features = features_of(model, [long, "a cat"])
    assert features["input_ids"].shape[1] <= 12
    assert (features["input_ids"] == model.tokenizer.mask_token_id).sum(dim=1).tolist() == [1, 1]
    assert model.encode([long]).shape == (1, 32)
