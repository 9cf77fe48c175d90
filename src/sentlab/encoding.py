"""Encoding a text file of any size into one ``.npy`` matrix, in chunks, resumable.

The sentences are read from sentlab's memory-mapped table of the file (converted once, cached), so
the text never has to fit in memory; each chunk of ``chunk_rows`` sentences is encoded (in one
process, in batches of similar token length (:func:`~sentlab.encoders.batching.encode_by_length`), or
by sentence-transformers' multi-process pool over ``devices``) and written into a
memory-mapped ``OUT.partial`` in ``.npy`` format, so the matrix never has to fit in memory either.
After each chunk, ``OUT.progress.json`` records the chunks done; a run killed at any point and
started again with the same model, text and settings encodes only the chunks not done (the chunk in
flight is encoded again), and anything else starts over. The finished matrix is renamed to ``OUT``
with ``OUT.json`` beside it: what it holds (model setting, text sha256, rows, dimension) and how it
was made (processes, seconds, sentences a second); a run asked for the same again does nothing.
The matrix's bytes are allocated on disk before the first chunk is encoded, so a disk without room
stops the run in one line ("needs N GB at FOLDER, M free") instead of a signal mid-write.

``dims`` keeps the first K dimensions of each embedding, re-normalised (a Matryoshka model's shorter
embedding, :mod:`sentlab.encoders.matryoshka`); ``precision`` stores them in fewer bytes
(:mod:`sentlab.quantize`): float16, int8 / uint8 (each dimension's range from a calibration
sample encoded first, kept as ``OUT.ranges.npy`` and described in ``OUT.json``), or binary / ubinary
(one bit a dimension).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Literal

import numpy as np
from sentence_transformers import SentenceTransformer

from sentlab.cache import file_sha256
from sentlab.data.tables import sentence_table, text_record
from sentlab.encoders.batching import encode_by_length
from sentlab.encoders.matryoshka import truncate
from sentlab.encoders.prompts import check_prompts_apply, prompted
from sentlab.errors import DataError
from sentlab.evaluation.scoring import embedding_setting
from sentlab.paths import atomic_path, json_text, reserve_file, write_text_atomic
from sentlab.progress import bars, say
from sentlab.quantize import CALIBRATION_SEED, calibration_rows, quantize, ranges_of, stored_shape

FORMAT = 2  # 2: dimensions and storage precision in the plan


def writable_output(out: str | Path) -> Path:
    """``out`` as encode writes it (a ``.npy`` in a folder it can write or make), or a one-line error,
    asked before the model is loaded; nothing is made yet (its nearest existing folder is probed)."""
    import os
    import tempfile

    out = Path(out)
    if out.suffix != ".npy":
        raise DataError(f"{out}: output must end in .npy")
    existing = out.parent.absolute()
    try:
        while not existing.exists():  # exists() itself may be refused (a folder it cannot enter)
            existing = existing.parent
        if not existing.is_dir():
            raise NotADirectoryError(20, os.strerror(20))
        with tempfile.NamedTemporaryFile(dir=existing, prefix=f".{out.name}.", suffix=".probe"):
            pass
    except OSError as err:
        raise DataError(f"{out.parent}: cannot write the output there ({os.strerror(err.errno or 0)})") from None
    return out


def encode_file(
    model: SentenceTransformer,
    source: str | Path,
    out: str | Path,
    chunk_rows: int = 50_000,
    batch_size: int = 128,
    normalize: bool = False,
    devices: list[str] | None = None,
    dims: int | None = None,
    precision: str = "float32",
    prompt: str = "",
) -> dict:
    """Encode every line of ``source`` into ``out`` (one row a line; ``dims`` and ``precision``: see the
    module), each after ``prompt`` (:mod:`sentlab.encoders.prompts`); returns ``OUT.json``'s record."""
    from numpy.lib.format import open_memmap
    from tqdm.auto import tqdm

    source, out = Path(source), writable_output(out)
    table = sentence_table(source)
    rows = len(table)
    if rows == 0:
        raise DataError(f"{source}: no sentences")
    width = model.get_embedding_dimension()
    if dims is not None and not 1 <= dims <= width:
        raise DataError(f"--dims {dims}: the model's embeddings have {width} dimensions")
    calibrated = precision.endswith("int8")
    if calibrated and rows < 2:
        raise DataError(f"{source}: int8 / uint8 need at least 2 sentences to calibrate each dimension's range")
    # int8 / uint8 codes are of unit-length vectors, as `sentlab eval --embedding-precision` scores them
    normalize = normalize or dims is not None or calibrated
    shape, dtype = stored_shape(rows, dims or width, precision)
    plan = {
        "format": FORMAT,
        "source": str(source),
        "source_sha256": text_record(source)["sha256"],
        "rows": rows,
        "dim": dims or width,
        "model_dim": width,
        "normalize": normalize,
        "precision": precision,
        "stored": {"shape": list(shape), "dtype": dtype.name},
        "model": embedding_setting(model),
    }
    if prompt:  # only when set: a matrix encoded without one before prompts existed is still this plan's
        check_prompts_apply(model, [prompt], "--prompt")
        plan["prompt"] = prompt
    if calibrated:
        plan["calibration"] = {"rows": int(len(calibration_rows(rows))), "seed": CALIBRATION_SEED}
    record_path = out.with_name(out.name + ".json")
    ranges_path = out.with_name(out.name[: -len(".npy")] + ".ranges.npy")
    if out.is_file() and record_path.is_file():
        finished = json.loads(record_path.read_text("utf-8"))
        same_ranges = not calibrated or (
            ranges_path.is_file() and file_sha256(ranges_path) == finished.get("ranges_sha256")
        )
        if finished.get("plan") == plan and out.stat().st_size == finished.get("bytes") and same_ranges:
            say(f"{out}: already holds these embeddings ({rows:,} rows); nothing to do")
            return finished
    partial, progress = out.with_name(out.name + ".partial"), out.with_name(out.name + ".progress.json")
    partial_ranges = ranges_path.with_name(ranges_path.name + ".partial")  # the unfinished run's ranges
    run = {"plan": plan, "chunk_rows": chunk_rows}
    chunks = math.ceil(rows / chunk_rows)
    files = _Files(out, partial, progress, ranges_path, partial_ranges, record_path)
    saved = json.loads(progress.read_text("utf-8")) if progress.is_file() else {}
    same_run = bool(saved) and {k: saved.get(k) for k in run} == run
    if same_run and not partial.is_file() and len(saved.get("done", [])) == chunks:
        # killed between the final renames: every chunk is in OUT already; finish without encoding again
        recovered = files.finished_by(saved, shape, dtype, calibrated)
        if recovered is not False:
            say(f"{out}: every chunk was encoded before the run stopped; finishing it")
            return files.finish(plan, recovered, chunks, chunk_rows, 0, chunks, 0.0, devices or [str(model.device)])
    done: set[int] = set()
    if partial.is_file() and progress.is_file():
        if same_run:
            done = set(saved["done"])
        else:
            say(f"{out}: an unfinished run with other settings is there; starting over")
    matrix = None
    if done:
        matrix = open_memmap(partial, mode="r+")
        if matrix.shape != shape or matrix.dtype != dtype:  # not the matrix the progress describes
            say(f"{out}: the unfinished matrix is not {shape[0]} x {shape[1]} {dtype.name}; starting over")
            matrix, done = None, set()
        elif calibrated and not partial_ranges.is_file():  # its chunks were quantized with ranges now lost
            say(f"{out}: the unfinished matrix's ranges ({partial_ranges.name}) are missing; starting over")
            matrix, done = None, set()
    if matrix is None:
        progress.unlink(missing_ok=True)  # before the new matrix: no record may describe its zeros
        out.parent.mkdir(parents=True, exist_ok=True)
        matrix = open_memmap(partial, mode="w+", dtype=dtype, shape=shape)
    try:  # the whole matrix on disk before the first chunk: a full disk is one line, not a SIGBUS
        reserve_file(partial, partial.stat().st_size)
    except DataError:
        del matrix
        if not done:
            partial.unlink(missing_ok=True)
        raise
    todo = [c for c in range(chunks) if c not in done]
    if done:
        say(f"{out}: resuming, {len(done)} of {chunks} chunks already encoded")
    start, encoded, pool = time.perf_counter(), 0, None  # the time includes the calibration's encoding
    try:
        pool = model.start_multi_process_pool(devices) if devices else None  # devices: checked by the caller

        def embed(texts: list[str]) -> np.ndarray:
            texts = prompted(texts, prompt)
            if pool is None:  # batches of similar token length (sentlab.encoders.batching)
                vectors = encode_by_length(model, texts, batch_size, normalize_embeddings=normalize)
            else:
                vectors = model.encode(
                    texts,
                    batch_size=batch_size,
                    normalize_embeddings=normalize,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                    pool=pool,
                )
            return truncate(vectors, dims) if dims is not None else vectors

        ranges, every_row = None, None
        if calibrated and done:
            ranges = np.load(partial_ranges)
        elif calibrated:  # the sample's embeddings set each dimension's range, kept for the rows to come
            sample = calibration_rows(rows)
            say(f"{out}: calibrating {precision} on {len(sample):,} sentences (seed {CALIBRATION_SEED})")
            floats = embed(table.select(sample)["sentence"])
            ranges = ranges_of(floats)
            if len(sample) == rows:  # the sample is every row, in order: its embeddings are the matrix's
                every_row = floats
            with atomic_path(partial_ranges) as temporary, open(temporary, "wb") as f:
                np.save(f, ranges)
        # which ranges the chunks are quantized with: a finish after a kill checks the file against it
        ranges_sha256 = file_sha256(partial_ranges) if calibrated else None
        left = rows - sum(min(chunk_rows, rows - c * chunk_rows) for c in done)
        with tqdm(total=left, unit="sentence", disable=not bars(), desc="encoding") as bar:
            for chunk in todo:
                begin, end = chunk * chunk_rows, min((chunk + 1) * chunk_rows, rows)
                vectors = every_row[begin:end] if every_row is not None else embed(table[begin:end]["sentence"])
                matrix[begin:end] = quantize(vectors, precision, ranges) if precision != "float32" else vectors
                matrix.flush()
                done.add(chunk)
                state = {**run, "done": sorted(done), "ranges_sha256": ranges_sha256}
                write_text_atomic(progress, json_text(state))
                encoded += end - begin
                bar.update(end - begin)
    except BaseException:
        if not done:  # nothing encoded: no half-made matrix or ranges are left to look like a run to resume
            del matrix
            partial.unlink(missing_ok=True)
            partial_ranges.unlink(missing_ok=True)
        raise
    finally:
        if pool is not None:
            model.stop_multi_process_pool(pool)
    seconds = time.perf_counter() - start
    del matrix
    record_path.unlink(missing_ok=True)  # an earlier matrix's record must not describe this one
    partial.replace(out)  # the matrix first: a kill before the ranges follow is finished by the next run
    return files.finish(
        plan,
        partial_ranges if calibrated else None,
        chunks,
        chunk_rows,
        encoded,
        chunks - len(todo),
        seconds,
        devices or [str(model.device)],
    )


class _Files:
    """The files of one encode run (``OUT`` and what is written beside it) and its last steps."""

    def __init__(self, out, partial, progress, ranges, partial_ranges, record):
        self.out, self.partial, self.progress = out, partial, progress
        self.ranges, self.partial_ranges, self.record = ranges, partial_ranges, record

    def finished_by(self, saved: dict, shape, dtype, calibrated: bool) -> Path | None | Literal[False]:
        """After a kill between the final renames: the ranges file of the run that ``saved`` (its
        progress) describes (None for a run without ranges), or False when ``OUT`` is not its matrix."""
        try:
            matrix = np.load(self.out, mmap_mode="r")
        except (OSError, ValueError):
            return False
        if matrix.shape != shape or matrix.dtype != dtype:
            return False
        if not calibrated:
            return None
        for candidate in (self.partial_ranges, self.ranges):
            if candidate.is_file() and file_sha256(candidate) == saved.get("ranges_sha256"):
                return candidate
        return False

    def finish(self, plan, ranges, chunks, chunk_rows, encoded, resumed, seconds, processes) -> dict:
        """Put the ranges beside ``OUT`` (``ranges``: where they are now; None: the run has none), write
        ``OUT.json`` and drop the progress file; returns the record."""
        if ranges is not None and ranges != self.ranges:
            ranges.replace(self.ranges)
        elif ranges is None:
            self.ranges.unlink(missing_ok=True)
        shape, dtype = plan["stored"]["shape"], np.dtype(plan["stored"]["dtype"])
        record = {
            "plan": plan,
            "bytes": self.out.stat().st_size,
            "chunks": chunks,
            "chunk_rows": chunk_rows,
            "encoded_now": encoded,
            "resumed_chunks": resumed,
            "processes": processes,
            "seconds": round(seconds, 2),
            "sentences_per_second": round(encoded / seconds, 1) if seconds > 0 and encoded else None,
            "bytes_a_sentence": shape[1] * dtype.itemsize,
        }
        if ranges is not None:
            record |= {"ranges": self.ranges.name, "ranges_sha256": file_sha256(self.ranges)}
        write_text_atomic(self.record, json_text(record, indent=1))
        self.progress.unlink(missing_ok=True)
        return record
