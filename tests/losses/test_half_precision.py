"""Every method's loss under fp16 / bf16 autocast on the test device against fp32 (tests/half_precision_cases.py),
and the losses' float32 regions, which must give the float32 result bit for bit under autocast."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentlab.losses.rankcse import js_consistency, listmle_loss, listnet_loss
from sentlab.losses.rankencoder import rank_regression_loss
from sentlab.losses.simcse import cosine_matrix, info_nce
from tests.conftest import DEVICE, make_tiny_backbone
from tests.half_precision_cases import cases, compare, tolerances

MAX_CALIBRATION_SKIPS = 4  # dynamic loss scaling halves its 2^16 start until the gradients fit in fp16
RUNS = [
    (case, dtype, mode)
    for case in cases()
    for dtype in ("bf16", "fp16")
    for mode in (("engine", "autocast") if case.own_loss else ("engine",))
]


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    return make_tiny_backbone(tmp_path_factory.mktemp("half-precision"), dropout=0.0)  # the same graph in each run


@pytest.mark.parametrize("case, dtype, mode", RUNS, ids=[f"{c.name}-{d}-{m}" for c, d, m in RUNS])
def test_loss_and_gradients_in_half_precision_equal_fp32_within_the_derived_tolerance(case, dtype, mode, backbone):
    result = compare(case, backbone, dtype, mode)
    loss_tolerance, grad_tolerance = tolerances(dtype)  # derived in tolerances()'s docstring
    assert result.finite
    assert result.loss_error <= loss_tolerance * (1 + abs(result.loss_fp32)), result
    assert result.grad_relative_error <= grad_tolerance, result
    assert result.loss_error > 0 or result.grad_relative_error > 0, "half precision changed nothing: did it run?"
    assert result.calibration_skips <= MAX_CALIBRATION_SKIPS and not result.skipped_after_calibration, result


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_losses_float32_regions_are_exact_under_autocast(dtype):
    rng = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(8, 16, generator=rng).to(DEVICE) for _ in range(3))
    teacher = torch.randn(8, 8, generator=rng).to(DEVICE)
    targets = torch.rand(8, 8, generator=rng).to(DEVICE)
    computations = {
        "cosine_matrix": lambda: cosine_matrix(a, b),
        "info_nce": lambda: info_nce(a, b, c, temperature=0.05, gather=False),
        "js_consistency": lambda: js_consistency(cosine_matrix(a, b), cosine_matrix(b, a), 0.05),
        "listnet": lambda: listnet_loss(cosine_matrix(a, b), teacher, 0.025, 0.0125),
        "listmle": lambda: listmle_loss(cosine_matrix(a, b), teacher, 0.025),
        "rank_regression": lambda: rank_regression_loss(cosine_matrix(a, b), targets, 0.5, 0.8),
    }
    for name, compute in computations.items():
        expected = compute()
        with torch.autocast(DEVICE.type, dtype=dtype):
            got = compute()
        assert got.dtype == torch.float32, name
        np.testing.assert_array_equal(got.cpu().numpy(), expected.cpu().numpy(), err_msg=name)
    with torch.autocast(DEVICE.type, dtype=dtype):  # without the region, autocast rounds the same product
        rounded = a @ b.T
    assert rounded.dtype == dtype


def test_the_flow_stays_float32_under_autocast():
    from sentlab.encoders.flow import GlowFlow

    flow = GlowFlow(16, steps=2, hidden_channels=8, seed=0).to(DEVICE).train()
    u = torch.randn(4, 16, generator=torch.Generator().manual_seed(0)).to(DEVICE)
    expected = flow({"sentence_embedding": u.clone()})["flow_log_likelihood"]
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        got = flow({"sentence_embedding": u.clone()})["flow_log_likelihood"]
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().cpu().numpy())
