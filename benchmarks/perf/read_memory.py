"""Memory and time of training text at growing sizes: reading it as training does (a memory-mapped
Arrow table, :func:`sentlab.data.tables.sentence_table`) and a 2-step ``sentlab train`` on it.
Prints one JSON object.

Feeds: records read-memory-minilm; pages docs/guides/operations.md, docs/results.md.

Texts of the sizes asked for are made by repeating the Wikipedia sentences of the data folder
(``--sizes-mb 50 500 5000``; 50 is the file itself). Each measurement runs in a fresh process whose
peak anonymous memory (``RssAnon`` of ``/proc/PID/status``, sampled every 20 ms: pages of a
memory-mapped file the kernel can drop do not count) and peak resident set are recorded:

* ``convert``: the first read, with an empty cache (the conversion to Arrow), then every row read once;
* ``reuse``: the same again, the table now cached;
* ``train``: ``sentlab train PRESET --set data.train=TEXT --set train.max_steps=2`` with its own empty
  cache (so it converts too), the whole text (no `data.limit`), no dev or final evaluation; also the
  seconds from its start to the first training step (``first_step_s``) and the MB of text a second
  that makes, and over all sizes the rate of the growth of that time (``first_step_mb_per_s_of_the_growth``);
* ``list`` (``--list-reader``): the strict reader that returns a Python list, for comparison (texts up
  to 1 GB: it needs about six times the file in memory).

    python -m benchmarks.perf.read_memory --sizes-mb 50 500 5000 --work /tmp/text-scale

``--rankencoder-corpus-lines N`` measures instead a RankEncoder run over a corpus of N lines (the
Wikipedia sentences repeated): ``sentlab train rankencoder-minilm-cpu`` with ``rank.corpus_limit=N``,
2 steps, no evaluation. What memory measures is the corpus (its text, E1's and E2's vectors, the
rank vectors of a batch against it), not the encoder, so E1 and E2 are a small random encoder with
all-MiniLM-L6-v2's tokenizer and output size (1 layer of width 32, mean pooling, a dense layer to
384 dimensions), many times faster to encode than MiniLM.

    python -m benchmarks.perf.read_memory --rankencoder-corpus-lines 10000 4054880 --work /tmp/text-scale
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIST_MAX_MB = 1000

READ = """
import sys, time
from sentlab.data.tables import sentence_table
started = time.perf_counter()
table = sentence_table(sys.argv[1])
ready = time.perf_counter() - started
rows = sum(len(batch["sentence"]) for batch in table.iter(batch_size=50_000))
print(ready, rows)
"""

LIST = """
import sys, time
from sentlab.data.readers import read_sentences
started = time.perf_counter()
rows = len(read_sentences(sys.argv[1]))
print(time.perf_counter() - started, rows)
"""


def field(pid: int, name: str) -> int:
    try:
        for line in open(f"/proc/{pid}/status", encoding="ascii"):
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measured(cmd: list[str], env: dict[str, str]) -> dict:
    """Run ``cmd``; its wall time, stdout, and the peaks of RssAnon and VmRSS sampled every 20 ms."""
    started, started_epoch = time.perf_counter(), time.time()
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = {"RssAnon": 0, "VmRSS": 0}

    def sample() -> None:
        while process.poll() is None:
            for name in peaks:
                peaks[name] = max(peaks[name], field(process.pid, name))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, err = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ...: exit {process.returncode}\n{err[-2000:]}")
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "peak_rss_anon_mb": round(peaks["RssAnon"] / 1e6, 1),
        "peak_rss_mb": round(peaks["VmRSS"] / 1e6, 1),
        "stdout": out.split(),
        "started_epoch": started_epoch,
    }


def first_step(result: dict, run: Path, file_mb: float | None = None) -> dict:
    """Seconds from the start of the process to the first training step: ``RUN/runtime.json`` is
    written there (:class:`sentlab.training.engine` reads back what ran at the first step)."""
    started = result.pop("started_epoch")
    result["first_step_s"] = round((run / "runtime.json").stat().st_mtime - started, 2)
    if file_mb is not None:
        result["first_step_mb_per_s"] = round(file_mb / result["first_step_s"], 1)
    return result


def make_text(source: Path, target: Path, size_mb: float) -> Path:
    if target.is_file() and target.stat().st_size >= size_mb * 1e6:
        return target
    from sentlab.paths import atomic_path

    block = source.read_bytes()
    with atomic_path(target) as partial, partial.open("wb") as sink:
        written = 0
        while written < size_mb * 1e6:
            sink.write(block)
            written += len(block)
    return target


def small_encoder(folder: Path) -> Path:
    """A random sentence-transformers encoder with MiniLM's tokenizer and 384-dimensional output."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sentlab.encoders.loading import resolve_model_path

    if (folder / "modules.json").is_file():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    torch.manual_seed(0)
    shape = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    backbone = folder.with_name(folder.name + "-backbone")
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, **shape)).save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)
    transformer = models.Transformer(str(backbone), max_seq_length=32)
    modules = [transformer, models.Pooling(32, "mean"), models.Dense(32, 384, activation_function=torch.nn.Identity())]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder), safe_serialization=True)
    return folder


def rankencoder_run(source: Path, work: Path, lines: int, env: dict[str, str]) -> dict:
    """A 2-step RankEncoder run over the first ``lines`` lines of ``source`` repeated."""
    with source.open("rb") as handle:
        repeats = -(-lines // sum(1 for _ in handle))
    text = make_text(source, work / f"text-x{repeats}.txt", source.stat().st_size * repeats / 1e6)
    model = small_encoder(work / "small-encoder-384")
    cache = work / "rankencoder-cache"
    for folder in (cache, work / "rankencoder-run"):
        shutil.rmtree(folder, ignore_errors=True)
    overrides = [
        f"model.name={model}",
        f"rank.base_encoder={model}",
        f"rank.corpus={text}",
        f"rank.corpus_limit={lines}",
        "train.max_steps=2",
        "eval.dev_task=none",
        "eval.final_tasks=[]",
        f"train.output_dir={work / 'rankencoder-run'}",
    ]
    cmd = [sys.executable, "-m", "sentlab.cli", "train", "rankencoder-minilm-cpu", "--quiet"]
    cmd += [part for item in overrides for part in ("--set", item)]
    result = first_step(measured(cmd, {**env, "SENTLAB_CACHE": str(cache)}), work / "rankencoder-run")
    result.pop("stdout")
    index = json.loads((work / "rankencoder-run" / "base_index" / "index.json").read_text())
    saved = json.loads((work / "rankencoder-run" / "model" / "rankencoder" / "index.json").read_text())
    return {
        "corpus_lines": lines,
        "corpus_mb": round(sum(len(line) for line in itertools.islice(text.open("rb"), lines)) / 1e6, 1),
        "e1_index": {"n": index["n_sentences"], "dim": index["dim"]},
        "e2_index": {"n": saved["n_sentences"], "dim": saved["dim"]},
        "vectors_gb_each": round(index["n_sentences"] * index["dim"] * 4 / 1e9, 2),
        "train": result,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=None, help="default: wikipedia/wiki_sentences.txt")
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[50.0])
    parser.add_argument("--work", type=Path, default=None, help="where the larger texts and caches go")
    parser.add_argument("--preset", default="simcse-unsup-minilm-cpu")
    parser.add_argument("--no-train", action="store_true", help="measure reading only")
    parser.add_argument("--list-reader", action="store_true", help="also the strict reader's Python list")
    parser.add_argument(
        "--rankencoder-corpus-lines",
        type=int,
        nargs="+",
        default=None,
        help="measure instead RankEncoder runs over corpora of these many lines",
    )
    args = parser.parse_args()
    from sentlab.paths import data_dir

    source = args.text or data_dir() / "wikipedia" / "wiki_sentences.txt"
    work = args.work or Path(tempfile.mkdtemp(prefix="text-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{ROOT / 'src'}:{os.environ.get('PYTHONPATH', '')}"}
    if args.rankencoder_corpus_lines:
        runs = [rankencoder_run(source, work, lines, env) for lines in args.rankencoder_corpus_lines]
        growth = runs[-1]["train"]["peak_rss_anon_mb"] - runs[0]["train"]["peak_rss_anon_mb"]
        print(json.dumps({"text": str(source), "runs": runs, "train_anon_growth_mb": round(growth, 1)}))
        return
    runs = []
    for size in args.sizes_mb:
        text = source if size * 1e6 <= source.stat().st_size else make_text(source, work / f"text-{size:g}mb.txt", size)
        cache = work / f"cache-{size:g}mb"
        shutil.rmtree(cache, ignore_errors=True)
        row: dict = {"file_mb": round(text.stat().st_size / 1e6, 1)}
        for name in ("convert", "reuse"):
            result = measured([sys.executable, "-c", READ, str(text)], {**env, "SENTLAB_CACHE": str(cache)})
            result.pop("started_epoch")
            ready, rows = result.pop("stdout")
            row[name] = {**result, "table_ready_s": round(float(ready), 2), "rows": int(rows)}
        row["convert"]["mb_per_s"] = round(row["file_mb"] / row["convert"]["table_ready_s"], 1)
        if args.list_reader and row["file_mb"] <= LIST_MAX_MB:
            result = measured([sys.executable, "-c", LIST, str(text)], env)
            result.pop("started_epoch")
            seconds, rows = result.pop("stdout")
            row["list"] = {**result, "read_s": round(float(seconds), 2), "rows": int(rows)}
        if not args.no_train:
            train_cache = work / f"train-cache-{size:g}mb"
            for folder in (train_cache, work / "run"):
                shutil.rmtree(folder, ignore_errors=True)
            overrides = [
                f"data.train={text}",
                "data.limit=",
                "train.max_steps=2",
                "eval.dev_task=none",
                "eval.final_tasks=[]",
            ]
            overrides.append(f"train.output_dir={work / 'run'}")
            cmd = [sys.executable, "-m", "sentlab.cli", "train", args.preset, "--quiet"]
            cmd += [part for item in overrides for part in ("--set", item)]
            measurement = measured(cmd, {**env, "SENTLAB_CACHE": str(train_cache)})
            row["train"] = first_step(measurement, work / "run", row["file_mb"])
            row["train"].pop("stdout")
        runs.append(row)
    first, last = runs[0], runs[-1]
    summary = {
        "text": str(source),
        "preset": None if args.no_train else args.preset,
        "runs": runs,
        "reuse_anon_growth_mb": round(last["reuse"]["peak_rss_anon_mb"] - first["reuse"]["peak_rss_anon_mb"], 1),
    }
    if not args.no_train:
        summary["train_anon_growth_mb"] = round(
            last["train"]["peak_rss_anon_mb"] - first["train"]["peak_rss_anon_mb"], 1
        )
        if len(runs) > 1:  # the rate of the part of the time to the first step that grows with the text
            extra_s = last["train"]["first_step_s"] - first["train"]["first_step_s"]
            summary["first_step_mb_per_s_of_the_growth"] = round((last["file_mb"] - first["file_mb"]) / extra_s, 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
