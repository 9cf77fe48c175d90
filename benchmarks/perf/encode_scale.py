"""``sentlab encode`` at scale: the first ``--sentences`` Wikipedia lines into one .npy, in chunks, on
one process and on several (sentence-transformers' multi-process pool), for each ``--backends``;
then a run killed (SIGKILL) once half its chunks are written, and resumed. Each setting runs in a
fresh process: sentences a second, seconds, peak resident memory (the process and its pool's
children), the output's size, and the threads (``--threads N``: OMP_NUM_THREADS=N for the process and
the pool's processes it starts, and torch's own count set to N in the main one; 0: the libraries'
default; ``torch_threads`` is the main process's count read back). Several
devices shard torch models only, and ``--threads`` sets torch's threads only: another backend with
``cpu,cpu`` or a thread count is listed as not run (it uses its runtime's own thread count). Prints one JSON
object.

Feeds: records encode-backends-minilm, encode-scale-minilm; pages docs/guides/inference.md.

    python -m benchmarks.perf.encode_scale --model minilm --sentences 20000 --chunk-rows 2500 --devices cpu cpu,cpu
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import last_json


def child(args) -> None:
    """One encoding in this process; prints its record with the peak memory."""
    from sentlab.cli.common import load
    from sentlab.encoding import encode_file
    from sentlab.progress import set_quiet

    set_quiet(True)
    if args.child_threads:
        import torch

        torch.set_num_threads(args.child_threads)
    ns = argparse.Namespace(
        model=args.model, pooler=None, max_seq_length=None, device="cpu", backend=args.child_backend, precision="fp32"
    )
    model = load(ns)
    devices = args.child_devices.split(",") if "," in args.child_devices else None
    record = encode_file(model, args.input, args.output, chunk_rows=args.chunk_rows, devices=devices)
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    import torch

    record = {k: v for k, v in record.items() if k != "plan"}
    print(json.dumps({**record, "peak_rss_mib": round(peak / 1024, 1), "torch_threads": torch.get_num_threads()}))


def run_child(args, backend: str, devices: str, output: Path, threads: int = 0, kill_at_half: bool = False) -> dict:
    command = [
        sys.executable,
        "-m",
        __spec__.name,
        "--model",
        args.model,
        "--input",
        str(args.input),
        "--output",
        str(output),
    ]
    command += ["--chunk-rows", str(args.chunk_rows), "--child-backend", backend, "--child-devices", devices]
    command += ["--child-threads", str(threads)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    start = time.perf_counter()
    if kill_at_half:
        progress = output.with_name(output.name + ".progress.json")
        half = -(-args.sentences // args.chunk_rows) // 2
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, start_new_session=True)
        while process.poll() is None:
            try:
                if len(json.loads(progress.read_text())["done"]) >= half:
                    os.killpg(process.pid, signal.SIGKILL)
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        process.wait()
        written = json.loads(progress.read_text())["done"] if progress.is_file() else None
        killed = {"killed_after_s": round(time.perf_counter() - start, 1), "chunks_written": written}
        return {**killed, "resumed": run_child(args, backend, devices, output, threads)}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"exit_code": done.returncode, "tail": done.stderr.strip().splitlines()[-3:]}
    record = last_json(done.stdout)
    record["wall_s"] = round(time.perf_counter() - start, 1)
    record["bytes"] = output.stat().st_size
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--chunk-rows", type=int, default=2500)
    parser.add_argument("--devices", nargs="+", default=["cpu", "cpu,cpu"])
    parser.add_argument("--backends", nargs="+", default=["torch"])
    parser.add_argument("--threads", type=int, nargs="+", default=[0], help="threads a process (0: the default)")
    parser.add_argument("--work", type=Path, default=Path("runs/encode-scale"))
    parser.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-backend", help=argparse.SUPPRESS)
    parser.add_argument("--child-devices", help=argparse.SUPPRESS)
    parser.add_argument("--child-threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_backend:
        child(args)
        return
    data = Path(os.environ.get("SENTLAB_DATA", "../shared/data"))
    args.work.mkdir(parents=True, exist_ok=True)
    args.input = args.work / f"wiki-{args.sentences}.txt"
    with (data / "wikipedia" / "wiki_sentences.txt").open(encoding="utf-8") as f:
        args.input.write_text("".join(next(f) for _ in range(args.sentences)), encoding="utf-8")
    runs = {}
    for backend in args.backends:
        for devices in args.devices:
            for threads in args.threads:
                name = f"{backend} {devices}" + (f" threads={threads}" if threads else "")
                if backend != "torch" and "," in devices:
                    runs[name] = {"not_run": "several devices shard torch models only"}
                    continue
                if backend != "torch" and threads:
                    runs[name] = {"not_run": "--threads sets torch's threads; onnx / openvino keep their own"}
                    continue
                output = args.work / f"{backend}-{devices.replace(',', '+')}-{threads}.npy"
                for stale in args.work.glob(output.name + "*"):
                    stale.unlink()
                runs[name] = run_child(args, backend, devices, output, threads)
    output = args.work / "killed.npy"
    for stale in args.work.glob(output.name + "*"):
        stale.unlink()
    killed = run_child(args, args.backends[0], args.devices[0], output, args.threads[0], kill_at_half=True)
    summary = {
        "model": args.model,
        "sentences": args.sentences,
        "chunk_rows": args.chunk_rows,
        "cpu_count": os.cpu_count(),
        "runs": runs,
        "killed_at_half_and_resumed": killed,
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
