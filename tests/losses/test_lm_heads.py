"""LM heads come from the checkpoint for every kind of name: a local folder and a hub name (offline,
from a local hub cache made here); only a checkpoint without a head starts one at random, with a notice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import make_tiny_backbone, subprocess_env

ROOT = Path(__file__).resolve().parents[2]
HUB_NAME = "sentlab-test/tiny-mlm"


def make_masked_lm(folder: Path) -> dict[str, torch.Tensor]:
    """A tiny BERT with a masked-LM head whose head weights are recognisable; returns them."""
    from transformers import BertForMaskedLM

    make_tiny_backbone(folder, dropout=0.0)  # vocabulary, tokenizer and config
    model = BertForMaskedLM.from_pretrained(folder)
    with torch.no_grad():
        model.cls.predictions.bias.fill_(0.125)
        model.cls.predictions.transform.dense.weight.copy_(torch.linspace(-1, 1, 32 * 32).reshape(32, 32))
    model.save_pretrained(folder, safe_serialization=True)
    return {
        "bias": model.cls.predictions.bias.detach().clone(),
        "transform": model.cls.predictions.transform.dense.weight.detach().clone(),
    }


def head_of(loss_head) -> dict[str, torch.Tensor]:
    return {
        "bias": loss_head.cls.predictions.bias.detach().cpu(),
        "transform": loss_head.cls.predictions.transform.dense.weight.detach().cpu(),
    }


def test_a_local_checkpoint_supplies_its_mlm_head_and_tsdae_decoder_head(tmp_path):
    from sentlab.encoders import build_encoder
    from sentlab.losses.tsdae import TSDAELoss
    from sentlab.methods.mlm import MLMLoss

    expected = make_masked_lm(tmp_path / "mlm")
    model = build_encoder(str(tmp_path / "mlm"), "mean")
    for loss_head in (MLMLoss(model).head, TSDAELoss(model).decoder):
        for name, tensor in head_of(loss_head).items():
            torch.testing.assert_close(tensor, expected[name], rtol=0, atol=0, msg=name)


def test_a_checkpoint_without_a_head_starts_one_at_random_and_says_so(tmp_path, capsys):
    from sentlab.encoders import build_encoder
    from sentlab.methods.mlm import MLMLoss

    make_tiny_backbone(tmp_path / "plain", dropout=0.0)  # BertModel: no head weights
    MLMLoss(build_encoder(str(tmp_path / "plain"), "mean"))
    err = capsys.readouterr().err
    assert "has no weights for" in err and "masked-LM head" in err and "random initialisation" in err


OFFLINE_SCRIPT = f"""
import sys, torch
from sentlab.encoders import load_encoder
from sentlab.errors import ModelLoadError
from sentlab.losses.tsdae import TSDAELoss
from sentlab.methods.mlm import MLMLoss
model = load_encoder({HUB_NAME!r}, pooler="mean")
expected = torch.load(sys.argv[1])
for head in (MLMLoss(model).head, TSDAELoss(model).decoder):
    torch.testing.assert_close(head.cls.predictions.bias.detach().cpu(), expected["bias"], rtol=0, atol=0)
    torch.testing.assert_close(head.cls.predictions.transform.dense.weight.detach().cpu(), expected["transform"],
                               rtol=0, atol=0)
try:
    load_encoder("sentlab-test/not-cached", pooler="mean")
except ModelLoadError as err:
    print("refused:", err)
print("ok")
"""


@pytest.mark.slow
def test_a_hub_name_loads_offline_from_the_hub_cache_with_its_head(tmp_path):
    """With HF_HUB_OFFLINE=1, a hub name already in the local hub cache loads by name (as in
    transformers and sentence-transformers), and its masked-LM head is the checkpoint's, not random."""
    snapshot = tmp_path / "hub" / f"models--{HUB_NAME.replace('/', '--')}" / "snapshots" / "0123abcd"
    expected = make_masked_lm(snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    torch.save(expected, tmp_path / "expected.pt")
    env = subprocess_env(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hub"))
    result = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT, str(tmp_path / "expected.pt")],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "refused: sentlab-test/not-cached: not a local folder or alias, nor in the local hub cache" in result.stdout
    assert result.stdout.strip().endswith("ok")
