"""SimCSE from sentlab's raw LM, over seeds, against the raw LM's own pooling and the random encoder
it was pre-trained from. Prints one JSON object: each model's STS average and per-task
scores (with ``--baseline-tasks``, also the ranking tasks and the USEB subset here: the "BERT" row of
the papers' tables in miniature), the SimCSE seeds' mean and sd, and the gains over both baselines.

Feeds: records rawlm-simcse; pages docs/methods/index.md, docs/methods/rankcse.md,
docs/methods/rankencoder.md, docs/methods/rawlm.md, docs/methods/simcse.md.

    python -m benchmarks.studies.rawlm_simcse --output runs/rawlm-simcse --seeds 1 2 3
    python -m benchmarks.studies.rawlm_simcse --output runs/rawlm-simcse --raw-lm runs/rawlm-cpu/model

Without --raw-lm, the finished run of --raw-config (rawlm-cpu) is found under its runs
folder by its fingerprint (config and training text); if there is none the benchmark stops and says
how to pre-train it: it never pre-trains one silently. Finished SimCSE seeds are reused. A raw LM
pre-trained in stages (``rawlm-cpu-stage2`` continues another run's model) is traced back
through its run folders' ``model.name`` to the random encoder its first stage started from.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks.common import scores as common_scores
from sentlab.presets import PRESETS_DIR

ROOT = Path(__file__).resolve().parents[2]


def scores(model: Path, pooler: str, output: Path, tasks: str = "sts") -> dict:
    """``sentlab eval`` of ``model`` on ``tasks`` (reused when ``output`` exists): the summary and the
    headline of every task."""
    report = common_scores(model, tasks, output, ["--pooler", pooler])

    def rounded(value: float | None) -> float | None:
        # a record writes a non-finite score (a correlation of constant vectors) as null
        return None if value is None else round(value, 2)

    headlines = {}
    for task, result in report["tasks"].items():
        if "spearman" in result:
            headlines[task] = rounded(result["spearman"])
        elif "kcc" in result:
            headlines[task] = {"kcc": rounded(result["kcc"]), "ndcg": rounded(result["ndcg"])}
        elif "main_metric" in result:
            headlines[task] = rounded(result["scores"][result["main_metric"]])
    summary = {  # numbers, and a null a record wrote for a non-finite one; never a bool or a text
        k: rounded(v)
        for k, v in report["summary"].items()
        if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
    }
    return {**summary, "tasks": headlines}


def random_encoder_of(raw_lm: Path, max_stages: int = 8) -> Path | None:
    """The randomly initialised encoder ``raw_lm`` was pre-trained from: ``RUN/random_init`` beside the
    model, or, for a stage that continued another model (``model.name`` in ``RUN/config.yaml``), that
    model's; None when the chain ends without one (e.g. a downloaded checkpoint)."""
    import yaml

    from sentlab.training.run_folder import RunPaths

    run = raw_lm.parent
    for _ in range(max_stages):
        if (run / "random_init").is_dir():
            return run / "random_init"
        config = RunPaths(run).config
        if not config.is_file():
            return None
        try:
            start = (yaml.safe_load(config.read_text("utf-8")) or {}).get("model", {}).get("name")
        except (yaml.YAMLError, UnicodeDecodeError, AttributeError) as err:
            raise SystemExit(f"{config}: cannot read the run's config ({type(err).__name__})") from None
        if not start:
            return None
        run = Path(start).parent
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True)
    parser.add_argument("--raw-lm", default=None, help="a raw LM folder (default: found by --raw-config)")
    parser.add_argument("--raw-config", default=str(PRESETS_DIR / "rawlm-cpu.yaml"))
    parser.add_argument("--simcse-config", default=str(PRESETS_DIR / "simcse-unsup-rawlm-cpu.yaml"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--set", action="append", default=[], help="SimCSE config override (repeatable)")
    parser.add_argument(
        "--baseline-tasks",
        default="sts,ranking,useb",
        help="what the raw LM and the random encoder are scored on (sentlab eval --tasks)",
    )
    args = parser.parse_args()

    from sentlab.errors import SentlabError
    from sentlab.methods import load_config
    from sentlab.progress import set_quiet
    from sentlab.training.engine import train
    from sentlab.training.run_folder import RunPaths, require_finished_run

    set_quiet(True)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    try:
        raw_lm = (
            Path(args.raw_lm) if args.raw_lm else require_finished_run(load_config(args.raw_config), args.raw_config)
        )
    except SentlabError as err:
        raise SystemExit(f"{err} (--raw-lm PATH)") from None
    tasks = args.baseline_tasks
    suffix = tasks.replace(",", "-")
    rows = {
        "raw LM, mean": scores(raw_lm, "mean", output / f"rawlm-mean-{suffix}.json", tasks),
        "raw LM, first-last": scores(raw_lm, "first_last_avg", output / f"rawlm-first-last-{suffix}.json", tasks),
    }
    random_init = random_encoder_of(raw_lm)
    if random_init is not None:
        rows["random encoder, mean"] = scores(random_init, "mean", output / f"random-mean-{suffix}.json", tasks)
    seeds = {}
    for seed in args.seeds:
        folder = output / f"simcse-seed{seed}"
        cfg = load_config(
            args.simcse_config,
            [
                *args.set,
                f"model.name={raw_lm}",
                f"train.seed={seed}",
                f"train.output_dir={folder}",
                "train.progress_bar=false",
            ],
        )
        if not RunPaths(folder).results.is_file():
            train(cfg, resume=RunPaths(folder).checkpoints.is_dir())
        report = json.loads(RunPaths(folder).results.read_text("utf-8"))
        seeds[seed] = report["summary"]["sts_avg"]
    if any(value is None for value in seeds.values()):
        # a record writes a non-finite average as null: no mean to report, and the run says so
        raise SystemExit(f"error: a SimCSE seed's sts_avg is not a finite number: {seeds}")
    mean = statistics.mean(seeds.values())
    sd = statistics.stdev(seeds.values()) if len(seeds) > 1 else 0.0
    print(
        json.dumps(
            {
                "raw_lm": str(raw_lm),
                "baselines": rows,
                "simcse_sts_avg_by_seed": seeds,
                "simcse_mean": round(mean, 2),
                "simcse_sd": round(sd, 2),
                "gain_over": {  # a baseline without a finite average has no gain to give (null)
                    name: None if row.get("sts_avg") is None else round(mean - row["sts_avg"], 2)
                    for name, row in rows.items()
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
