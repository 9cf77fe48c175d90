"""Search over stored codes: sentlab's centred codes (:class:`sentlab.search.CodeIndex`) against
sentence-transformers' own uint8 and binary search on the same passages and queries.

Feeds: records index-codes-minilm; pages docs/guides/retrieval.md.

The retrieval page's collection, CQADupStack's test forum (``--forum``, its titles as passages and its
duplicate questions as queries), encoded once by ``--model`` (unit vectors, the model's query and
document prompts where it has them). Each index answers every query's top 10 from twice that many
candidates ranked again by the float query: sentence-transformers' ``semantic_search_faiss`` over
``quantize_embeddings`` (uint8 calibrated on the passages' ranges, ubinary one sign bit a dimension)
and sentlab's ``CodeIndex`` (faiss's 8-bit scalar quantizer searched with the float query; one bit a
dimension above the passages' mean). Each row gives Recall@10 kept against float32's exact top 10,
nDCG@10 (the qrels' grades) and its fraction of float32's, the bytes a passage takes in the searched
index and the search time a query, the fastest of ``--rounds`` (float32: numpy's product with every
passage and the sort; sentence-transformers': the time it returns; sentlab's: the whole ``search``
call, rescoring included). Prints one JSON object.

    python -m benchmarks.perf.index_codes --model minilm --forum mathematica --rounds 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import emit


def ndcg_at_10(ranked: np.ndarray, ids: list[str], relevant: dict[str, dict[str, float]], queries: list[str]) -> float:
    """Mean nDCG@10 over the queries (trec_eval's, through sentlab's task-card metric)."""
    from sentlab.evaluation.task_cards import ranking_metrics

    scores = []
    for query, row in zip(queries, ranked):
        grades = relevant[query]
        found = [grades.get(ids[i], 0.0) for i in row[:10]]
        scores.append(ranking_metrics(found, list(grades.values()), 10)["ndcg@10"])
    return float(np.mean(scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--forum", default="mathematica")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentence_transformers.util.quantization import quantize_embeddings, semantic_search_faiss

    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.encoders import load_encoder
    from sentlab.encoders.prompts import role_prompt
    from sentlab.search import CodeIndex

    forum = load_cqadupstack(task_folder("CQADupStack", args.data_dir))[args.forum]
    encoder = load_encoder(args.model).eval()
    ids = sorted(forum.corpus)
    asked = sorted(forum.relevant)
    relevant = {q: {d: 1.0 for d in forum.relevant[q]} for q in asked}
    prompts = {role: role_prompt(encoder, role) or "" for role in ("query", "document")}
    started = time.perf_counter()
    passages = encoder.encode(
        [prompts["document"] + forum.corpus[i] for i in ids], batch_size=128, normalize_embeddings=True
    ).astype(np.float32)
    queries = encoder.encode(
        [prompts["query"] + forum.queries[q] for q in asked], batch_size=128, normalize_embeddings=True
    ).astype(np.float32)
    encode_seconds = time.perf_counter() - started
    seconds = []
    for _ in range(args.rounds):  # float32: every passage scored, the exact top 10
        began = time.perf_counter()
        exact = np.argsort(-(queries @ passages.T), axis=1, kind="stable")[:, :10]
        seconds.append(time.perf_counter() - began)
    float_ndcg = ndcg_at_10(exact, ids, relevant, asked)

    def row(found: np.ndarray, bytes_a_passage: int, seconds: list[float]) -> dict:
        ndcg = ndcg_at_10(found, ids, relevant, asked)
        return {
            "recall_at_10_kept": round(float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact)])), 4),
            "ndcg_at_10": round(100 * ndcg, 2),
            "ndcg_at_10_kept": round(ndcg / float_ndcg, 4),
            "bytes_a_passage": bytes_a_passage,
            "ms_a_query": round(1000 * min(seconds) / len(asked), 4),
        }

    rows = {"float32": row(exact, passages.shape[1] * 4, seconds)}
    for precision in ("uint8", "ubinary"):
        ranges = np.vstack([passages.min(axis=0), passages.max(axis=0)]) if precision == "uint8" else None
        stored = quantize_embeddings(passages, precision, ranges=ranges)
        seconds, found = [], None
        for _ in range(args.rounds):
            hits, took = semantic_search_faiss(
                queries, corpus_embeddings=stored, corpus_precision=precision, top_k=10, ranges=ranges, rescore=True
            )
            seconds.append(took)
            found = np.asarray([[hit["corpus_id"] for hit in row_hits] for row_hits in hits])
        rows[f"{precision} (sentence-transformers)"] = row(found, int(stored.nbytes // len(ids)), seconds)
        index = CodeIndex.build(passages, precision)
        seconds = []
        for _ in range(args.rounds):
            began = time.perf_counter()
            found, _ = index.search(queries, top_k=10, rescore=2)
            seconds.append(time.perf_counter() - began)
        rows[f"{precision} (sentlab, centred)"] = row(found, index.bytes_a_passage, seconds)
    emit(
        {
            "model": args.model,
            "forum": args.forum,
            "passages": len(ids),
            "queries": len(asked),
            "dim": int(passages.shape[1]),
            "prompts": prompts,
            "encode_seconds": round(encode_seconds, 1),
            "float32_ndcg_at_10": round(100 * float_ndcg, 2),
            "rows": rows,
            "rounds": args.rounds,
        }
    )


if __name__ == "__main__":
    main()
