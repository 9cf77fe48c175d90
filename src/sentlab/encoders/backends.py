"""Inference backends: run a sentence-transformers model's transformer with ONNX Runtime or OpenVINO.

Why this route and not sentence-transformers' own ``backend="onnx" / "openvino"``: those go through
optimum (optimum-onnx, optimum-intel), which cannot be installed beside the transformers 5 this
project pins (optimum-onnx: pip ResolutionImpossible; optimum-intel downgrades transformers and
huggingface-hub below what ``datasets`` needs). The runtimes themselves install cleanly, so sentlab
uses them directly and keeps one pinned set of dependencies (the ``onnx`` and ``openvino`` extras):

* the model's transformer (module 0, a sentence-transformers ``Transformer``) is exported once with
  ``torch.onnx.export`` (TorchScript exporter, dynamic batch and sequence axes);
* ``onnx`` runs that graph with onnxruntime; ``int8`` is onnxruntime's dynamic quantisation
  (``quantize_dynamic``: int8 weights, activations quantised per batch at run time) with per-channel
  weight scales and ``reduce_range`` (7-bit weights), which onnxruntime recommends on x86 CPUs
  without VNNI, where 8-bit u8s8 products can saturate (the resulting drift is measured by
  ``benchmarks/perf/inference_backends.py``);
* ``openvino`` compiles the same ONNX graph for the CPU; ``int8`` compresses the weights to int8 with
  NNCF (``compress_weights``, INT8_ASYM), OpenVINO's dynamic-quantisation route: activations stay in
  float and, where the CPU supports it, are quantised per group at run time; ``int8-static`` quantizes
  weights and activations ahead with NNCF's post-training ``quantize`` (transformer mode: SmoothQuant
  and bias correction), its ranges calibrated on :data:`CALIBRATION_SENTENCES` seeded Wikipedia
  sentences of the data folder (:func:`calibration_sentences`; their sha256 names the export).

Everything after the transformer (pooling, Dense, Normalize, the prompt pooler) still runs in torch,
so every pooler sentlab has works on every backend. ``torch`` additionally offers fp16 / bf16 (GPUs)
and tf32 (Ampere or newer GPUs).

One meaning for each precision on every machine: ``fp32`` is IEEE float32 arithmetic in every runtime,
whatever the CPU or GPU would pick by itself. OpenVINO's CPU plugin runs in bf16 by default on CPUs
with BF16 (AVX-512 BF16, AMX), so sentlab compiles with ``INFERENCE_PRECISION_HINT`` set and then
reads back the precision OpenVINO actually chose: a mismatch is an error, never a relabelled result.
torch may run fp32 matmuls as TF32 (CUDA) or bf16 (oneDNN on CPUs) when asked globally;
:func:`pin_float32_math` turns both off unless ``tf32`` is the setting. onnxruntime's CPU provider
computes float32 unless told otherwise (its bf16 fast-math is an opt-in for ARM), and sentlab says so
explicitly. A reduced precision (``tf32``, ``bf16``, ``fp16``, ``int8``) is its own setting: its own
label in results and its own fingerprint in caches and indexes.

Exports are cached under the sentlab cache (:mod:`sentlab.cache`), keyed by the model's fingerprint,
so a model is exported once. A folder is written under a temporary name and renamed into place when
complete, and its files' sizes and sha256 are checked on use, so an export killed midway is rebuilt,
never loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Transformer

from sentlab.cache_folder import cached_folder, hold_in_use, mark_used, read_record
from sentlab.errors import ModelLoadError, extra_hint

BACKENDS: dict[str, tuple[str, ...]] = {
    "torch": ("fp32", "tf32", "fp16", "bf16"),
    "onnx": ("fp32", "int8"),
    "openvino": ("fp32", "bf16", "int8", "int8-static"),
}
# the precision OpenVINO's CPU plugin must compute in for each setting (int8: int8 weights, float32
# activations; int8-static: the quantized graph's own int8 operations, the rest float32)
OPENVINO_PRECISION_HINT = {"fp32": "f32", "bf16": "bf16", "int8": "f32", "int8-static": "f32"}
CALIBRATION_SENTENCES = 300  # int8-static: sentences whose activations set the quantization ranges
# int8-static's recipe (:func:`_static_int8`), hashed with the sentences: a changed recipe is another export
STATIC_RECIPE = "nncf.quantize transformer, batches of 16, subset every batch"
EXTRAS = {"onnx": ("onnxruntime", "onnx"), "openvino": ("openvino", "nncf", "onnx")}
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
EXPORT_META = "export.json"
OPSET = 17


def check_backend(backend: str, precision: str, device: str | None = None) -> None:
    """Refuse an unknown or unsupported backend / precision / device combination (one line)."""
    if backend not in BACKENDS:
        raise ModelLoadError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if precision not in BACKENDS[backend]:
        raise ModelLoadError(
            f"backend {backend!r} has no precision {precision!r} (choose from {', '.join(BACKENDS[backend])})"
        )
    kind = torch.device(device).type if device else None
    if backend != "torch" and kind not in (None, "cpu"):
        raise ModelLoadError(
            f"backend {backend!r} runs on the CPU here; on {device} use --backend torch --precision fp16 or bf16"
        )
    if backend == "torch" and precision == "fp16" and kind in (None, "cpu") and not torch.cuda.is_available():
        raise ModelLoadError("fp16 needs a GPU (torch on the CPU has no fast fp16 kernels); use bf16 or fp32")
    if backend == "torch" and precision == "tf32" and (kind not in (None, "cuda") or not torch.cuda.is_available()):
        raise ModelLoadError("tf32 needs an NVIDIA GPU (Ampere or newer); use fp32")


def pin_float32_math(allow_tf32: bool = False) -> None:
    """Make float32 matmuls and convolutions IEEE float32 in torch on every device (``allow_tf32``: TF32
    on CUDA GPUs, the ``tf32`` setting / ``train.tf32``). Process-wide, as torch's own switches are;
    the CPU (oneDNN) is always pinned to IEEE, so a CPU with AMX / AVX-512 BF16 computes what one with
    AVX2 computes."""
    cuda_mode = "tf32" if allow_tf32 else "ieee"
    backends = torch.backends
    if hasattr(backends, "fp32_precision"):  # torch >= 2.9: the per-backend precision switches
        for module, mode in (
            (backends.cuda.matmul, cuda_mode),
            (backends.cudnn.conv, cuda_mode),
            (backends.cudnn.rnn, cuda_mode),
            (backends.mkldnn.matmul, "ieee"),
            (backends.mkldnn.conv, "ieee"),
            (backends.mkldnn.rnn, "ieee"),
        ):
            module.fp32_precision = mode
    else:
        torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")
        backends.cuda.matmul.allow_tf32 = allow_tf32
        backends.cudnn.allow_tf32 = allow_tf32


def require_extra(backend: str) -> None:
    """Import the packages a backend needs, or a one-line error naming the extra to install."""
    for package in EXTRAS.get(backend, ()):
        try:
            importlib.import_module(package)
        except ImportError:
            raise ModelLoadError(f"backend {backend!r} needs the package {package!r} ({extra_hint(backend)})") from None


def label(backend: str, precision: str) -> str:
    """How results name the setting, e.g. ``onnx int8``; empty for the reference torch fp32."""
    return "" if (backend, precision) == ("torch", "fp32") else f"{backend} {precision}"


class ExportedTransformer(torch.nn.Module):
    """Stands in for a ``Transformer``'s Hugging Face model: runs an exported graph on numpy inputs.

    Returns what the Hugging Face model returns to sentence-transformers (``last_hidden_state`` and,
    when the config asks, ``hidden_states``), so the ``Transformer`` module and everything after it
    work unchanged.
    """

    def __init__(self, run: Callable[[dict[str, np.ndarray]], list[np.ndarray]], config, input_names: Sequence[str]):
        super().__init__()
        self.run = run
        self.config = config
        self.input_names = list(input_names)
        self.register_buffer("_anchor", torch.zeros(0), persistent=False)  # where outputs go (model.device)

    @property
    def device(self) -> torch.device:
        return self._anchor.device

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        **kwargs,
    ) -> dict:
        given = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        feeds = {}
        for name in self.input_names:
            tensor = given[name] if given[name] is not None else torch.zeros_like(input_ids)
            feeds[name] = tensor.detach().cpu().numpy().astype(np.int64, copy=False)
        outputs = [torch.from_numpy(np.ascontiguousarray(o)).to(self.device) for o in self.run(feeds)]
        result = {"last_hidden_state": outputs[0]}
        if len(outputs) > 1:
            result["hidden_states"] = tuple(outputs[1:])
        return result


class _ExportWrapper(torch.nn.Module):
    """Positional inputs -> (last_hidden_state, *hidden_states) for ``torch.onnx.export``."""

    def __init__(self, hf_model, input_names: Sequence[str], hidden_states: bool):
        super().__init__()
        self.hf_model = hf_model
        self.input_names = list(input_names)
        self.hidden_states = hidden_states

    def forward(self, *tensors):
        output = self.hf_model(
            **dict(zip(self.input_names, tensors)), return_dict=True, output_hidden_states=self.hidden_states
        )
        if self.hidden_states:
            return (output.last_hidden_state, *output.hidden_states)
        return output.last_hidden_state


def _transformer(model: SentenceTransformer) -> Transformer:
    first = model[0]
    if not isinstance(first, Transformer) or not hasattr(first, "model"):
        raise ModelLoadError(
            f"backends other than torch need a model whose first module is a sentence-transformers "
            f"Transformer (got {type(first).__name__})"
        )
    return first


def _features(model: SentenceTransformer, texts: list[str]) -> dict:
    return model.preprocess(texts) if hasattr(model, "preprocess") else model.tokenize(texts)


EXPORT_FORMAT = 2  # 2: written by sentlab.cache_folder (the files' sizes in export.json)


def _complete(folder: Path) -> dict | None:
    """The export's metadata if ``folder`` holds a complete export (its files the sizes export.json
    gives), else None."""
    return read_record(folder, {"export_format": EXPORT_FORMAT}, EXPORT_META)


def _build_atomically(folder: Path, write: Callable[[Path], dict]) -> dict:
    """The export in ``folder``, built by ``write(partial)`` as every cached folder is
    (:func:`sentlab.cache_folder.cached_folder`: under its lock, record last, renamed into place) when
    it is not complete; the cache is evicted to its cap afterwards."""
    from sentlab.cache import evict_cache

    def built(partial: Path) -> dict:
        return {**write(partial), "export_format": EXPORT_FORMAT}

    root = folder.parent.parent.parent  # ROOT/exports/<fingerprint>/<setting>
    return cached_folder(
        folder, {"export_format": EXPORT_FORMAT}, built, EXPORT_META, after_build=lambda f: evict_cache(root, keep=[f])
    )


def _export_onnx(model: SentenceTransformer, folder: Path) -> dict:
    transformer = _transformer(model)
    hf_model = transformer.model
    sample = _features(model, ["a short one", "a somewhat longer sentence for the export"])
    names = [name for name in MODEL_INPUTS if name in sample]
    hidden = bool(getattr(hf_model.config, "output_hidden_states", False))
    device = next(hf_model.parameters()).device
    args = tuple(sample[n].to(device) for n in names)
    outputs = ["last_hidden_state"]
    if hidden:
        outputs += [f"hidden_state_{i}" for i in range(hf_model.config.num_hidden_layers + 1)]
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, *outputs]}

    def write(tmp: Path) -> dict:
        was_training = hf_model.training
        hf_model.eval()
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # tracer / deprecation chatter of the TorchScript exporter
                torch.onnx.export(
                    _ExportWrapper(hf_model, names, hidden),
                    args,
                    str(tmp / "model.onnx"),
                    input_names=names,
                    output_names=outputs,
                    dynamic_axes=axes,
                    opset_version=OPSET,
                    dynamo=False,
                )
        finally:
            hf_model.train(was_training)
        return {
            "backend": "onnx",
            "precision": "fp32",
            "inputs": names,
            "outputs": outputs,
            "opset": OPSET,
            "torch": torch.__version__,
        }

    return _build_atomically(folder, write)


def calibration_sentences(root: str | Path | None = None) -> list[str]:
    """int8-static's calibration: :data:`CALIBRATION_SENTENCES` lines of the data folder's Wikipedia
    sentences (``root``, else ``$SENTLAB_DATA``: ``wikipedia/wiki_sentences.txt``), drawn with seed 0;
    a one-line error without that file."""
    from sentlab.data.tables import sentence_table
    from sentlab.paths import data_dir
    from sentlab.quantize import calibration_rows

    path = data_dir(root) / "wikipedia" / "wiki_sentences.txt"
    if not path.is_file():
        raise ModelLoadError(
            f"int8-static calibrates on {path}, which is not there (the data folder: --data-dir or data.data_dir, "
            "else $SENTLAB_DATA; sentlab data download wikipedia)"
        )
    table = sentence_table(path)
    return table.select(calibration_rows(len(table), size=CALIBRATION_SENTENCES))["sentence"]


def calibration_digest(sentences: list[str]) -> str:
    """sha256 of int8-static's recipe and calibration sentences: what names its export and fingerprint."""
    import nncf

    return hashlib.sha256(
        "\n".join([STATIC_RECIPE, f"nncf {nncf.__version__}", *sentences]).encode("utf-8")
    ).hexdigest()


def _static_int8(model: SentenceTransformer, ov_model, names: list[str], sentences: list[str]):
    """``ov_model`` with weights and activations quantized to int8 by NNCF, calibrated on ``sentences``."""
    import nncf
    from nncf.common.logging import nncf_logger

    feeds = []
    for begin in range(0, len(sentences), 16):
        features = _features(model, sentences[begin : begin + 16])
        feeds.append({n: features[n].cpu().numpy() for n in names})
    nncf_logger.setLevel(logging.WARNING)
    with contextlib.redirect_stdout(sys.stderr):  # its progress bars: never on stdout (JSON there)
        return nncf.quantize(
            ov_model, nncf.Dataset(feeds), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(feeds)
        )


def export(
    model: SentenceTransformer,
    backend: str,
    precision: str,
    fingerprint: str,
    root: Path | None = None,
    calibration: list[str] | None = None,
) -> Path:
    """The folder of ``model``'s export for ``backend`` / ``precision``; built once, then reused.
    ``int8-static`` needs ``calibration`` (the sentences that set its ranges; their sha256 names the folder)."""
    from sentlab.cache import exports_dir

    require_extra(backend)
    if precision == "int8-static" and not calibration:
        raise ValueError("int8-static needs the calibration sentences")
    base = exports_dir(root) / fingerprint[:32]
    onnx_folder = base / "onnx-fp32"
    if not (hold_in_use(onnx_folder) and _complete(onnx_folder) is not None):
        _export_onnx(model, onnx_folder)  # built, or found built, through cached_folder (which marks it)
    mark_used(onnx_folder, EXPORT_META)
    if (backend, precision) == ("onnx", "fp32"):
        return onnx_folder
    folder = base / f"{backend}-{precision}"
    calibrated = None
    if precision == "int8-static":
        calibrated = calibration_digest(calibration)
        folder = base / f"{backend}-{precision}-{calibrated[:16]}"  # other sentences or recipe: another export
    if _complete(folder) is not None and hold_in_use(folder) and _complete(folder) is not None:
        mark_used(folder, EXPORT_META)  # reused: the least recently used export goes first
        return folder
    source = json.loads((onnx_folder / EXPORT_META).read_text("utf-8"))
    if backend == "onnx":

        def write(tmp: Path) -> dict:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            root_logger = logging.getLogger()
            level = root_logger.level
            root_logger.setLevel(logging.ERROR)  # its advice to pre-process logs on the root logger
            try:
                quantize_dynamic(
                    onnx_folder / "model.onnx",
                    tmp / "model.onnx",
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    reduce_range=True,
                )
            finally:
                root_logger.setLevel(level)
            return {
                **source,
                "precision": "int8",
                "quantization": "onnxruntime quantize_dynamic QInt8 per_channel reduce_range",
            }
    else:

        def write(tmp: Path) -> dict:
            import openvino as ov

            ov_model = ov.Core().read_model(str(onnx_folder / "model.onnx"))
            if precision == "int8-static":
                ov_model = _static_int8(model, ov_model, source["inputs"], list(calibration))
            if precision == "int8":
                import nncf
                from nncf.common.logging import nncf_logger

                nncf_logger.setLevel(logging.WARNING)
                with contextlib.redirect_stdout(sys.stderr):  # its tables and bars: never on stdout (JSON there)
                    ov_model = nncf.compress_weights(ov_model, mode=nncf.CompressWeightsMode.INT8_ASYM)
            ov.save_model(ov_model, str(tmp / "model.xml"), compress_to_fp16=False)
            return {
                **source,
                "backend": "openvino",
                "precision": precision,
                "openvino": ov.__version__,
                **({"quantization": "nncf compress_weights INT8_ASYM"} if precision == "int8" else {}),
                **(
                    {
                        "quantization": "nncf quantize, transformer mode",
                        "calibration": {"sentences": len(calibration), "sha256": calibrated},
                    }
                    if precision == "int8-static"
                    else {}
                ),
            }

    _build_atomically(folder, write)
    return folder


def openvino_config(precision: str, threads: int | None = None) -> dict[str, object]:
    """The properties sentlab compiles an OpenVINO model with: the setting's precision, always explicit."""
    config: dict[str, object] = {"INFERENCE_PRECISION_HINT": OPENVINO_PRECISION_HINT[precision]}
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    return config


def check_openvino_precision(compiled, precision: str) -> None:
    """Refuse a compiled model whose inference precision is not the setting's (one line): OpenVINO falls
    back silently, e.g. to f32 when a CPU has no bf16, and a result must not claim what did not run."""
    wanted = OPENVINO_PRECISION_HINT[precision]
    actual = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    names = {"f32": ("f32", "float32"), "bf16": ("bf16", "bfloat16")}[wanted]
    if not any(name in actual.lower() for name in names):
        import openvino as ov

        capabilities = ", ".join(ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
        raise ModelLoadError(
            f"OpenVINO compiled the model in {actual}, not the {wanted} that {precision} needs "
            f"(this CPU's OpenVINO capabilities: {capabilities})"
        )


def _runner(
    folder: Path, backend: str, threads: int | None, precision: str = "fp32"
) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    if backend == "onnx":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3
        # float32 GEMMs stay float32 (this fast-math bf16 path is opt-in, ARM only; said here so it stays off)
        options.add_session_config_entry("mlas.enable_gemm_fastmath_arm64_bfloat16", "0")
        if threads:
            options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        return lambda feeds: session.run(None, feeds)
    import openvino as ov

    compiled = ov.Core().compile_model(str(folder / "model.xml"), "CPU", openvino_config(precision, threads))
    check_openvino_precision(compiled, precision)
    request = compiled.create_infer_request()

    def run(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        results = request.infer(feeds)
        return [np.array(results[output]) for output in compiled.outputs]  # copies: the request reuses buffers

    return run


def accelerate(
    model: SentenceTransformer,
    backend: str = "torch",
    precision: str = "fp32",
    fingerprint: str | None = None,
    root: Path | None = None,
    threads: int | None = None,
    calibration: list[str] | None = None,
) -> SentenceTransformer:
    """``model`` running on ``backend`` in ``precision`` (in place), for inference only.

    The model keeps a ``sentlab_inference`` dict (backend, precision, the fp32 model's fingerprint and
    this setting's fingerprint), read by :func:`sentlab.rank.index.encoder_fingerprint` and the
    embedding cache, so vectors of a quantised model are never taken for the fp32 model's.
    """
    from sentlab.rank.index import encoder_fingerprint

    check_backend(backend, precision, str(model.device))
    if calibration is not None and precision != "int8-static":
        raise ValueError(f"calibration sentences are read by int8-static only, not {backend} {precision}")
    if backend != "torch":
        _transformer(model)  # a model no backend can export (a static one) is refused whatever is installed
        require_extra(backend)  # one line before anything imports the runtime (int8-static's digest: nncf)
    base = fingerprint or encoder_fingerprint(model)
    if precision == "int8-static" and calibration is None:
        calibration = calibration_sentences()
    # int8-static: its ranges are part of the setting (other calibration sentences, other vectors)
    calibrated = ":" + calibration_digest(calibration) if calibration else ""
    setting = base if precision == "fp32" else hashlib.sha256(f"{base}:{precision}{calibrated}".encode()).hexdigest()
    if backend == "torch":
        pin_float32_math(allow_tf32=precision == "tf32")
        if precision in ("fp16", "bf16"):
            model.to(torch.float16 if precision == "fp16" else torch.bfloat16)
    else:
        folder = export(model, backend, precision, base, root, calibration)
        meta = json.loads((folder / EXPORT_META).read_text("utf-8"))
        transformer = _transformer(model)
        transformer.model = ExportedTransformer(
            _runner(folder, backend, threads, precision), transformer.model.config, meta["inputs"]
        )
    model.eval()
    model.sentlab_inference = {
        "backend": backend,
        "precision": precision,
        "fp32_fingerprint": base,
        "fingerprint": setting,
        **({"calibration_sha256": calibrated[1:]} if calibrated else {}),
    }
    return model


def calibration_of(model) -> str | None:
    """The sha256 of an int8-static model's calibration (:func:`calibration_digest`); None otherwise."""
    return (getattr(model, "sentlab_inference", None) or {}).get("calibration_sha256")


def inference_setting(model) -> dict:
    """Backend and precision a model runs with (torch fp32 unless :func:`accelerate` changed it)."""
    info = getattr(model, "sentlab_inference", None)
    if info:
        return {"backend": info["backend"], "precision": info["precision"]}
    # torch's float32 matmuls as this process runs them: TF32 where a run allowed it (train.tf32)
    return {"backend": "torch", "precision": "tf32" if tf32_allowed() else "fp32"}


def tf32_allowed() -> bool:
    """Whether CUDA float32 matmuls run in TF32 in this process (:func:`pin_float32_math`)."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        return matmul.fp32_precision == "tf32"
    return bool(getattr(matmul, "allow_tf32", False))
