"""Every method's loss and gradients in bf16 and fp16 against fp32, on a CPU (tiny random BERT, batch
8, the presets' temperatures and learning rates; tests/half_precision_cases.py): per method and
precision, |loss - fp32 loss|, the norm-wise relative gradient error, the tolerance each is held to
in the tests, and how many steps fp16's gradient scaler skipped before one went through.

Feeds: records half-precision-losses-cpu; pages docs/mixed-precision.md.

    python -m benchmarks.studies.half_precision_losses
"""

from __future__ import annotations

import json
import platform
import tempfile
from pathlib import Path

from tests.conftest import make_tiny_backbone  # noqa: E402
from tests.half_precision_cases import cases, compare, tolerances  # noqa: E402


def main() -> None:
    import torch

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        backbone = make_tiny_backbone(Path(folder) / "bert", dropout=0.0)
        for case in cases():
            for dtype in ("bf16", "fp16"):
                for mode in ("engine", "autocast") if case.own_loss else ("engine",):
                    result = compare(case, backbone, dtype, mode)
                    loss_tol, grad_tol = tolerances(dtype)
                    rows.append(
                        {
                            "loss": case.name,
                            "preset": case.preset,
                            "dtype": dtype,
                            "mode": mode,
                            "loss_fp32": round(result.loss_fp32, 6),
                            "abs_loss_error": float(f"{result.loss_error:.3g}"),
                            "loss_tolerance": float(f"{loss_tol * (1 + abs(result.loss_fp32)):.3g}"),
                            "grad_relative_error": float(f"{result.grad_relative_error:.3g}"),
                            "grad_tolerance": grad_tol,
                            "finite": result.finite,
                            "fp16_calibration_skips": result.calibration_skips,
                            "skipped_after_calibration": result.skipped_after_calibration,
                        }
                    )
    print(
        json.dumps(
            {
                "benchmark": "half_precision_losses",
                "torch": torch.__version__,
                "cpu": platform.processor() or platform.machine(),
                "rows": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
