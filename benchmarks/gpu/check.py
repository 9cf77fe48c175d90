"""sentlab's check on a GPU node without network, one part at a time (``benchmarks/gpu/check.sh PART``).

Feeds: records gpu-install-h100; pages docs/guides/gpu.md, docs/results.md.

Each part writes one JSON file, ``$OUT/<part>.json`` (``$OUT``, else ``--out``, else
``runs/gpu-check``): the part, its command line, the date, the machine and commits
(``benchmarks/record.py``'s blocks; ``python -m benchmarks import`` keeps the file as a record), its seconds,
``status`` (``ok`` or ``failed`` with the first line of the error) and what it measured. The file is
written after each measurement and no command a part starts runs past its nine minutes, so a part that
fails or is cut short keeps what it measured.

* ``install``: sentlab and the bundle's wheels installed offline (``pip --no-index --no-deps``) into
  the image's Python, then sentlab's version, torch, CUDA and the card read back, with every module
  sentlab imports that the environment lacks.
* ``suite-1``, ``suite-2``: the test suite in two halves (its files split by size; on an H100 the
  whole suite did not finish in one part's nine minutes), data-dependent tests skipped (the bundle's
  data is for the other parts), with the counts, each failure's first line and the skips by reason.
* ``speed``: the card's matmul rate in fp32, TF32 and bf16; SimCSE's step on a random-init BERT-base
  five ways (``benchmarks/perf/train_throughput.py``); the RSE GPU preset's step with
  ``train.mini_batch_size: auto`` against the whole batch and chunks of 64 (synthetic triples);
  SimCSE's peak memory and step against the chunk at batch 64 and 512 (``benchmarks/perf/gradient_cache.py``); the
  raw LM's useful tokens a second, packed, bf16, compiled (``benchmarks/perf/rawlm_throughput.py``).
* ``presets``: every GPU preset whose start is a BERT-base architecture and whose data the bundle
  carries (Wikipedia sentences), for a few dozen steps on random weights of that architecture in its
  own precision: seconds, the losses (finite, or the part fails), the precision and runtime read
  back; the others are listed with what they need.
* ``claim-a``: sentlab's raw LM pre-trained for as long as the part allows (kept in the ignored
  ``runs/gpu-check-work`` for the next call); called again, SimCSE from it over three seeds, scored on
  STS against the raw LM (``benchmarks/studies/rawlm_simcse.py``).

``--tiny`` runs every part on whatever device there is with tiny sizes (CI runs it on a CPU), so the
check cannot rot between GPUs; ``--bundle`` is the folder ``scripts/gpu_bundle.py`` built (``.gpu``).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import lzma
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a file (check.sh): the checkout's benchmarks package
sys.path.insert(0, str(ROOT / "src"))
from benchmarks import record  # noqa: E402 - the machine, the commit and a benchmark's printed JSON, read one way
from benchmarks.record import last_json  # noqa: E402
from sentlab.cache import file_sha256  # noqa: E402
from sentlab.paths import write_text_atomic  # noqa: E402 - the one atomic writer

PARTS = ("install", "suite-1", "suite-2", "speed", "presets", "claim-a", "distill")
SUITE_SHARDS = 2
PART_SECONDS = 540  # each part stays under nine minutes (a job step is ten)
DEADLINE = float("inf")  # the running part's end (time.monotonic()): no child command runs past it


def provenance(bundle: Path) -> dict:
    """The machine (``benchmarks/record.py``'s block: CPU, memory, GPU, torch, sentlab) and the
    commits: the checkout's (the benchmark scripts that ran; None in a copy without git) and the
    bundle's (sentlab's wheel that ran, with whether its tree differed from that commit)."""
    found = {"checkout": record.commit()}
    if (bundle / "bundle.json").is_file():
        built = json.loads((bundle / "bundle.json").read_text("utf-8"))
        found["bundle"] = {"sha": built.get("commit"), "dirty": built.get("dirty")}
    return {"machine": record.machine(), "commit": found}


def checkout_differences(bundle: Path, root: Path = ROOT) -> list[str]:
    """The files of the checkout the bundle was built beside (``bundle.json``'s ``checkout``: each
    tracked file's sha256) that this copy lacks or holds otherwise; a copy without ``.git`` (the
    documented tar of ``git ls-files``) is checked by content, so it needs no commit to compare."""
    built = json.loads((bundle / "bundle.json").read_text("utf-8")).get("checkout")
    if not built:
        return ["bundle.json records no checkout (rebuilt bundles do)"]
    differ = []
    for name, sha256 in sorted(built.items()):
        path = root / name
        if not path.is_file():
            differ.append(f"{name} missing")
        elif file_sha256(path) != sha256:
            differ.append(f"{name} differs")
    return differ


def same_code(bundle: Path) -> None:
    """On a node: refuse a bundle built beside another checkout than this one (its wheel is the
    sentlab that runs, the checkout's scripts drive it): file by file, with or without git."""
    if not (bundle / "bundle.json").is_file():
        raise RuntimeError(f"{bundle}: no bundle.json (build it with python scripts/gpu_bundle.py --dest .gpu)")
    differ = checkout_differences(bundle)
    if differ:
        raise RuntimeError(
            f"the bundle was built beside another checkout: {len(differ)} file(s), e.g. {differ[0]}; rebuild it "
            "(python scripts/gpu_bundle.py --dest .gpu) and copy both again"
        )


def run(command: list[str], timeout: float, env: dict | None = None, cwd: Path = ROOT) -> dict:
    """A child command: its exit code, seconds, JSON on stdout when it printed one, and the tail of
    its output when it failed. It gets ``timeout`` seconds, or what is left of the part's time."""
    timeout = max(1.0, min(timeout, DEADLINE - time.monotonic()))
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd
        )
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        code, out, err = 124, expired.stdout or "", f"timed out after {timeout:g} s"
        out = out.decode() if isinstance(out, bytes) else out
    record: dict = {"command": shlex.join(command), "exit_code": code, "seconds": round(time.perf_counter() - start, 1)}
    record["result"] = last_json(out)  # the JSON a benchmark prints last, whatever follows it (record.py's reader)
    if code:
        record["tail"] = (out + "\n" + (err if isinstance(err, str) else "")).strip().splitlines()[-12:]
    return record


# --tiny: how much of each data file the tiny copy keeps (every family scored on a few items a task)
TINY_PAIRS, TINY_LINES, TINY_QUERIES, TINY_TITLES = 40, 400, 4, 40
TINY_FOLDERS = ("senteval/downstream/STS", "senteval/downstream/SICK", "useb/data-eval/twitterpara")


def first_lines(source: Path, target: Path, count: int, header: bool = False) -> None:
    """The first ``count`` lines of ``source`` (after its header line when ``header``), bytes as they
    are (line endings kept); line-aligned files (STS inputs and gold scores) stay aligned."""
    with source.open("rb") as inp:
        kept = [line for _, line in zip(range(count + header), inp)]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(kept))


def tiny_cqadupstack(source: Path, target: Path) -> None:
    """USEB's CQADupStack archive cut to a few queries a forum, their relevant titles and a few more."""
    import gzip

    with gzip.open(source, "rt", encoding="utf-8") as inp:
        forums = json.load(inp)
    small = {}
    for forum, data in forums.items():
        queries = dict(list(data["queries"].items())[:TINY_QUERIES])
        relevant = {q: data["relevant_docs"][q] for q in queries}
        keep = {d for docs in relevant.values() for d in docs} | set(list(data["corpus"])[:TINY_TITLES])
        corpus = {d: t for d, t in data["corpus"].items() if d in keep}
        small[forum] = {"queries": queries, "corpus": corpus, "relevant_docs": relevant}
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt", encoding="utf-8") as out:
        json.dump(small, out)


def tiny_data(source: Path, work: Path) -> Path:
    """``--tiny``'s data: the first lines of every STS, SICK and TwitterPara file, a few CQADupStack
    queries a forum and the first Wikipedia lines of ``source`` (``$SENTLAB_DATA``), copied once into
    the work folder, so that no tiny part touches a whole corpus or a whole task."""
    target = work / "tiny-data"
    wiki, cqa = "wikipedia/wiki_sentences.txt", "useb/data-eval/cqadupstack"
    sources = [p for folder in TINY_FOLDERS for p in sorted((source / folder).rglob("*")) if p.is_file()]
    archives = sorted((source / cqa).glob("cqadupstack_titles*.json.gz"))
    made_from = {str(p.relative_to(source)): file_sha256(p) for p in [*sources, source / wiki, *archives]}
    done = target / ".complete"
    if done.is_file() and json.loads(done.read_text("utf-8")) == made_from:  # copied from these bytes
        return target
    shutil.rmtree(target, ignore_errors=True)
    for path in sources:
        first_lines(path, target / path.relative_to(source), TINY_PAIRS, header=path.parent.name == "SICK")
    first_lines(source / wiki, target / wiki, TINY_LINES)
    for archive in archives:
        tiny_cqadupstack(archive, target / cqa / archive.name)
    write_text_atomic(done, json.dumps(made_from))
    return target


def data_folder(bundle: Path, tiny: bool, work: Path) -> Path:
    """The bundle's data, unpacked once into the work folder (not into the bundle, which is carried);
    in ``--tiny``, a tiny copy of it, or of ``$SENTLAB_DATA`` without a bundle (``tiny_data``)."""
    packed = bundle / "data"
    if tiny and not packed.is_dir():
        return tiny_data(Path(os.environ.get("SENTLAB_DATA", ROOT.parent / "shared" / "data")), work)
    if not packed.is_dir():
        raise RuntimeError(f"{packed}: no bundle data (build it with python scripts/gpu_bundle.py)")
    target = work / "data"
    done = target / ".complete"
    if not done.is_file():
        shutil.rmtree(target, ignore_errors=True)
        (target / "wikipedia").mkdir(parents=True)
        with tarfile.open(packed / "sts.tar.xz") as archive:
            archive.extractall(target, filter="data")
        with lzma.open(packed / "wiki_sentences.txt.xz", "rb") as inp:
            (target / "wikipedia" / "wiki_sentences.txt").write_bytes(inp.read())
        done.touch()
    return tiny_data(target, work) if tiny else target


# -- the parts ------------------------------------------------------------------------------------------


def install_bundle(args, record: dict) -> None:
    found = sorted(str(p) for p in (args.bundle / "wheels").glob("*.whl"))
    command = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", *found]
    record["pip"] = run(command, timeout=180)
    if record["pip"]["exit_code"]:
        raise RuntimeError("pip install from the bundle failed: " + " ".join(record["pip"].get("tail", [])[-1:]))
    checked = run([sys.executable, "-m", "pip", "check"], timeout=60)
    record["pip_check"] = checked.get("tail", [])
    if checked["exit_code"]:
        raise RuntimeError("pip check failed: " + " ".join(checked.get("tail", [])[:1]))


def ensure_installed(args, record: dict) -> None:
    """A machine other than the one ``install`` ran on (a node is held for a while, then a fresh one
    starts): install the bundle again first, when sentlab or its wheels do not import."""
    probe = [sys.executable, "-c", "import sentlab, transformers, sentence_transformers, pytest"]
    if run(probe, timeout=120, cwd=args.out)["exit_code"]:
        install_bundle(args, record)


def part_install(args, record: dict) -> None:
    if not args.tiny:
        install_bundle(args, record)
    code = (
        "import importlib, json, pkgutil, sentlab\n"
        "missing = {}\n"
        "for m in pkgutil.walk_packages(sentlab.__path__, 'sentlab.'):\n"
        "    if m.name.endswith('__main__'):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ImportError as err:\n"
        "        missing[m.name] = str(err).splitlines()[0]\n"
        "print(json.dumps({'sentlab': sentlab.__version__, 'from': sentlab.__file__, 'modules_missing': missing}))"
    )
    readback = run([sys.executable, "-c", code], timeout=150, cwd=args.out)
    record["readback"] = readback["result"]
    if readback["exit_code"] or readback["result"] is None:
        raise RuntimeError("sentlab does not import: " + " ".join(readback.get("tail", [])[-1:]))
    if readback["result"]["modules_missing"]:
        raise RuntimeError(f"{len(readback['result']['modules_missing'])} sentlab module(s) do not import")


def suite_shard(index: int, shards: int = SUITE_SHARDS, tiny: bool = False) -> list[str]:
    """The test files of one part of the suite (``index`` from 1): every ``tests/**/test_*.py``, each
    given in turn to the part with the fewest bytes so far (size stands in for time); --tiny: two
    device-bound files, one a part."""
    if tiny:
        files = ["tests/losses/test_static_step.py", "tests/test_device_neutral.py"]
    else:
        files = sorted(
            (str(f.relative_to(ROOT)) for f in (ROOT / "tests").rglob("test_*.py")),
            key=lambda f: (-(ROOT / f).stat().st_size, f),
        )
    parts: list[list[str]] = [[] for _ in range(shards)]
    sizes = [0] * shards
    for name in files:
        lightest = sizes.index(min(sizes))
        parts[lightest].append(name)
        sizes[lightest] += (ROOT / name).stat().st_size
    return sorted(parts[index - 1])


def part_suite(args, record: dict, index: int) -> None:
    report = args.work / f"suite-{index}.xml"
    report.unlink(missing_ok=True)  # a report of an earlier run is never read as this one's
    tests = suite_shard(index, tiny=args.tiny)
    record["files"] = len(tests)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *tests]
    # the data-dependent tests skip (counted with their reason): the bundle's data is the other parts'
    env = {"HF_HUB_OFFLINE": "1", "SENTLAB_DATA": str(args.out / "no-data")}
    record["pytest"] = run(command, timeout=PART_SECONDS - 20, env=env)
    if not report.is_file():
        raise RuntimeError("pytest wrote no report: " + " ".join(record["pytest"].get("tail", [])[-1:]))
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures, skips = [], {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if problem is not None:
            counts["failed" if problem.tag == "failure" else "errors"] += 1
            failures.append({"test": name, "first_line": (problem.get("message") or "").splitlines()[:1]})
        elif skipped is not None:
            counts["skipped"] += 1
            reason = ((skipped.get("message") or "").splitlines() or [""])[0][:160]
            skips[reason] = skips.get(reason, 0) + 1
        else:
            counts["passed"] += 1
    record.update(counts=counts, failures=failures, skips_by_reason=skips)
    if counts["failed"] or counts["errors"] or record["pytest"]["exit_code"] not in (0, 1):
        raise RuntimeError(f"{counts['failed']} failed, {counts['errors']} errors")


def matmul_rates(tiny: bool) -> dict:
    import torch

    from sentlab.encoders.backends import pin_float32_math

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    size = 256 if tiny or device.type == "cpu" else 8192
    rates = {}
    for name, dtype, tf32 in (
        ("fp32", torch.float32, False),
        ("tf32", torch.float32, True),
        ("bf16", torch.bfloat16, False),
    ):
        if name == "tf32" and device.type != "cuda":
            continue
        pin_float32_math(allow_tf32=tf32)  # fp32 is IEEE fp32; TF32 only where asked
        a = torch.randn(size, size, device=device, dtype=dtype)
        b = torch.randn(size, size, device=device, dtype=dtype)
        for _ in range(3):
            a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()
        repeats, start = 10, time.perf_counter()
        for _ in range(repeats):
            a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()
        rates[f"{name}_tflops"] = round(2 * size**3 * repeats / (time.perf_counter() - start) / 1e12, 3)
    pin_float32_math()
    return {"device": str(device), "size": size, **rates}


def random_bert(folder: Path, data: Path, tiny: bool) -> Path:
    """A random-weight BERT-base (tiny: 2 x 64) with a WordPiece vocabulary trained on the bundle's
    Wikipedia lines: the architecture of the GPU presets' start, with no download."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    if (folder / "config.json").is_file():
        from transformers import AutoTokenizer

        if len(AutoTokenizer.from_pretrained(str(folder))) > 5:  # an earlier call's, with its vocabulary
            return folder
        shutil.rmtree(folder)  # an earlier version's empty tokenizer (every word [UNK]): built again
    folder.mkdir(parents=True, exist_ok=True)
    lines = (data / "wikipedia" / "wiki_sentences.txt").read_text("utf-8").splitlines()[:20000]
    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(lines, vocab_size=2000 if tiny else 30522)
    trainer.save_model(str(folder))
    # the vocabulary itself (transformers 5 builds an empty one from vocab_file: every word [UNK])
    words = (folder / "vocab.txt").read_text("utf-8").splitlines()
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    if tokenizer.tokenize("the")[0] == "[UNK]" or len(tokenizer) != len(words):
        raise RuntimeError(f"the random BERT's tokenizer lost its vocabulary ({len(tokenizer)} of {len(words)})")
    tokenizer.save_pretrained(folder)
    shape = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128) if tiny else {}
    # BERT-base's own vocabulary size (the embedding matrix is a fifth of its weights), whatever was learnt
    vocab = trainer.get_vocab_size() if tiny else max(30522, trainer.get_vocab_size())
    BertModel(BertConfig(vocab_size=vocab, **shape)).save_pretrained(folder)
    return folder


def part_speed(args, record: dict) -> None:
    record["matmul"] = matmul_rates(args.tiny)
    args.save()
    env = {"HF_HUB_OFFLINE": "1", "SENTLAB_DATA": str(args.data)}
    model = random_bert(args.work / "random-bert-base", args.data, args.tiny)
    steps = ["--steps", "3", "--warmup", "1"] if args.tiny else ["--steps", "30", "--warmup", "10"]
    precision = ["--precision", "fp32" if args.tiny else "bf16"]
    record["simcse_step"] = run(
        [sys.executable, "-m", "benchmarks.perf.train_throughput", "--model", str(model), *steps, *precision],
        timeout=PART_SECONDS / 2,
        env=env,
    )
    args.save()
    rawlm = ["--vocab", "8192", "--pack", "--steps", "3" if args.tiny else "40", "--batch", "8" if args.tiny else "256"]
    if not args.tiny:
        rawlm += ["--layers", "8", "--hidden", "512", "--heads", "8", "--max-length", "128", "--precision", "bf16"]
        rawlm += ["--compile", "--fused", "--sentences", "200000"]
    else:
        rawlm += ["--layers", "2", "--hidden", "64", "--heads", "2", "--sentences", "2000"]
    record["rawlm_tokens"] = run(
        [sys.executable, "-m", "benchmarks.perf.rawlm_throughput", *rawlm], timeout=PART_SECONDS / 3, env=env
    )
    args.save()
    failed = [
        name for name in ("simcse_step", "rawlm_tokens") if record[name]["exit_code"] or not record[name]["result"]
    ]
    try:
        rse_step(args, record, model)
    except RuntimeError as err:
        failed.append(str(err))
    # SimCSE's peak memory and step against the Gradient Cache chunk, at batch 64 and 512
    sizes = ["--batches", "8", "--chunks", "whole", "4", "--steps", "1", "--warmup", "0"] if args.tiny else []
    record["gradient_cache"] = run(
        [sys.executable, "-m", "benchmarks.perf.gradient_cache", "--model", str(model), *sizes],
        timeout=PART_SECONDS / 5,
        env=env,
    )
    args.save()
    if record["gradient_cache"]["exit_code"] or not record["gradient_cache"]["result"]:
        failed.append("gradient_cache")
    record["targets"] = speed_targets(record)
    if failed:
        raise RuntimeError(f"{'; '.join(failed)} failed")


def speed_targets(record: dict) -> dict:
    """The issue's speed targets read from what the part measured: each value, its bound and whether
    it was met (None where the measurement is missing). They are set for a card; on a CPU they are
    computed all the same and mean little."""

    def get(*keys):
        value = record
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    found = {
        "simcse_step_sentlab_compiled_over_plain_compiled": (
            get("simcse_step", "result", "ratio_to_plain_compiled", "sentlab_compiled"),
            "<=",
            1.10,
        ),
        "rse_auto_over_whole_batch": (get("rse_step", "auto_over_whole_batch"), "<=", 1.2),
        "rawlm_useful_share_of_bf16_peak": (get("rawlm_tokens", "result", "share_of_peak"), ">=", 0.35),
    }
    return {
        name: {
            "value": value,
            "bound": f"{op} {bound}",
            "met": None if value is None else (value <= bound if op == "<=" else value >= bound),
        }
        for name, (value, op, bound) in found.items()
    }


# the GPU presets this part can run: their start is BERT-base and their data Wikipedia sentences
RUNNABLE = {
    "simcse-unsup-bert-base": "",
    "mlm-bert-base": "",
    "tsdae-bert-base": "",
    "ct-bert-base": "",
    "bertflow-bert-base": "",
    "rawlm-gpu": "",
}


def bert_shape(tiny: bool) -> dict:
    """``model.random_init`` of BERT-base (tiny: 2 x 64)."""
    if tiny:
        return {"layers": 2, "hidden_size": 64, "heads": 2, "intermediate_size": 128, "vocab_size": 500}
    return {"layers": 12, "hidden_size": 768, "heads": 12, "intermediate_size": 3072, "vocab_size": 30522}


def train_preset(args, preset: str, out: Path, sets: list[str], timeout: float, start: Path | None = None) -> dict:
    """``sentlab train PRESET`` on random weights of BERT-base (``start``, else built by the run) for a
    few steps, without evaluation: its exit code, seconds, losses, median step time
    (``seconds_per_step`` of the log after the first two steps), and the precision and runtime it read
    back."""
    shutil.rmtree(out, ignore_errors=True)
    sets = [f"train.output_dir={out}", "eval.dev_task=none", "eval.final_tasks=[]", *sets]
    sets += ["train.progress_bar=false", "train.logging_steps=1"]
    if start is not None:
        sets += [f"model.name={start}"]
    elif preset != "rawlm-gpu":
        sets += ["model.name=''", *(f"model.random_init.{k}={v}" for k, v in bert_shape(args.tiny).items())]
        sets += ["model.random_init.tokenizer=train", "model.random_init.max_positions=512"]
    if args.tiny:
        sets += ["train.mixed_precision=no", "train.compile=false", "train.batch_size=4"]
    command = [sys.executable, "-m", "sentlab.cli", "train", preset, "--quiet"]
    for item in sets:
        command += ["--set", item]
    done = run(command, timeout=timeout, env={"HF_HUB_OFFLINE": "1", "SENTLAB_DATA": str(args.data)})
    result = {"exit_code": done["exit_code"], "seconds": done["seconds"]}
    if done["exit_code"]:
        result["tail"] = done.get("tail", [])
    metrics = out / "metrics.jsonl"
    if metrics.is_file():
        records = [json.loads(line) for line in metrics.read_text().splitlines()]
        result["losses"] = [r["loss"] for r in records if r.get("loss") is not None]
        steps = [r["seconds_per_step"] for r in records if "seconds_per_step" in r and r.get("step", 0) > 2]
        result["median_step_s"] = statistics.median(steps) if steps else None
    for name in ("precision.json", "runtime.json"):
        if (out / name).is_file():
            result[name.split(".")[0]] = json.loads((out / name).read_text())
    return result


def failed_runs(results: dict) -> list[str]:
    """The runs of ``results`` that did not finish with finite losses and a precision read back."""
    return [
        name
        for name, r in results.items()
        if "exit_code" in r
        and (
            r["exit_code"]
            or not r.get("losses")
            or not all(math.isfinite(v) for v in r["losses"])
            or "precision" not in r
        )
    ]


def rse_step(args, record: dict, model: Path) -> None:
    """The RSE GPU preset's step with ``train.mini_batch_size: auto`` against the whole batch in one
    piece (no Gradient Cache) and against chunks of 64 rows (Gradient Cache's own cost), on random
    weights of BERT-base (``model``) and synthetic entailment triples of the bundle's Wikipedia lines
    (the step's cost does not depend on what the sentences say; the lines are reused when too few)."""
    lines = (args.data / "wikipedia" / "wiki_sentences.txt").read_text("utf-8").splitlines()
    steps = 4 if args.tiny else 20
    batch = 4 if args.tiny else 512  # train_preset's tiny batch; the preset's own on a card
    triples = args.work / "rse-synthetic.jsonl"
    with triples.open("w", encoding="utf-8") as f:
        for i in range(batch * (steps + 2)):
            premise, entailed, contradicted = (lines[(3 * i + k) % len(lines)] for k in range(3))
            f.write(json.dumps({"sentence1": premise, "sentence2": entailed, "gold_label": "entailment"}) + "\n")
            f.write(json.dumps({"sentence1": premise, "sentence2": contradicted, "gold_label": "contradiction"}) + "\n")
    sets = [
        f"rse.sources=[{{relation: entailment, path: {triples}, format: nli-jsonl}}]",
        "rse.weights={entailment: 1.0}",
        f"train.max_steps={steps}",
    ]
    runs = record["rse_step"] = {}
    for name, size in (("auto", "auto"), ("whole_batch", "null"), ("chunks_of_64", "64")):
        runs[name] = train_preset(
            args,
            "rse-sts-bert-base",
            args.work / "rse-step" / name,
            [*sets, f"train.mini_batch_size={size}"],
            timeout=PART_SECONDS / 6,
            start=model,
        )
        runs[name]["chunking"] = runs[name].get("runtime", {}).get("chunking")
        args.save()
    auto, whole = runs["auto"].get("median_step_s"), runs["whole_batch"].get("median_step_s")
    runs["auto_over_whole_batch"] = round(auto / whole, 3) if auto and whole else None
    bad = failed_runs({k: v for k, v in runs.items() if isinstance(v, dict)})
    bad += [k for k, v in runs.items() if isinstance(v, dict) and "exit_code" in v and not v.get("median_step_s")]
    if bad:
        raise RuntimeError(f"rse step failed or logged no step time: {', '.join(sorted(set(bad)))}")


def part_presets(args, record: dict) -> None:
    from sentlab.presets import list_presets

    gpu = [p for p in list_presets() if p.hardware == "gpu"]
    record["presets"] = {}
    wiki = args.data / "wikipedia" / "wiki_sentences.txt"
    steps = 2 if args.tiny else 30
    for preset in gpu:
        if preset.name not in RUNNABLE:
            record["presets"][preset.name] = {
                "skipped": "needs a teacher, a base encoder or labelled data the bundle does not carry"
            }
            continue
        sets = [f"data.train={wiki}", f"train.max_steps={steps}"]
        if args.tiny and preset.name == "rawlm-gpu":
            sets += [f"model.random_init.{k}={v}" for k, v in bert_shape(True).items()]
            sets += ["mlm.heldout_lines=20", "model.max_seq_length=32"]
        record["presets"][preset.name] = train_preset(
            args, preset.name, args.work / "presets" / preset.name, sets, timeout=(PART_SECONDS - 30) / len(RUNNABLE)
        )
        args.save()
    bad = failed_runs(record["presets"])
    if bad:
        raise RuntimeError(f"{len(bad)} preset(s) failed: {', '.join(bad)}")


def part_claim_a(args, record: dict) -> None:
    """Two calls on a card: the first pre-trains the raw LM for the part's time (kept in the work
    folder), the next runs SimCSE from it over three seeds and scores both; ``--tiny`` does both."""
    env = {"HF_HUB_OFFLINE": "1", "SENTLAB_DATA": str(args.data)}
    rawlm = args.work / "rawlm"
    wiki = args.data / "wikipedia" / "wiki_sentences.txt"
    if not (rawlm / "model" / "config.json").is_file():
        sets = [f"train.output_dir={rawlm}", f"data.train={wiki}"]
        if args.tiny:
            sets += ["train.max_steps=4", "train.mixed_precision=no", "train.compile=false", "train.batch_size=8"]
            sets += ["model.random_init.layers=2", "model.random_init.hidden_size=64", "model.random_init.heads=2"]
            sets += ["model.random_init.intermediate_size=128", "model.random_init.vocab_size=500"]
            sets += ["mlm.heldout_lines=20", "model.max_seq_length=32", "train.eval_steps=2", "train.save_steps=2"]
        else:
            sets += ["train.max_minutes=4", "eval.final_tasks=[]"]  # the scoring is rawlm_simcse's
        command = [sys.executable, "-m", "sentlab.cli", "train", "rawlm-gpu", "--quiet"]
        for item in sets:
            command += ["--set", item]
        resume = ["--resume", "--allow-changed-settings"] if (rawlm / "checkpoints").is_dir() else []
        record["pretrain"] = run(command + resume, timeout=PART_SECONDS - 30, env=env)
        if record["pretrain"]["exit_code"]:
            raise RuntimeError("raw-LM pre-training failed")
        metrics = rawlm / "metrics.jsonl"
        if metrics.is_file():
            rows = [json.loads(line) for line in metrics.read_text().splitlines()]
            record["pretrain"]["steps"] = max((r.get("step", 0) for r in rows), default=0)
            record["pretrain"]["heldout"] = [r for r in rows if "eval_heldout-mlm_accuracy" in r][-1:]
        if not args.tiny:
            record["next"] = "the raw LM is kept in the work folder: run claim-a again for SimCSE and the scoring"
            record["status_when_done"] = (
                "incomplete"  # measured nothing yet: never a record (python -m benchmarks import)
            )
            return
    simcse = [sys.executable, "-m", "benchmarks.studies.rawlm_simcse", "--output", str(args.work / "claim-a")]
    simcse += ["--raw-lm", str(rawlm / "model"), "--seeds", "1", "2", "3"]
    if args.tiny:
        simcse += ["--set", "train.max_steps=2", "--set", "train.batch_size=8", "--set", "model.max_seq_length=32"]
    record["simcse"] = run(simcse, timeout=PART_SECONDS - 30, env=env)
    if record["simcse"]["exit_code"] or not record["simcse"]["result"]:
        raise RuntimeError("SimCSE from the raw LM failed or printed no result")


def part_distill(args, record: dict) -> None:
    """A stronger teacher into a smaller student, and a static student, so a card runs both: a random
    BERT-base (tiny: 2 x 64, a WordPiece vocabulary learnt from the bundle's Wikipedia lines) labels
    Wikipedia lines, and a random student of half its width (6 x 384, MiniLM's shape; tiny: 2 x 32) on its
    vocabulary learns the teacher's embeddings with ``MSELoss`` through ``loss_args.projection_dim``, fitted
    by least squares first (the embedding-regression route of the page "A small model from a big one"), in
    bf16 where the card has it;
    then ``sentlab distill-static`` makes the teacher's static student. Both: exit code, seconds, the
    losses, the labelling cost and the runtime read back."""
    import torch
    import yaml

    cache = args.work / "distill-cache"  # a fresh cache: the labels' cost is an encoding, never a cache read
    shutil.rmtree(cache, ignore_errors=True)
    env = {"HF_HUB_OFFLINE": "1", "SENTLAB_DATA": str(args.data), "SENTLAB_CACHE": str(cache)}
    teacher = random_bert(args.work / ("random-bert-tiny" if args.tiny else "random-bert"), args.data, args.tiny)
    width = json.loads((teacher / "config.json").read_text())["hidden_size"]
    lines = (args.data / "wikipedia" / "wiki_sentences.txt").read_text("utf-8").splitlines()
    texts = args.work / "distill-texts.jsonl"
    count = 256 if args.tiny else 20000
    texts.write_text("".join(json.dumps({"text": t}) + "\n" for t in lines[:count] if t.strip()), encoding="utf-8")
    shape = {"layers": 2, "hidden_size": 32, "heads": 2, "intermediate_size": 64} if args.tiny else {}
    shape = shape or {"layers": 6, "hidden_size": 384, "heads": 12, "intermediate_size": 1536}
    out = args.work / "distill"
    shutil.rmtree(out, ignore_errors=True)
    tree = {
        "method": "supervised",
        "model": {"name": "", "random_init": {**shape, "tokenizer": str(teacher)}, "max_seq_length": 64},
        "data": {"train": str(texts), "columns": ["text"]},
        "supervised": {  # the projection fitted before training: its least squares on the card's device
            "loss": "MSELoss",
            "loss_args": {"projection_dim": width},
            "teacher": str(teacher),
            "projection_init": "least_squares",
        },
        "train": {
            "output_dir": str(out),
            "max_steps": 4 if args.tiny else 100,
            "batch_size": 8 if args.tiny else 64,
            "mixed_precision": "no" if args.tiny or not torch.cuda.is_bf16_supported() else "bf16",
            "progress_bar": False,
            "logging_steps": 1,
        },
        "eval": {"dev_task": "none", "final_tasks": []},
    }
    config = args.work / "distill.yaml"
    config.write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    done = run([sys.executable, "-m", "sentlab.cli", "train", str(config), "--quiet"], PART_SECONDS / 2, env=env)
    record["regression"] = {"exit_code": done["exit_code"], "seconds": done["seconds"]}
    if done["exit_code"]:
        record["regression"]["tail"] = done.get("tail", [])
    for name in ("metrics.jsonl", "teacher_labels.json", "projection_init.json", "runtime.json", "precision.json"):
        path = out / name
        if path.is_file() and name == "metrics.jsonl":
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            record["regression"]["losses"] = [r["loss"] for r in rows if r.get("loss") is not None]
        elif path.is_file():
            record["regression"][name.split(".")[0]] = json.loads(path.read_text())
    args.save()
    student = args.work / "static-student"
    shutil.rmtree(student, ignore_errors=True)
    command = [sys.executable, "-m", "sentlab.cli", "distill-static", "--model", str(teacher), "--output", str(student)]
    command += ["--pca-dims", str(min(width, 256)), "--quiet"]
    done = run(command, PART_SECONDS / 2, env=env)
    record["static"] = {
        "exit_code": done["exit_code"],
        "seconds": done["seconds"],
        **({"tail": done.get("tail", [])} if done["exit_code"] else {}),
    }
    if record["regression"]["exit_code"] or record["static"]["exit_code"]:
        raise RuntimeError("the regression route or the static student failed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=[*PARTS, "all"])
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on whatever device there is (CI: a CPU)")
    parser.add_argument("--bundle", type=Path, default=ROOT / ".gpu", help="the bundle folder (default: .gpu)")
    parser.add_argument("--out", type=Path, default=None, help="default: $OUT, else runs/gpu-check")
    args = parser.parse_args()
    args.out = (args.out or Path(os.environ.get("OUT") or ROOT / "runs" / "gpu-check")).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    # models and runs: beside the results in --tiny, else in the checkout's ignored runs/ (kept for
    # later parts on the same node; $OUT brings back only the JSON)
    args.work = args.out / "work" if args.tiny else ROOT / "runs" / "gpu-check-work"
    args.work.mkdir(parents=True, exist_ok=True)
    failed = []
    for part in PARTS if args.part == "all" else [args.part]:
        record = {"part": part, "command": shlex.join(sys.argv), "tiny": args.tiny}
        record["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        start = time.perf_counter()
        global DEADLINE
        DEADLINE = time.monotonic() + PART_SECONDS
        path = args.out / f"{part}.json"
        if path.is_file():  # an earlier call's file (claim-a's first call, a part run again) is kept beside
            path.replace(path.with_name(f"{part}.previous.json"))
        # what the part has measured so far, written after each measurement: a killed part's file keeps
        # it, with status "running" (the runner keeps only a part that ended ok)
        args.save = lambda record=record, path=path: write_text_atomic(path, json.dumps(record, indent=1) + "\n")
        record |= {"status": "running", **provenance(args.bundle)}
        args.save()
        try:
            if not args.tiny:
                same_code(args.bundle)
            if part != "install":
                if not args.tiny:
                    ensure_installed(args, record)
                args.data = data_folder(args.bundle, args.tiny, args.work)
            {
                "install": part_install,
                **{f"suite-{i}": functools.partial(part_suite, index=i) for i in range(1, SUITE_SHARDS + 1)},
                "speed": part_speed,
                "presets": part_presets,
                "claim-a": part_claim_a,
                "distill": part_distill,
            }[part](args, record)
            record["status"] = record.pop("status_when_done", "ok")
        except Exception as err:  # the part failed: what it measured so far is still written
            record["status"] = "failed"
            record["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            record["traceback_tail"] = traceback.format_exc().strip().splitlines()[-4:]
            failed.append(part)
        record["seconds"] = round(time.perf_counter() - start, 1)
        record |= provenance(args.bundle)  # again: install may have just put sentlab there
        args.save()
        print(
            f"{part}: {record['status']} in {record['seconds']:.0f} s -> {args.out / (part + '.json')}", file=sys.stderr
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
