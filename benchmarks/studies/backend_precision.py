"""What fp32 means per runtime on this CPU: OpenVINO's CPU capabilities and the precision it reports
when compiled with each hint, and the largest difference of the onnxruntime / OpenVINO fp32 vectors from
torch's on the tests' tiny model for every pooler (the basis of the fp32 tolerance in
tests/encoders/test_backends.py). Prints one JSON object.

Feeds: no record (its figures are quoted by hand); pages docs/results.md.

    python -m benchmarks.studies.backend_precision
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = [
    "a man plays the guitar",
    "the dog runs in the park",
    "a girl reads a book on the street",
    "children swim",
    "the big red car drives on the road with a small blue car",
]


def main() -> None:
    import openvino as ov

    from sentlab.encoders import build_encoder
    from sentlab.encoders.backends import accelerate, export, pin_float32_math
    from tests.conftest import make_tiny_backbone

    pin_float32_math()
    core = ov.Core()
    result = {
        "openvino_capabilities": list(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")),
        "openvino_compiled_precision_by_hint": {},
        "max_abs_difference_from_torch": {},
    }
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(sys.stderr):
        backbone = make_tiny_backbone(Path(folder) / "tiny", dropout=0.0)
        for pooler in ("mean", "cls", "first_last_avg", "prompt"):
            reference = build_encoder(str(backbone), pooler).eval()
            expected = reference.encode(SENTENCES, batch_size=2)
            for backend in ("onnx", "openvino"):
                model = build_encoder(str(backbone), pooler)
                accelerate(model, backend, "fp32", root=Path(folder))
                got = model.encode(SENTENCES, batch_size=2)
                result["max_abs_difference_from_torch"][f"{pooler} {backend}"] = float(np.abs(got - expected).max())
            result.setdefault("max_abs_value", {})[pooler] = float(np.abs(expected).max())
        graph = export(build_encoder(str(backbone), "mean"), "openvino", "fp32", "probe", Path(folder))
        for hint in ("f32", "bf16", "f16"):
            compiled = core.compile_model(str(graph / "model.xml"), "CPU", {"INFERENCE_PRECISION_HINT": hint})
            result["openvino_compiled_precision_by_hint"][hint] = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
