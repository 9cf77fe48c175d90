"""Every named benchmark, declared as data: its name (the record it writes,
``benchmarks/records/NAME.json``), its kind, and the command with the settings it runs at.

Two kinds, kept apart as numpy and scipy keep their asv suites apart from one-off studies:

- ``perf``: repeatable performance benchmarks (time, memory, bytes, rate) of one machine; run again on
  another machine or after a change to see what moved (``python -m benchmarks run --kind perf``);
- ``study``: quality studies run once at the settings a page quotes (training, seeds, intervals);
  re-run when what they measure changes.

``python -m benchmarks run NAME`` runs a benchmark at exactly these settings and writes its record; a
record's link to its code is this table, never a match on the command's text. A module runs on its own
too (``python -m benchmarks.perf.encode_int8 --sentences 500``) and prints its JSON without a record.
The GPU check's parts are not run here: they run on the GPU node (``benchmarks/gpu/check.sh PART``) and
``python -m benchmarks import gpu-PART-CARD --from OUT/PART.json`` keeps one as a record.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

KINDS = ("perf", "study")
GPU_PARTS = (
    "install",
    "suite-1",
    "suite-2",
    "speed",
    "presets",
    "claim-a",
    "distill",
)  # benchmarks/gpu/check.py's PARTS


@dataclass(frozen=True)
class Benchmark:
    """One named run: ``command`` (a shell line: one command, or several joined by ``&&``) at its
    declared settings; ``result``: a file the command writes its JSON to (read instead of stdout)."""

    name: str
    kind: str
    command: str
    result: str | None = None
    what: str = ""

    @property
    def argv(self) -> list[str]:
        """What the runner starts: the command, or ``bash -c`` over a line of several."""
        words = shlex.split(self.command)
        return ["bash", "-c", self.command] if "&&" in words else words

    @property
    def modules(self) -> list[str]:
        """The benchmark modules the command runs (``benchmarks.perf.X``)."""
        return re.findall(r"-m (benchmarks\.(?:perf|studies)\.\w+)", self.command)


def _declare(*benchmarks: Benchmark) -> dict[str, Benchmark]:
    found: dict[str, Benchmark] = {}
    for b in benchmarks:
        if b.name in found or b.kind not in KINDS:
            raise ValueError(f"benchmark {b.name!r}: declared twice or of an unknown kind {b.kind!r}")
        found[b.name] = b
    return found


P = "python -m benchmarks.perf."
S = "python -m benchmarks.studies."
B = Benchmark

BENCHMARKS = _declare(
    # --- perf: time, memory, rate, bytes on this machine
    B("cli-startup", "perf", P + "cli_startup --repeats 3", what="sentlab --help and train's first line"),
    B(
        "encode-backends-minilm",
        "perf",
        P + "encode_scale --model minilm --sentences 6000 --chunk-rows 1000"
        " --backends torch onnx openvino --devices cpu cpu,cpu --threads 0 1 --work runs/encode-backends",
    ),
    B("encode-int8-minilm", "perf", P + "encode_int8 --sentences 8000 --small 100 --rounds 3"),
    B(
        "encode-scale-minilm",
        "perf",
        P + "encode_scale --model minilm --sentences 10000 --chunk-rows 1000 --devices cpu cpu,cpu",
    ),
    B("gradient-cache-cpu", "perf", P + "gradient_cache --batches 64 512 --chunks whole 64 16 --steps 1 --warmup 1"),
    B("gradient-cache-plan-16gib", "perf", P + "gradient_cache --plan 16"),
    B("inference-backends-minilm", "perf", P + "inference_backends"),
    B(
        "inference-backends-mpnet",
        "perf",
        P + "inference_backends --model sentence-transformers/all-mpnet-base-v2 --sentences 2000 --titles 2000"
        " --settings torch-fp32 onnx-int8",
        what="all-mpnet-base-v2 as a teacher: how close onnx int8's labels are to torch fp32's, and its rate",
    ),
    B("index-codes-minilm", "perf", P + "index_codes --model minilm --forum mathematica --rounds 3"),
    B("int8-static-minilm", "perf", P + "int8_static --sentences 4000 --calibration 300 --rounds 3"),
    B("mlm-head-shape", "perf", P + "mlm_head_shape"),
    B(
        "rankencoder-inference-minilm",
        "perf",
        P + "rankencoder_inference --model minilm --sizes 1000 10000 30000 --pairs 300",
    ),
    B("rankencoder-overhead-minilm", "perf", P + "rankencoder_overhead --steps 10 --rounds 3"),
    B("rankencoder-scoring", "perf", P + "rankencoder_scoring --sizes 10000,100000"),
    B("rawlm-throughput-bert-vocab", "perf", P + "rawlm_throughput --vocab minilm --steps 15"),
    B("rawlm-throughput-packed", "perf", P + "rawlm_throughput --vocab 8192 --steps 15 --pack --batch 32"),
    B(
        "rawlm-throughput-packed-compiled",
        "perf",
        P + "rawlm_throughput --vocab 8192 --steps 15 --pack --batch 32 --compile --fused",
    ),
    B("rawlm-throughput-sentences", "perf", P + "rawlm_throughput --vocab 8192 --steps 15"),
    B("read-memory-minilm", "perf", P + "read_memory --sizes-mb 50 500 5000 --work /tmp/text-scale"),
    B("rse-step-cost-minilm", "perf", P + "rse_step_cost --batch 64 --steps 5 --memory-batch 512 --mini-batch 64"),
    B(
        "storage-search-minilm",
        "perf",
        P + "storage --models minilm --dims 384 256 128 64 --corpus 50000 --search-only",
    ),
    B("train-throughput", "perf", P + "train_throughput --steps 8 --warmup 3"),
    B(
        "tsdae-step-time-b64",
        "perf",
        P + "tsdae_step_time --model minilm --batch-size 64 --max-seq-length 32 --steps 30",
    ),
    B("tsdae-step-time-b8", "perf", P + "tsdae_step_time --model minilm --batch-size 8 --max-seq-length 32 --steps 30"),
    # --- studies: quality, once, at the settings the pages quote
    B(
        "adapt-minilm-mathematica",
        "study",
        S + "cqadupstack_cards --output runs/adapt-cards"
        " --forums mathematica,webmasters,android && sentlab adapt --text runs/adapt-cards/mathematica/titles.txt"
        " --task-card runs/adapt-cards/mathematica/forum.yaml --task-card runs/adapt-cards/webmasters/forum.yaml"
        " --task-card runs/adapt-cards/android/forum.yaml --steps 500 --seeds 42,43,44"
        " --output runs/adapt-mathematica-3seeds --quiet",
        result="runs/adapt-mathematica-3seeds/report.json",
    ),
    B("adapters-minilm", "study", S + "adapters --seeds 1 2 3"),
    B("backend-precision", "study", S + "backend_precision", what="fp32 per runtime; the backends' tolerance"),
    B(
        "bertflow-stability-minilm",
        "study",
        S + "bertflow_stability --forums webmasters android --steps 300"
        " --variants lr1e-3 init1024lr1e-3 lr1e-4 init1024lr1e-4",
    ),
    B("card-size-minilm", "study", S + "card_size --sizes 50 100 200 400 800 --draws 20"),
    B("cqadupstack-search", "study", S + "cqadupstack_search --dim 384"),
    B(
        "eval-families-minilm",
        "study",
        S + "eval_families --model minilm --families useb transfer evalrank sts ranking --output runs/eval-minilm",
    ),
    B("evalrank-protocols-minilm", "study", S + "evalrank_protocols --model minilm"),
    B("half-precision-losses-cpu", "study", S + "half_precision_losses"),
    B("hard-negatives-minilm", "study", S + "hard_negatives --output runs/records/hard-negatives --seeds 1 2 3"),
    B("learning-spread", "study", S + "learning_spread", what="the margin of tests/training/test_learning.py"),
    B(
        "retrieval-minilm-cqadupstack",
        "study",
        S
        + "retrieval_cqadupstack --output runs/retrieval-cqadupstack --pairs 2000 --mine-titles 20000 --dev-others 2000",
    ),
    B("mine-guard-minilm", "study", S + "mine_guard"),
    B(
        "distill-mpnet-minilm",
        "study",
        S + "distill_mpnet --output runs/distill-mpnet-4k --wikipedia 1000 --domain 3000 --dev-others 2000",
    ),
    B(
        "distill-mse-parity",
        "study",
        S + "distill_mpnet --parity-only --output runs/distill-parity --wikipedia 1000 --domain 3000 --dev-others 2000",
    ),
    B("static-student-minilm", "study", S + "static_student --output runs/static-student"),
    B("mpnet-paths", "study", S + "mpnet_paths --output runs/mpnet-paths"),
    B("static-potion-minilm", "study", S + "static_potion --teacher sentence-transformers/all-MiniLM-L6-v2"),
    B("static-potion-mpnet", "study", S + "static_potion --teacher sentence-transformers/all-mpnet-base-v2"),
    B(
        "minilm-evalrank",
        "study",
        "sentlab eval --model minilm --tasks evalrank --quiet --output runs/records/minilm-evalrank.json",
        result="runs/records/minilm-evalrank.json",
    ),
    B(
        "minilm-sts",
        "study",
        "sentlab eval --model minilm --tasks sts --quiet --output runs/records/minilm-sts.json",
        result="runs/records/minilm-sts.json",
    ),
    B("papers-in-miniature", "study", S + "papers_in_miniature --output runs/miniature --seeds 1 2 3"),
    B(
        "rankcse-distillation",
        "study",
        S + "rankcse_distillation --set train.learning_rate=2e-4 --runs runs/rankcse-distillation-lr2e-4",
    ),
    B("rankencoder-eq7-minilm", "study", S + "rankencoder_sts --model minilm --sizes 10000 --lambdas 0.1,0.5"),
    B(
        "rankencoder-minilm-cpu",
        "study",
        "sentlab train rankencoder-minilm-cpu --set train.output_dir=runs/records/rankencoder --quiet",
    ),
    B("rankencoder-minilm-cpu-step30", "study", "sentlab train rankencoder-minilm-cpu"),
    B(
        "rawlm-cpu-stage2",
        "study",
        "sentlab train rawlm-cpu --set model.random_init.dropout=0"
        " --set train.max_steps=7500 --set train.output_dir=runs/rawlm-cpu-d0-7500 && sentlab train rawlm-cpu-stage2",
    ),
    B(
        "rawlm-simcse",
        "study",
        S + "rawlm_simcse --output runs/rawlm-d0-stage2-simcse --raw-lm runs/rawlm-cpu-d0-stage2/model --seeds 1 2 3",
    ),
    B("repeatability-minilm-cpu", "study", S + "repeatability --steps 30"),
    B(
        "rse-all-above-minilm-cpu",
        "study",
        "sentlab train rse-all-above-minilm-cpu --set eval.dev_limit=500"
        " --set train.output_dir=runs/records/rse-all-above --quiet",
    ),
    B(
        "rse-evaluations-minilm",
        "study",
        "sentlab train rse-minilm-cpu --set eval.dev_limit=500"
        " --set train.start_is_candidate=false --set train.output_dir=runs/records/rse-trained --quiet"
        " && sentlab train rse-all-above-minilm-cpu --set eval.dev_limit=500 --set train.start_is_candidate=false"
        " --set train.output_dir=runs/records/all-above-trained --quiet && " + S + "rse_evaluations"
        " --rse runs/records/rse-trained/model --all-above runs/records/all-above-trained/model"
        " --output runs/records/rse-eval",
    ),
    B(
        "rse-minilm-cpu",
        "study",
        "sentlab train rse-minilm-cpu --set eval.dev_limit=500 --set train.output_dir=runs/records/rse --quiet",
    ),
    B("sick-protocols-minilm", "study", S + "sick_protocols --model minilm"),
    B(
        "simcse-unsup-minilm-cpu",
        "study",
        "sentlab train simcse-unsup-minilm-cpu --set train.output_dir=runs/records/simcse --quiet",
    ),
    B(
        "supervised-grid-minilm",
        "study",
        S + "supervised_losses --trainer none --output runs/records/supervised-losses"
        " --settings cosine-mse:2e-5:1 cosent:2e-5:1 angle:2e-5:1 cosine-mse:5e-5:1 cosent:5e-5:1 angle:5e-5:1"
        " cosine-mse:2e-5:2",
    ),
    B(
        "supervised-losses-minilm",
        "study",
        S + "supervised_losses --seeds 1 2 3 --output runs/records/supervised-losses",
    ),
    B(
        "storage-minilm",
        "study",
        P + "storage --models minilm --dims 384 256 128 64 --train-seeds 1 2 3 --corpus 50000",
    ),
    B("task-cards-builtin", "study", S + "task_cards_builtin --output runs/cards --forum mathematica"),
    B(
        "tsdae-corpus-size-minilm",
        "study",
        "sentlab corpus-size tsdae-minilm-cpu --sizes 128,2048 --epochs 1"
        " --task twitterpara --output runs/records/size --quiet",
    ),
    B("tsdae-noise-minilm", "study", S + "tsdae_noise_ablation --output runs/records/noise --steps 300"),
    B("useb-reference-minilm", "study", S + "useb_reference --model minilm --toolkit-path /tmp/useb_pkg"),
)


def gpu_part(name: str) -> str | None:
    """The GPU check part a record name ``gpu-PART-CARD`` keeps (``gpu-speed-h100``), or None."""
    for part in GPU_PARTS:
        if re.fullmatch(rf"gpu-{part}-[a-z0-9]+", name):
            return part
    return None


def get(name: str) -> Benchmark:
    """The benchmark ``name``; an unknown name is one line with the closest names."""
    import difflib

    if name not in BENCHMARKS:
        close = difflib.get_close_matches(name, BENCHMARKS, n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else " (python -m benchmarks list)"
        raise SystemExit(f"benchmarks: no benchmark {name!r}{hint}")
    return BENCHMARKS[name]
