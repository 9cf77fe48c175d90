"""The TSDAE paper's "NLI+STS -> target" setting in miniature (Sec. 4-6, Tables 2-3): start from the
packaged all-MiniLM-L6-v2 (trained on NLI, STS and more), adapt it without labels to CQADupStack
titles with TSDAE, CT, MLM and SimCSE (same sentences, same steps, batch 8) and BERT-flow (same
sentences), and score each and the start on CQADupStack (MAP@100 over a fixed forum subset),
TwitterPara (AP) and STS (the seven tasks).

Training text: the corpus titles of the chosen forums (never their queries), shuffled with the
seed, the first steps x batch of them. Each arm's run folder and results.json go under OUTPUT;
``sentlab report OUTPUT/*/results.json`` gives the tables. Prints one JSON object: per arm the
scores, training seconds and evaluation seconds; with three or more arms, ``spearman_sts_vs``: the
Spearman correlation over the arms between STS avg and each domain score.

    python benchmarks/domain_adaptation.py --output runs/domain --steps 500
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

ARMS = {  # arm -> (config, overrides): the CPU presets, all with the model's own mean pooling
    "tsdae": ("tsdae-minilm-cpu", []),
    "ct": ("ct-minilm-cpu", []),
    "mlm": ("mlm-minilm-cpu", []),
    "simcse": ("simcse-unsup-minilm-cpu", ["model.pooler=mean", "train.learning_rate=5e-5", "eval.dev_task=none"]),
    "bert-flow": ("bertflow-minilm-cpu", []),
    "tsdae-untied": ("tsdae-minilm-cpu", ["tsdae.tie=false"]),  # App. A's other tying (not a default arm)
}
DEFAULT_ARMS = ["start", "tsdae", "ct", "mlm", "simcse", "bert-flow"]


def domain_report(model, name: str, forums: dict, data_dir: str | None, sts_tasks=None, items: bool = False):
    """The TSDAE paper's domain tasks on a forum subset: CQADupStack MAP@100 over ``forums`` (each its
    own pool), TwitterPara AP, and the STS tasks (all seven by default); ``items``: keep what each
    headline is computed from (``sentlab.evaluation.uncertainty``)."""
    from sentlab.data.sts import STS_TASKS
    from sentlab.data.useb import load_twitterpara, task_folder
    from sentlab.evaluation import CosineScorer, evaluate_sts
    from sentlab.evaluation.results import EvalReport
    from sentlab.evaluation.scoring import EmbeddingCache
    from sentlab.evaluation.useb import score_cqadupstack, score_twitterpara

    cache = EmbeddingCache(model)
    report = EvalReport(model=name, settings={"cqadupstack_forums": sorted(forums)})
    report.tasks["CQADupStack"] = score_cqadupstack(cache.encode, forums, device=model.device, items=items)
    report.tasks["TwitterPara"] = score_twitterpara(
        cache.encode, load_twitterpara(task_folder("TwitterPara", data_dir)), items=items
    )
    evaluate_sts(
        CosineScorer(cache, name=name),
        data_dir,
        tasks=sts_tasks or tuple(STS_TASKS),
        report=report,
        extras=False,
        items=items,
    )
    return report


def evaluate(model, name: str, forums: dict, data_dir: str | None, out: Path) -> dict:
    report = domain_report(model, name, forums, data_dir)
    report.write(out / "results.json")
    return {
        "cqadupstack_map100": report.tasks["CQADupStack"].main,
        "twitterpara_ap": report.tasks["TwitterPara"].main,
        "sts_avg": report.summary["sts_avg"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="runs/domain")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--forums", default="mathematica,webmasters")
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS), help=f"from start, {', '.join(ARMS)}")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from sentlab.data.useb import load_cqadupstack, task_folder
    from sentlab.encoders import load_encoder
    from sentlab.methods import load_config
    from sentlab.progress import set_quiet
    from sentlab.training.engine import train

    set_quiet(True)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    everything = load_cqadupstack(task_folder("CQADupStack", args.data_dir))
    forums = {name: everything[name] for name in args.forums.split(",")}
    titles = sorted({title for forum in forums.values() for title in forum.corpus.values()})
    random.Random(args.seed).shuffle(titles)
    n = args.steps * args.batch_size
    train_file = out / "train_titles.txt"
    train_file.write_text("".join(" ".join(t.split()) + "\n" for t in titles[:n]), encoding="utf-8")

    summary = {
        "forums": list(forums),
        "train_sentences": n,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "corpus_titles_available": len(titles),
        "arms": {},
    }
    for arm in args.arms.split(","):
        folder = out / arm
        started = time.perf_counter()
        if arm == "start":
            model, train_seconds = load_encoder("minilm", pooler="mean"), 0.0
        else:
            config, extra = ARMS[arm]
            overrides = [
                f"data.train={train_file}",
                "data.limit=null",
                f"train.max_steps={args.steps}",
                f"train.batch_size={args.batch_size}",
                f"train.output_dir={folder}",
                f"train.seed={args.seed}",
                "train.progress_bar=false",
                "train.eval_steps=100000",
                *extra,
            ]
            if args.data_dir:
                overrides.append(f"data.data_dir={args.data_dir}")
            paths = train(load_config(config, overrides), evaluate=False)
            train_seconds = time.perf_counter() - started
            model = load_encoder(paths.model)
        eval_started = time.perf_counter()
        scores = evaluate(model.eval(), arm, forums, args.data_dir, folder)
        summary["arms"][arm] = {
            **scores,
            "train_seconds": round(train_seconds, 1),
            "eval_seconds": round(time.perf_counter() - eval_started, 1),
        }
    arms = summary["arms"]
    if len(arms) >= 3:  # does STS move with the domain tasks over the arms (TSDAE Sec. 6.1)?
        from scipy.stats import spearmanr

        sts = [a["sts_avg"] for a in arms.values()]
        summary["spearman_sts_vs"] = {
            task: float(spearmanr(sts, [a[task] for a in arms.values()]).statistic)
            for task in ("cqadupstack_map100", "twitterpara_ap")
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
