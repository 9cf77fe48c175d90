"""Static int8 (activations calibrated ahead) against torch fp32 and sentlab's dynamic int8, for encoding.

Feeds: records int8-static-minilm; pages docs/changelog.md, docs/contributing.md,
docs/guides/inference.md, docs/results.md.

Each setting runs the model's transformer on one runtime, the pooling in torch, through sentlab's own
encoding path (:func:`sentlab.encoders.batching.encode_by_length`, batches of similar token length),
in one process: torch fp32; onnxruntime's and OpenVINO's dynamic int8 (sentlab's ``--precision
int8``); OpenVINO static int8 as sentlab ships it (``--backend openvino --precision int8-static``: NNCF
``quantize``, transformer mode, calibrated on 300 seeded Wikipedia sentences); and, as the alternative
tried, onnxruntime static int8 (``quantize_static``, QDQ, int8 weights per channel and symmetric int8
activations, calibrated on the last ``--calibration`` Wikipedia lines: this argument feeds that
setting only). A setting's rate is
the median over ``--rounds`` alternating rounds of encoding ``--sentences`` Wikipedia sentences; its
quality is the cosine of each embedding with torch fp32's (mean) and STS-B test's Spearman x 100.
Prints one JSON object.

    python -m benchmarks.perf.int8_static --sentences 4000 --calibration 300 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import emit


def static_onnx(fp32_model: Path, feeds: list[dict], out: Path) -> Path:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = iter(feeds)

        def get_next(self):
            return next(self.left, None)

    out.mkdir(parents=True, exist_ok=True)
    quantize_static(
        str(fp32_model),
        str(out / "model.onnx"),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        extra_options={"ActivationSymmetric": True},
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--calibration", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="runs/int8-static")
    args = parser.parse_args()

    from scipy.stats import spearmanr

    from sentlab.data.sts import read_stsb
    from sentlab.encoders import backends, load_encoder
    from sentlab.encoders.backends import ExportedTransformer
    from sentlab.encoders.batching import encode_by_length
    from sentlab.paths import data_dir
    from sentlab.progress import set_quiet
    from sentlab.rank.index import encoder_fingerprint

    set_quiet(True)
    backends.pin_float32_math()
    root, work = data_dir(), Path(args.work)
    wiki = (root / "wikipedia" / "wiki_sentences.txt").read_text("utf-8").splitlines()
    timed, calibration = wiki[: args.sentences], wiki[-args.calibration :]
    stsb = root / "senteval" / "downstream" / "STS" / "STSBenchmark"
    sts = read_stsb(stsb, "test") if stsb.is_dir() else None
    reference = load_encoder(args.model, device="cpu")
    fingerprint = encoder_fingerprint(reference)
    fp32_ov = backends.export(reference, "openvino", "fp32", fingerprint)
    names = json.loads((fp32_ov / backends.EXPORT_META).read_text("utf-8"))["inputs"]

    def feeds(batch: list[str]) -> dict:
        features = reference.tokenize(batch)
        return {n: features[n].cpu().numpy() for n in names}

    calibration_feeds = [feeds(calibration[i : i + 16]) for i in range(0, len(calibration), 16)]
    onnx_static = static_onnx(fp32_ov.parent / "onnx-fp32" / "model.onnx", calibration_feeds, work / "onnx-static")
    runners = {  # the name: sentlab's --backend-precision; onnx-static-qdq is not a sentlab setting
        "torch-fp32": ("torch", "fp32"),
        "onnx-int8": ("onnx", "int8"),
        "openvino-int8": ("openvino", "int8"),
        "openvino-int8-static": ("openvino", "int8-static"),
        "onnx-static-qdq": None,
    }
    models = {}
    for name, setting in runners.items():
        model = load_encoder(args.model, device="cpu")
        if setting is None:
            transformer = backends._transformer(model)
            run = backends._runner(onnx_static, "onnx", None)
            transformer.model = ExportedTransformer(run, transformer.model.config, names)
        elif setting != ("torch", "fp32"):
            backends.accelerate(model, *setting, fingerprint=fingerprint)
        models[name] = model.eval()
    rates: dict[str, list[float]] = {name: [] for name in models}
    vectors = {}
    for _ in range(args.rounds):
        for name, model in models.items():
            encode_by_length(model, timed[:200], 128)  # warm-up
            start = time.perf_counter()
            vectors[name] = encode_by_length(model, timed, 128)
            rates[name].append(len(timed) / (time.perf_counter() - start))
    base = vectors["torch-fp32"]
    result = {"model": args.model, "sentences": args.sentences, "calibration": args.calibration, "settings": {}}
    for name, model in models.items():
        v = vectors[name]
        cosine = np.sum(v * base, 1) / np.linalg.norm(v, axis=1) / np.linalg.norm(base, axis=1)
        row = {
            "rate": round(statistics.median(rates[name]), 1),
            "x_torch_fp32": round(statistics.median(rates[name]) / statistics.median(rates["torch-fp32"]), 2),
            "cosine_to_fp32_mean": round(float(cosine.mean()), 5),
            "cosine_to_fp32_min": round(float(cosine.min()), 5),
        }
        if sts is not None:
            a = encode_by_length(model, list(sts.sentences1), 128)
            b = encode_by_length(model, list(sts.sentences2), 128)
            scores = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            row["stsb_test_spearman"] = round(100 * float(spearmanr(scores, [float(s) for s in sts.scores])[0]), 2)
        result["settings"][name] = row
        print(name, row, file=sys.stderr)
    emit(result)


if __name__ == "__main__":
    main()
