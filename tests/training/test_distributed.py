"""Two CPU processes (gloo) through torchrun: in-batch negatives are gathered across processes with
gradients, so one step on 2 x 4 sentences equals one step of a single process on the same 8 (RSE:
with its relation vectors, whose gradients the loss averages itself, plain and with Gradient Cache)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[2]


def run(nproc, backbone, corpus, out, batch_size, method="simcse-unsup"):
    env = subprocess_env(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc_per_node={nproc}",
        "--standalone",  # a free rendezvous port of its own: tests may run side by side
        str(ROOT / "tests" / "training" / "ddp_worker.py"),
        str(backbone),
        str(corpus),
        str(out),
        str(batch_size),
        method,
    ]
    if nproc == 1:
        cmd = [
            sys.executable,
            str(ROOT / "tests" / "training" / "ddp_worker.py"),
            str(backbone),
            str(corpus),
            str(out),
            str(batch_size),
            method,
        ]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["simcse-unsup", "rankencoder", "rse", "rse-cached"])
def test_two_processes_equal_one_process_on_the_global_batch(tiny_backbone_no_dropout, tmp_path, method):
    corpus = tmp_path / "eight.txt"
    corpus.write_text(
        "\n".join(
            [
                "a man plays the guitar",
                "a dog runs in the park",
                "the girl reads a book",
                "a cat sits on the car",
                "children swim in the water",
                "a bird flies in the sky",
                "the woman eats food",
                "a boy drives a red car",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    run(2, tiny_backbone_no_dropout, corpus, tmp_path / "ddp", batch_size=4, method=method)
    run(1, tiny_backbone_no_dropout, corpus, tmp_path / "single", batch_size=8, method=method)
    rank0, rank1 = (load_file(str(tmp_path / "ddp" / f"rank{r}.safetensors")) for r in (0, 1))
    single = load_file(str(tmp_path / "single" / "rank0.safetensors"))
    info = json.loads((tmp_path / "ddp" / "rank0.json").read_text())
    assert info["world"] == 2 and info["wrapper"] == "DistributedDataParallel"
    if method.startswith("rse"):
        assert "relation_vectors" in single
        initial = load_file(str(tmp_path / "single" / "initial.safetensors"))
    for name, value in single.items():
        torch.testing.assert_close(rank0[name], rank1[name], rtol=0, atol=0)  # ranks stay equal
        if method.startswith("rse"):
            # SGD (see ddp_worker): the step is 1e-2 x the gradient. This tiny model's float32 gradients
            # move by up to ~2e-4 of their norm with the summation order (measured against float64), and
            # storing the weights rounds them by < 6e-8 of their size; a missing sync or a wrong gather
            # moves the step by O(1) of itself
            step = single[name] - initial[name]
            bound = 2e-3 * float(step.norm()) + 1e-7 * float(initial[name].norm()) + 1e-9  # + key biases: 0 by math
            assert float((rank0[name] - value).norm()) <= bound, name
            if name == "relation_vectors":  # the parameter under test really moved
                assert float(step.norm()) > 100 * bound
            continue
        # and equal one process: Adam's first step is ~lr * sign(grad) = 1e-2 per element, so a missing
        # gradient sync or a wrong gather moves elements by ~1e-2; float summation order moves them < 1e-4
        torch.testing.assert_close(rank0[name], value, rtol=0, atol=1e-4)
    loss_ddp = json.loads((tmp_path / "ddp" / "rank0.json").read_text())["loss"]
    loss_single = json.loads((tmp_path / "single" / "rank0.json").read_text())["loss"]
    assert loss_ddp == pytest.approx(loss_single, rel=1e-5)


@pytest.mark.slow
def test_two_processes_read_their_own_shards_and_a_crash_of_one_resumes_like_one_process(tiny_backbone, tmp_path):
    """Under torchrun each process batches its own shard of the memory-mapped table: over one epoch
    (6 steps of 2 x 4 rows) the two shards are disjoint and together hold every row exactly once.

    Then the same run with checkpoints every 2 steps, whose second process is killed (SIGKILL) at the
    end of step 5: torchrun stops the first, and ``--resume`` continues from checkpoint-4; each process
    batches the rows of steps 5-6 that the uninterrupted run batched, and the weights end equal."""
    from sentence_transformers import SentenceTransformer

    from tests.conftest import DEVICE

    corpus = tmp_path / "corpus.txt"
    sentences = [f"sentence {i} about {w}" for i, w in enumerate(["cats", "dogs", "birds", "fish"] * 12)]
    corpus.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    env = subprocess_env(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")

    def torchrun(out: Path, *extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"]
        cmd += [str(ROOT / "tests" / "training" / "shard_worker.py"), str(tiny_backbone), str(corpus), str(out)]
        cmd += ["4", "--max-steps", "6", "--save-steps", "2", *extra]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)

    full = torchrun(tmp_path / "full")
    assert full.returncode == 0, full.stderr[-3000:]
    first, second = (json.loads((tmp_path / "full" / f"seen{rank}.json").read_text("utf-8")) for rank in (0, 1))
    assert len(first) == len(second) == len(sentences) // 2
    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(sentences)

    crashed = torchrun(tmp_path / "crash", "--kill-step", "5")
    assert crashed.returncode != 0 and "SIGKILL" in crashed.stderr, crashed.stderr[-3000:]
    assert not (tmp_path / "crash" / "run" / "model").exists()
    checkpoints = tmp_path / "crash" / "run" / "checkpoints"
    assert [p.name for p in checkpoints.iterdir()] == ["checkpoint-4"]
    resumed = torchrun(tmp_path / "crash", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from checkpoint-4" in resumed.stderr
    for rank in (0, 1):
        uninterrupted = json.loads((tmp_path / "full" / f"seen{rank}.json").read_text("utf-8"))
        after_resume = json.loads((tmp_path / "crash" / f"seen{rank}.json").read_text("utf-8"))
        assert len(uninterrupted) == 6 * 4 and after_resume == uninterrupted[4 * 4 :], rank  # steps 5 and 6
    metrics = [json.loads(line) for line in (tmp_path / "crash" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in metrics if "loss" in r][-2:] == [5, 6]
    probe = ["sentence 1 about dogs", "a sentence about fish"]
    expected = SentenceTransformer(str(tmp_path / "full" / "run" / "model"), device=str(DEVICE)).encode(probe)
    got = SentenceTransformer(str(tmp_path / "crash" / "run" / "model"), device=str(DEVICE)).encode(probe)
    # the same float32 steps (dropout from each process's restored RNG state) on one thread each; a
    # wrong resume (other rows, other dropout masks, a lost optimizer state) moves weights ~lr = 5e-4 a step
    np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.slow
def test_two_processes_pack_the_text_once_and_both_read_it(corpus_file, tmp_path):
    """Packing under torchrun: the main process tokenises the text into the packed table first, the
    other finds that table and reads it (it neither tokenises again nor writes a second file)."""
    env = subprocess_env(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(corpus_file.read_text().splitlines() * 4) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"]
    cmd += [str(ROOT / "tests" / "training" / "pack_worker.py"), str(corpus), str(tmp_path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = (json.loads((tmp_path / f"packed{rank}.json").read_text("utf-8")) for rank in (0, 1))
    assert first["before"] == [] and len(first["after"]) == 1  # the main process built it
    assert second["before"] == second["after"] == first["after"]  # the other read that same file
