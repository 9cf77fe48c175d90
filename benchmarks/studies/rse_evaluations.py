"""RSE's evaluations on real weights: an RSE model, the start model and the "All-Above"
baseline (Table 1: the same sources merged into plain pairs, supervised SimCSE) side by side.

Feeds: records rse-evaluations-minilm; pages docs/methods/rse.md, docs/methods/tsdae.md,
docs/results.md.

* link prediction (App. B, Table 7) on held-out triples: RSE's relation vectors against the start
  model's and All-Above's plain cosine (relation vectors 0); filtered, candidates = every tail of
  the split (:mod:`sentlab.evaluation.link_prediction`);
* STS (seven tasks, Spearman x 100): RSE scored with the mix entailment 1 + duplicate_question 0.5
  (forward, and the released code's max over both directions) and by plain cosine; start; All-Above;
* USEB (Fig. 5) under every relation of the RSE model and the mix: CQADupStack MAP@100 over a fixed
  forum subset (the whole benchmark takes ~30 min per model on two CPU cores) and TwitterPara AP;
* EvalRank (MRR, toolkit and corrected): RSE's relational mix (query rows, uncentred) and plain
  cosine (the toolkit's centred protocol); start; All-Above;
* the relation-similarity heatmap (Fig. 4) and a Table-9 case study (every relation's score of a
  few pairs, beside the start model's cosine).

Prints one JSON object; the heatmap goes to OUTPUT/relation_similarity.{png,json}, the USEB bars
by relation (Fig. 5) to OUTPUT/scores_by_relation.{png,json}.

    python -m benchmarks.studies.rse_evaluations --rse runs/rse-minilm-cpu/model \\
        --all-above runs/rse-all-above-minilm-cpu/model --output runs/rse-eval
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

CASES = [  # Table 9's four pairs, then two of our own (a contradiction, an unrelated pair)
    (
        "Where is ACL 2023 hold?",
        "The 61st Annual Meeting of the Association for Computational Linguistics (ACL23) "
        "will take place in Toronto, Canada from July 9th to July 14th, 2023.",
    ),
    (
        "Is Singapore a city or state?",
        "Singapore is a sunny, tropical island in South-east Asia, off the southern tip of the Malay Peninsula.",
    ),
    ("Giraffes can consume 75 pounds of food a day.", "Giraffes can eat up to 75 pounds of food in a day."),
    ("Young man breakdancing on a sidewalk in front of many people.", "A man dancing outside."),
    ("A dog is running through the snow.", "A cat is sleeping on the sofa."),
    ("How do I learn French quickly?", "The stock market fell sharply on Monday."),
]
STS_MIX = {"entailment": 1.0, "duplicate_question": 0.5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rse", required=True, help="an RSE model folder")
    parser.add_argument("--all-above", default=None, help="the All-Above baseline's model folder")
    parser.add_argument("--start", default="minilm", help="the start model (default: the packaged MiniLM)")
    parser.add_argument("--start-pooler", default="mean")
    parser.add_argument("--heldout", default="link-prediction/rse-heldout")
    parser.add_argument("--cap", type=int, default=2000, help="held-out triples per source (App. B: 2,000)")
    parser.add_argument("--forums", default="mathematica,webmasters")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output", default="runs/rse-eval")
    args = parser.parse_args()

    import numpy as np

    from sentlab.data.relations import relation_counts
    from sentlab.data.useb import load_cqadupstack, load_twitterpara, task_folder
    from sentlab.encoders import load_encoder
    from sentlab.evaluation import CosineScorer, evaluate_sts
    from sentlab.evaluation.evalrank import load_evalrank, score_evalrank
    from sentlab.evaluation.link_prediction import link_prediction
    from sentlab.evaluation.relational import RelationalScorer, RelationTable
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.evaluation.useb import score_cqadupstack, score_twitterpara
    from sentlab.methods.rse import read_sources_file
    from sentlab.progress import set_quiet
    from sentlab.reporting.plots import plot_relation_similarity, plot_scores_by_relation

    set_quiet(True)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    models = {"start": load_encoder(args.start, pooler=args.start_pooler), "rse": load_encoder(args.rse)}
    if args.all_above:
        models["all_above"] = load_encoder(args.all_above)
    caches = {name: EmbeddingCache(model.eval()) for name, model in models.items()}
    table = RelationTable.load(args.rse, models["rse"].get_embedding_dimension())

    def relational(weights, direction="forward"):
        return RelationalScorer(caches["rse"], table, weights, direction=direction)

    scorers = {
        "start": CosineScorer(caches["start"]),
        "rse_cosine": CosineScorer(caches["rse"]),
        "rse_mix": relational(STS_MIX),
        "rse_mix_max": relational(STS_MIX, "max"),
    }
    if "all_above" in caches:
        scorers["all_above"] = CosineScorer(caches["all_above"])
    for name in table.names:
        scorers[f"rse_{name}"] = relational({name: 1.0})
    summary: dict = {
        "models": {"start": args.start, "rse": args.rse, "all_above": args.all_above},
        "relations": table.names,
        "sts_mix": STS_MIX,
        "seconds": {},
    }

    # link prediction
    t0 = time.perf_counter()
    triples = read_sources_file(args.heldout, args.cap, seed=0)
    summary["link_prediction"] = {
        "heldout": args.heldout,
        "counts": relation_counts(triples),
        "candidates": "split",
        "filtered": True,
    }
    zeros = RelationTable.zeros(list(dict.fromkeys(t.relation for t in triples)), table.vectors.shape[1])
    for name, cache in caches.items():
        summary["link_prediction"][name] = link_prediction(cache.encode, table if name == "rse" else zeros, triples)
    summary["seconds"]["link_prediction"] = round(time.perf_counter() - t0, 1)

    # STS
    t0 = time.perf_counter()
    summary["sts"] = {}
    for name in ("start", "all_above", "rse_cosine", "rse_mix", "rse_mix_max"):
        if name in scorers:
            report = evaluate_sts(scorers[name], args.data_dir, extras=False)
            summary["sts"][name] = {
                "avg": report.summary["sts_avg"],
                **{task: r.spearman for task, r in report.tasks.items()},
            }
    summary["seconds"]["sts"] = round(time.perf_counter() - t0, 1)

    # USEB: CQADupStack (forum subset) and TwitterPara, every relation
    t0 = time.perf_counter()
    everything = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    forums = {name: everything[name] for name in args.forums.split(",")}
    twitter = load_twitterpara(task_folder("TwitterPara", args.data_dir))
    summary["useb"] = {"cqadupstack_forums": list(forums)}
    for name, scorer in scorers.items():
        if name == "rse_mix_max":
            continue  # retrieval is scored forward (query as the head)
        model = "rse" if name.startswith("rse") else name
        query_rows = getattr(scorer, "query_rows", None)
        summary["useb"][name] = {
            "cqadupstack_map100": score_cqadupstack(
                caches[model].encode, forums, device=models[model].device, query_rows=query_rows
            ).main,
            "twitterpara_ap": score_twitterpara(caches[model].encode, twitter, query_rows).main,
        }
    summary["seconds"]["useb"] = round(time.perf_counter() - t0, 1)
    by_relation = {
        name.removeprefix("rse_"): {"CQADupStack": r["cqadupstack_map100"], "TwitterPara": r["twitterpara_ap"]}
        for name, r in summary["useb"].items()
        if isinstance(r, dict) and name.startswith("rse_")
    }
    plot_scores_by_relation(by_relation, out, title=f"{args.rse}: USEB (CQADupStack {args.forums}) by relation")

    # EvalRank
    t0 = time.perf_counter()
    data = load_evalrank(args.data_dir)
    summary["evalrank"] = {}
    for name in ("start", "all_above", "rse_cosine", "rse_mix"):
        if name in scorers:
            model = "rse" if name.startswith("rse") else name
            result = score_evalrank(caches[model].encode, data, getattr(scorers[name], "query_rows", None))
            summary["evalrank"][name] = {k: result.scores[k] for k in ("mrr", "hits@1", "hits@3", "mrr_corrected")}
            summary["evalrank"][name]["centred"] = result.extra["centred"]
    summary["seconds"]["evalrank"] = round(time.perf_counter() - t0, 1)

    # Fig. 4 and Table 9
    similarity = table.similarity()
    plot_relation_similarity(table.names, similarity, out, title=f"{args.rse}: relation vectors")
    summary["relation_similarity"] = np.round(similarity, 4).tolist()
    summary["relation_vector_norms"] = dict(
        zip(table.names, np.round(np.linalg.norm(table.vectors, axis=1), 4).tolist())
    )
    sample = caches["rse"].encode([t.head for t in triples[::50]])
    summary["embedding_norm_median"] = round(float(np.median(np.linalg.norm(sample, axis=1))), 4)
    summary["embedding_norm_sample"] = len(sample)
    first, second = [a for a, _ in CASES], [b for _, b in CASES]
    per_relation = scorers["rse_mix"].relation_scores(first, second)
    start_cosine = scorers["start"].score(first, second)
    summary["case_study"] = [
        {"pair": [a, b], "rse": dict(zip(table.names, np.round(row, 4).tolist())), "start_cosine": round(float(c), 4)}
        for a, b, row, c in zip(first, second, per_relation, start_cosine)
    ]
    summary["seconds"]["total"] = round(time.perf_counter() - started, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
