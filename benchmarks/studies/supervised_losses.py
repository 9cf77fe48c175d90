"""Which loss to fine-tune on scored pairs: the ``stsb-minilm-cpu`` preset with each of ``cosine-mse``,
``cosent`` and ``angle`` (and each learning rate and epoch count asked), over seeds, beside
sentence-transformers' own trainer with the same loss class on the same settings (batch 16, warmup 0.1,
fp32, the same seed, no dev selection: the last step is the model). Feeds the own-data guide's table
and its advice on the loss (docs/guides/own-data.md; record ``supervised-losses-minilm``).

Feeds: records supervised-grid-minilm, supervised-losses-minilm; pages docs/guides/own-data.md,
docs/results.md, docs/scope.md.

The setting is *chosen* on STS-B dev (the mean over seeds of sentlab's runs) and *confirmed* on STS-B
test: the multi-bootstrap over seeds and items (:func:`sentlab.evaluation.uncertainty.seed_item_difference`)
of the chosen setting minus each other setting, and minus the start model. The other settings' own test
scores are printed under ``not_used_for_choosing``. sentlab's run minus the trainer's run of each setting
has the same interval (the two paths are the same computation when it holds 0 and every seed is equal).

    python -m benchmarks.studies.supervised_losses --seeds 1 2 3 --output runs/supervised-losses
    python -m benchmarks.studies.supervised_losses --trainer none --output runs/supervised-losses --settings \
        cosine-mse:2e-5:1 cosent:2e-5:1 angle:2e-5:1 cosine-mse:5e-5:1 cosent:5e-5:1 angle:5e-5:1 cosine-mse:2e-5:2

A setting's runs live in ``OUTPUT/<loss>-lr<lr>-ep<epochs>/<path>-seed<seed>``. A finished run is
reused only when it was trained from what this one would train from (sentlab's run fingerprint; for
the trainer, its ``settings.json``: the preset, the arguments, this script's sha256, the library
versions); otherwise its folder is trained again. Scores are reused only for the weights they scored.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import shutil
import sys
from pathlib import Path

from benchmarks.common import sentlab, spread
from sentlab.paths import write_text_atomic

PRESET = "stsb-minilm-cpu"
ST_LOSSES = {"cosine-mse": "CosineSimilarityLoss", "cosent": "CoSENTLoss", "angle": "AnglELoss"}


def sentlab_sets(loss: str, lr: float, epochs: int, seed: int, folder: Path) -> dict:
    return {
        "supervised.loss": loss,
        "train.learning_rate": lr,
        "train.epochs": epochs,
        "train.seed": seed,
        "train.output_dir": folder,
        "eval.dev_task": "none",
        "eval.final_tasks": "[]",
    }


def sentlab_finished(loss: str, lr: float, epochs: int, seed: int, folder: Path) -> bool:
    """A finished run in ``folder`` trained from what this one would train from (sentlab's run
    fingerprint: the resolved config and the training file's sha256)."""
    from sentlab.methods import load_config
    from sentlab.training.run_folder import RunPaths, run_fingerprint

    cfg = load_config(PRESET, [f"{k}={v}" for k, v in sentlab_sets(loss, lr, epochs, seed, folder).items()])
    paths = RunPaths(folder)
    try:
        return (
            json.loads(paths.fingerprint.read_text("utf-8")) == run_fingerprint(cfg)
            and (paths.model / "modules.json").is_file()
        )
    except (OSError, ValueError):
        return False


def sentlab_run(loss: str, lr: float, epochs: int, seed: int, folder: Path) -> Path:
    sets = sentlab_sets(loss, lr, epochs, seed, folder)  # sentlab_finished decides a rerun, not a reuse
    sentlab(
        ["train", PRESET, "--quiet", *itertools.chain.from_iterable(("--set", f"{k}={v}") for k, v in sets.items())]
    )
    return folder / "model"


def trainer_settings(loss: str, lr: float, epochs: int, seed: int) -> dict:
    """What a trainer run learns from: the preset's resolved tree, the arguments, this script and the
    library versions (a run folder whose settings.json differs is trained again)."""
    import sentence_transformers
    import transformers

    from sentlab.cache import file_sha256
    from sentlab.methods import load_config

    return {
        "preset": load_config(PRESET, []).to_tree(),
        "run": [loss, lr, epochs, seed],
        "script_sha256": file_sha256(Path(__file__)),
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
    }


def trainer_finished(loss: str, lr: float, epochs: int, seed: int, folder: Path) -> bool:
    try:
        recorded = json.loads((folder / "settings.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    wanted = json.loads(json.dumps(trainer_settings(loss, lr, epochs, seed), default=str))
    return recorded == wanted and (folder / "model" / "modules.json").is_file()


def trainer_run(loss: str, lr: float, epochs: int, seed: int, folder: Path) -> Path:
    """sentence-transformers' trainer on the preset's data and settings, read independently of sentlab's
    supervised method (the STS-B file read by sentlab's STS reader, the scores divided by 5)."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, losses
    from sentence_transformers.training_args import SentenceTransformerTrainingArguments

    from sentlab.data.sts import load_sts_task
    from sentlab.devices import training_device
    from sentlab.encoders.loading import resolve_model_path
    from sentlab.methods import load_config

    config = load_config(PRESET, [])
    train = load_sts_task("STS-B", split="train")
    data = Dataset.from_dict(
        {"sentence1": train.sentences1, "sentence2": train.sentences2, "score": [s / 5 for s in train.scores]}
    )
    from sentlab.encoders.backends import pin_float32_math

    pin_float32_math()  # fp32 means IEEE fp32, as sentlab's run pins it
    model = SentenceTransformer(resolve_model_path(config.model.name), device=str(training_device()))
    saved_length, model.max_seq_length = model.max_seq_length, config.model.max_seq_length
    loss_class = getattr(losses, ST_LOSSES[loss])
    objective = loss_class(model) if loss == "cosine-mse" else loss_class(model, scale=20.0)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(folder / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=config.train.batch_size,
        learning_rate=lr,
        warmup_ratio=config.train.warmup_ratio,
        seed=seed,
        fp16=False,
        bf16=False,
        save_strategy="no",
        eval_strategy="no",
        report_to=[],
        disable_tqdm=True,
    )
    with contextlib.redirect_stdout(sys.stderr):  # the trainer's log lines: stdout holds the JSON alone
        SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=objective).train()
    model.max_seq_length = saved_length  # saved at the start model's own length, as sentlab saves
    model.save(str(folder / "model"))
    write_text_atomic(
        folder / "settings.json", json.dumps(trainer_settings(loss, lr, epochs, seed), default=str) + "\n"
    )
    return folder / "model"


def scored(model_path: Path, output: Path) -> dict:
    """STS-B dev and test Spearman (x100) of the model, with the test items; kept in ``output`` with
    the sha256 of the weights scored, and read back only for those weights."""
    from sentlab.cache import file_sha256

    weights = file_sha256(next(Path(model_path).rglob("model.safetensors")))
    try:
        kept = json.loads(output.read_text("utf-8"))
        if kept.get("weights_sha256") == weights:
            return kept
    except (OSError, ValueError):
        pass
    from sentlab.data.sts import load_sts_task
    from sentlab.encoders.loading import load_encoder
    from sentlab.evaluation.scoring import CosineScorer
    from sentlab.evaluation.sts import score_task

    scorer = CosineScorer(load_encoder(str(model_path)))
    dev = score_task(scorer, load_sts_task("STS-B", split="dev"), split="dev")
    test = score_task(scorer, load_sts_task("STS-B", split="test"), items=True)
    result = {"dev": dev.spearman, "test": test.spearman, "test_items": test.extra["items"], "weights_sha256": weights}
    write_text_atomic(output, json.dumps(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--losses", nargs="+", default=list(ST_LOSSES), choices=list(ST_LOSSES))
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[2e-5])
    parser.add_argument("--epochs", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--settings",
        nargs="+",
        default=None,
        metavar="LOSS:LR:EPOCHS",
        help="the settings to run, e.g. cosent:5e-5:1 (instead of every combination of the three lists above)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument(
        "--trainer",
        choices=["all", "none"],
        default="all",
        help="none: sentlab's runs only (a grid after the paths were shown equal at the preset's settings)",
    )
    args = parser.parse_args()
    if len(args.seeds) < 3:
        parser.error("a comparison between trained models needs at least three seeds")
    grid = list(itertools.product(args.losses, args.learning_rates, args.epochs))
    if args.settings:
        try:
            grid = [(loss, float(lr), int(epochs)) for loss, lr, epochs in (s.split(":") for s in args.settings)]
        except ValueError:
            parser.error("--settings: each is LOSS:LR:EPOCHS, e.g. cosent:5e-5:1")
        if unknown := sorted({loss for loss, _, _ in grid} - set(ST_LOSSES)):
            parser.error(f"--settings: unknown loss {unknown[0]!r} (choose from {', '.join(ST_LOSSES)})")

    from sentlab.encoders.loading import resolve_model_path
    from sentlab.evaluation.uncertainty import seed_item_difference
    from sentlab.methods import load_config

    args.output.mkdir(parents=True, exist_ok=True)
    start = scored(Path(resolve_model_path(load_config(PRESET, []).model.name)), args.output / "start.json")
    settings = {}
    for loss, lr, epochs in grid:
        name = f"{loss}-lr{lr:g}-ep{epochs}"
        paths = {
            "sentlab": (sentlab_finished, sentlab_run),
            **({"trainer": (trainer_finished, trainer_run)} if args.trainer == "all" else {}),
        }
        rows = {path: {} for path in paths}
        for seed in args.seeds:
            for path, (finished, train) in paths.items():
                folder = args.output / name / f"{path}-seed{seed}"
                if not finished(loss, lr, epochs, seed, folder):
                    shutil.rmtree(folder, ignore_errors=True)  # another setting's or an unfinished run
                    train(loss, lr, epochs, seed, folder)
                rows[path][seed] = scored(folder / "model", folder / "sts-b.json")
        settings[name] = {
            "loss": loss,
            "learning_rate": lr,
            "epochs": epochs,
            **{
                path: {
                    "dev": spread([r["dev"] for r in rows[path].values()]),
                    "test": spread([r["test"] for r in rows[path].values()]),
                    "per_seed": {s: {"dev": r["dev"], "test": r["test"]} for s, r in rows[path].items()},
                }
                for path in rows
            },
            "_items": {path: [r["test_items"] for r in rows[path].values()] for path in rows},
        }
    chosen = max(settings, key=lambda n: settings[n]["sentlab"]["dev"]["mean"])
    chosen_items = settings[chosen]["_items"]["sentlab"]
    confirmed = {
        "minus_start": seed_item_difference(chosen_items, [start["test_items"]]).to_dict(),
        **{
            f"minus_{name}": seed_item_difference(chosen_items, entry["_items"]["sentlab"]).to_dict()
            for name, entry in settings.items()
            if name != chosen
        },
    }
    for entry in settings.values():
        items = entry.pop("_items")
        if "trainer" in items:
            entry["sentlab_minus_trainer_test"] = seed_item_difference(items["sentlab"], items["trainer"]).to_dict()
    test_of = {name: entry["sentlab"].pop("test") for name, entry in settings.items()}
    for entry in settings.values():
        for seed_scores in entry["sentlab"]["per_seed"].values():
            seed_scores.pop("test")
    print(
        json.dumps(
            {
                "preset": PRESET,
                "start": {"dev": start["dev"], "test": start["test"]},
                "seeds": args.seeds,
                "chosen_on_dev": chosen,
                "chosen_test": test_of[chosen],
                "confirmed_on_test": confirmed,
                "settings": settings,
                "not_used_for_choosing": {"test": {n: t for n, t in test_of.items() if n != chosen}},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
