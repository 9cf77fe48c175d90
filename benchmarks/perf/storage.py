"""Fewer bytes a sentence: quality, size and search time of a model's embeddings at K dimensions and a
storage precision, with PCA to the same dimensions as the baseline a Matryoshka model must beat.

Feeds: records storage-minilm, storage-search-minilm; pages docs/guides/storage.md, docs/results.md.

For each model (``--models``: names or folders) and each K of ``--dims`` x precision of
``--precisions`` (float32, int8, binary; :class:`sentlab.evaluation.quantized.QuantizedEmbeddings`,
int8's ranges from a seeded sample of 10,000 Wikipedia sentences):

* ``sts_avg``: the STS average (seven tasks, Spearman x 100), what ``sentlab eval --tasks sts --dims K
  --embedding-precision P`` gives;
* ``evalrank_mrr``: EvalRank's MRR (the positive among 24,957 sentences), a retrieval card;
* ``bytes``: bytes a sentence stored (:func:`sentlab.quantize.stored_shape`).

PCA (``pca_K``, the first model only, float32): the full embeddings projected on the K leading
principal components of the same 10,000 Wikipedia sentences, re-normalised.

``search``: milliseconds per query of an exact top-10 search (faiss, one thread) of 1,000 queries over
``--corpus`` Wikipedia sentences of the first model, at each K: float32 inner product
(``IndexFlatIP``), sentlab's int8 codes, the codes the quality columns score (``IndexScalarQuantizer``
storing them directly; searched by inner product over the codes, where the quality columns take their
cosine: the time of what is stored, not the same ranking), and binary Hamming (``IndexBinaryFlat``);
:func:`search_index`. Prints one JSON object.

``--train-seeds``: before scoring, the CPU preset ``simcse-unsup-minilm-cpu`` is trained once a seed
plain and once with ``train.matryoshka_dims`` = ``--dims`` (``sentlab train``, into
``runs/storage/{plain,matryoshka}-SEED``; a run whose model and results are there is reused), and
each trained model is scored like the others; ``trained`` gives, a setting, the mean and standard
deviation over the seeds of each kind.

    python -m benchmarks.perf.storage --models minilm --dims 384 256 128 64 --train-seeds 1 2 3
    python -m benchmarks.perf.storage --models minilm --dims 384 256 128 64 --search-only   # the search times
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from benchmarks.common import spread as over_seeds
from benchmarks.common import train_preset
from sentlab.quantize import PRECISIONS


class PCAView:
    """The cache's embeddings projected on ``dims`` principal components of ``fit``'s, re-normalised."""

    def __init__(self, cache, dims: int, fit: np.ndarray):
        from sklearn.decomposition import PCA

        self.cache, self.device = cache, getattr(cache, "device", None)
        self.pca = PCA(n_components=dims, random_state=0).fit(fit)

    def encode(self, sentences, **kwargs) -> np.ndarray:
        projected = self.pca.transform(self.cache.encode(list(sentences), **kwargs)).astype(np.float32)
        return projected / np.linalg.norm(projected, axis=1, keepdims=True)


def scores(view, data_dir) -> dict:
    from sentlab.evaluation.scoring import CosineScorer
    from sentlab.evaluation.suite import SuiteInputs, run_suite

    inputs = SuiteInputs(
        CosineScorer(view, name="stored"), None, data_dir, device=getattr(view, "device", None) or "cpu"
    )
    report = run_suite(inputs, ["sts", "evalrank"], [])
    return {
        "sts_avg": round(report.summary["sts_avg"], 2),
        "evalrank_mrr": round(report.tasks["EvalRank"].scores["mrr"], 2),
    }


def search_index(vectors: np.ndarray, precision: str, ranges: np.ndarray | None = None):
    """An exact faiss index over ``vectors`` as sentlab stores them at ``precision``, and the function
    that turns queries into what it searches with: float32 and float16 by inner product (float16 codes:
    ``QT_fp16``); int8 / uint8 sentlab's own codes (``ranges``: the calibration's, as the quality
    columns use) by inner product over the 8-bit codes (``QT_8bit_direct_signed`` / ``QT_8bit_direct``,
    which store them as they are); binary / ubinary by Hamming distance."""
    import faiss

    from sentlab.quantize import quantize

    dims = vectors.shape[1]
    ip = faiss.METRIC_INNER_PRODUCT
    if precision == "float32":
        index, prepare = faiss.IndexFlatIP(dims), lambda x: x
    elif precision == "float16":
        index, prepare = faiss.IndexScalarQuantizer(dims, faiss.ScalarQuantizer.QT_fp16, ip), lambda x: x
    elif precision in ("int8", "uint8"):
        if ranges is None:
            raise ValueError(f"{precision}: the calibration's ranges are needed to search sentlab's codes")
        kind = (
            faiss.ScalarQuantizer.QT_8bit_direct_signed if precision == "int8" else faiss.ScalarQuantizer.QT_8bit_direct
        )
        index = faiss.IndexScalarQuantizer(dims, kind, ip)
        prepare = lambda x: quantize(x, precision, ranges).astype(np.float32)  # noqa: E731 - the codes, as floats
        index.train(prepare(vectors[:2]))  # a direct quantizer learns nothing
    elif precision in ("binary", "ubinary"):
        index, prepare = faiss.IndexBinaryFlat(8 * ((dims + 7) // 8)), lambda x: quantize(x, "ubinary")
    else:
        raise ValueError(f"precision {precision!r}: no search is timed for it")
    index.add(prepare(vectors))
    return index, prepare


def search_ms(vectors: np.ndarray, queries: np.ndarray, precision: str, ranges: np.ndarray | None = None) -> float:
    """Milliseconds a query of an exact top-10 search over ``vectors`` as stored (:func:`search_index`;
    faiss, one thread)."""
    import faiss

    faiss.omp_set_num_threads(1)
    index, prepare = search_index(vectors, precision, ranges)
    asked = prepare(queries)
    index.search(asked, 10)  # warm-up
    start = time.perf_counter()
    index.search(asked, 10)
    return round(1000 * (time.perf_counter() - start) / len(queries), 4)


def train(kind: str, seed: int, dims: list[int]) -> str:
    """The model folder of one CPU-preset run (trained here unless its model and results are there)."""
    from pathlib import Path

    from sentlab.encoders.matryoshka import trained_dims

    folder = Path("runs/storage") / f"{kind}-{seed}"
    done = (folder / "model").is_dir() and (folder / "results.json").is_file()
    wanted = sorted(dims, reverse=True) if kind == "matryoshka" else None
    if done and trained_dims(folder / "model") != wanted:  # a run of other dimensions is not reused
        raise SystemExit(f"{folder}: trained at {trained_dims(folder / 'model')}, not {wanted}; remove it to retrain")
    if not done:
        sets = {"train.seed": seed}
        if kind == "matryoshka":
            sets["train.matryoshka_dims"] = f"[{', '.join(map(str, dims))}]"
        train_preset("simcse-unsup-minilm-cpu", folder, sets, child=True)
    return str(folder / "model")


def spread(runs: list[dict]) -> dict:
    """Each setting's mean and standard deviation (ddof 1) over the runs, of each score."""
    out = {}
    for setting in runs[0]:
        out[setting] = {
            key: over_seeds([run[setting][key] for run in runs], digits=2)
            for key in ("sts_avg", "evalrank_mrr")
            if key in runs[0][setting]
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["minilm"])
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 256, 128, 64])
    parser.add_argument("--precisions", nargs="+", default=["float32", "int8", "binary"], choices=PRECISIONS)
    parser.add_argument("--corpus", type=int, default=100_000, help="Wikipedia sentences searched (0: no search)")
    parser.add_argument("--train-seeds", type=int, nargs="*", default=[], help="train plain and Matryoshka runs")
    parser.add_argument(
        "--search-only", action="store_true", help="time the searches of the first model only (no scores, no PCA)"
    )
    args = parser.parse_args()
    if args.search_only and (args.train_seeds or not args.corpus):
        parser.error("--search-only times the first model's searches: give --corpus, not --train-seeds")
    trained = {kind: [train(kind, seed, args.dims) for seed in args.train_seeds] for kind in ("plain", "matryoshka")}
    models = [*args.models, *trained["plain"], *trained["matryoshka"]]

    from sentlab.cache import EmbeddingStore
    from sentlab.data.tables import sentence_table
    from sentlab.encoders import load_encoder
    from sentlab.encoders.backends import pin_float32_math
    from sentlab.encoders.matryoshka import trained_dims, truncate
    from sentlab.evaluation.quantized import QuantizedEmbeddings, calibration_sample
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.paths import data_dir
    from sentlab.progress import set_quiet
    from sentlab.quantize import stored_shape

    set_quiet(True)
    root = data_dir()
    pin_float32_math()  # fp32 is IEEE fp32 on every device
    wiki = sentence_table(root / "wikipedia" / "wiki_sentences.txt")
    calibration = calibration_sample(root / "wikipedia" / "wiki_sentences.txt")
    out: dict = {"models": {}, "calibration": {"sentences": len(calibration), "seed": 0}}
    for position, name in enumerate(models):
        from sentlab.encoders.loading import resolve_model_path

        cache = EmbeddingCache(load_encoder(name), store=EmbeddingStore.default())
        results: dict = {"trained_dims": trained_dims(resolve_model_path(name)), "settings": {}}
        for dims in args.dims if not args.search_only else []:
            for precision in args.precisions:
                view = QuantizedEmbeddings(cache, dims, precision, calibration)
                row = scores(view, root)
                (_, width), dtype = stored_shape(1, dims, precision)
                row["bytes"] = width * dtype.itemsize
                results["settings"][f"{dims}_{precision}"] = row
                print(f"{name} {dims} {precision}: {row}", file=sys.stderr)
        if position == 0:
            fit = cache.encode(calibration, batch_size=128)
            for dims in args.dims if not args.search_only else []:
                if dims < fit.shape[1]:
                    results["settings"][f"pca_{dims}"] = {**scores(PCAView(cache, dims, fit), root), "bytes": 4 * dims}
                    print(f"{name} pca {dims}: {results['settings'][f'pca_{dims}']}", file=sys.stderr)
            if args.corpus:
                rows = wiki.select(range(min(args.corpus + 1000, len(wiki))))["sentence"]
                vectors = cache.encode(rows, batch_size=128)
                results["search"] = {"corpus": len(rows) - 1000, "queries": 1000, "ms_a_query": {}}
                for dims in args.dims:
                    short = truncate(vectors, dims)
                    corpus, queries = short[1000:], short[:1000]
                    ranges = {  # the calibration's, as the quality columns' codes have them
                        p: QuantizedEmbeddings(cache, dims, p, calibration).ranges for p in args.precisions
                    }
                    results["search"]["ms_a_query"][str(dims)] = {
                        p: search_ms(corpus, queries, p, ranges[p]) for p in args.precisions
                    }
                print(f"{name} search: {results['search']}", file=sys.stderr)
        out["models"][name] = results
    if args.train_seeds:
        out["trained"] = {kind: spread([out["models"][m]["settings"] for m in runs]) for kind, runs in trained.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
