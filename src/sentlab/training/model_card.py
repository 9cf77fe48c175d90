"""The model card of a saved model: sentence-transformers' own card, told what sentlab knows.

sentence-transformers writes ``README.md`` into every saved folder from its model card data
(:class:`~sentence_transformers.SentenceTransformerModelCardData`: base model, training data, tags,
citations, the trainer's hyper-parameters and evaluator scores). :func:`describe_run`, before
training, gives it what it cannot find out on its own in a sentlab run: the start model's hub id (a
named model; offline, sentence-transformers cannot check it and writes "Unknown"), the training
data's name (a memory-mapped table of a local file is otherwise an "Unnamed Dataset") and sentlab's
tags. Each sentlab loss cites its paper through its own ``citation``, as sentence-transformers'
losses do, and :func:`keep_card_data` carries all of it to a final model rebuilt without its
training-only modules. Once the final scores exist, :func:`write_sentlab_section` adds
one section of what a reader needs to trust and reuse the model: the method and paper, the start
model, the training data (file, rows, sha256), the settings that matter, the dev score and the STS
scores beside the start model's, sentlab's version, the config (copied into the folder) and the
command that reproduces it, and, for a RankEncoder or RSE folder, what plain sentence-transformers
keeps and what it loses.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer

from sentlab.training.config import TrainConfig

CONFIG_FILE = "sentlab_config.yaml"  # the run's config, copied into the model folder
BEGIN, END = "<!-- sentlab:card begin -->", "<!-- sentlab:card end -->"
HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2"}  # sentlab's aliases

# method -> its paper, as the card names it; the citation itself is the loss's own ``citation`` (each
# loss cites its paper, as sentence-transformers' losses do, and its card lists it)
PAPERS: dict[str, str] = {
    "simcse-unsup": "SimCSE (Gao et al. 2021)",
    "simcse-sup": "SimCSE (Gao et al. 2021)",
    "rankencoder": "RankEncoder (Seonwoo et al. 2023)",
    "rankcse": "RankCSE (Liu et al. 2023)",
    "rse": "RSE (Wang and Li 2022)",
    "tsdae": "TSDAE (Wang et al. 2021)",
    "ct": "Contrastive Tension (Carlsson et al. 2021)",
    "bert-flow": "BERT-flow (Li et al. 2020)",
    "mlm": "BERT's masked language model (Devlin et al. 2019)",
}

# what a plain SentenceTransformer(folder) keeps of a folder, and what it loses
PLAIN_LOADING = {
    "rankencoder": "`SentenceTransformer(path)` loads E2 and scores by cosine; it loses Eq. 7, which needs the "
    "folder's corpus index (`rankencoder/`) and λ_inf (`rankencoder.json`): `sentlab.load(path)` scores with both",
    "rse": "`SentenceTransformer(path)` loads the sentence encoder and scores by cosine; it loses the relation "
    "vectors (`rse_relations.safetensors`, `rse_relations.json`) that relational scoring adds: `sentlab.load(path)` "
    "scores under one relation or a mix",
}


def sentlab_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sentlab")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "not installed"


def hub_id(name: str) -> str | None:
    """The hub id of a start model given by alias or hub name (the rules sentlab loads by); None for a
    local folder or no model."""
    from sentlab.encoders.loading import HUB_NAME

    if name in HUB_IDS:
        return HUB_IDS[name]
    if not name or name.startswith((".", "/", "~")) or name.count("/") > 1 or Path(name).expanduser().exists():
        return None
    return name if HUB_NAME.match(name) else None


def describe_run(model: SentenceTransformer, cfg: TrainConfig, rows: int) -> None:
    """Before training: tell sentence-transformers' model card data what a sentlab run knows (the
    trainer then adds the training rows' columns and statistics under the name given here)."""
    data = model.model_card_data
    data.local_files_only = True  # no hub lookups: the run may be offline, and sentlab knows the answers
    start = hub_id(cfg.model.name)
    if start:
        data.base_model = start
    source = Path(cfg.data.train).name if cfg.data.train else "the method's sources"
    data.train_datasets = [{"name": f"{source} ({rows:,} rows)"}]
    data.model_name = f"{cfg.method} on {source}" + (f" from {start}" if start else "")  # no local paths
    data.add_tags(["sentlab", f"sentlab-{cfg.method}"])


def keep_card_data(final: SentenceTransformer, trained: SentenceTransformer) -> None:
    """Before the save: a final model rebuilt without its training-only modules keeps the trained
    model's card data (the trainer's hyper-parameters, data, scores and the losses' citations)."""
    if final is not trained:
        final.model_card_data = trained.model_card_data
        final.model_card_data.register_model(final)


def _scores(path: Path) -> dict[str, float]:
    if not path.is_file():
        return {}
    report = json.loads(path.read_text("utf-8"))
    found = {name: task["spearman"] for name, task in report.get("tasks", {}).items() if "spearman" in task}
    if "sts_avg" in report.get("summary", {}):
        found["STS avg"] = report["summary"]["sts_avg"]
    return found


def _fresh(path: Path, since: float) -> bool:
    """``path`` was written by this run (a file an earlier run left in the folder is not its result)."""
    return path.is_file() and path.stat().st_mtime >= since


def sentlab_section(cfg: TrainConfig, run: Path, record: dict[str, Any], since: float = 0.0) -> str:
    """The card's sentlab section: ``record`` holds version, command, rows and sha256 of the data;
    only the run's files written at or after ``since`` (this run's start) are read."""
    t = cfg.train
    paper = (cfg.about.paper if cfg.about else None) or PAPERS.get(cfg.method)
    lines = [
        BEGIN,
        "## Trained with sentlab",
        "",
        f"- **Method**: `{cfg.method}`" + (f", {paper}" if paper else "") + f" (sentlab {record['version']})",
        f"- **Start model**: `{hub_id(cfg.model.name) or cfg.model.label}`",
        f"- **Training data**: `{cfg.data.train or 'the method sources in the config'}`, {record['rows']:,} rows"
        + (f", sha256 `{record['sha256']}`" if record.get("sha256") else ""),
        f"- **Settings**: batch {t.batch_size}, "
        + (f"{record['steps']} steps" if record.get("steps") is not None else f"{t.epochs:g} epoch(s)")
        + f", learning rate {t.learning_rate:g}, training length {cfg.model.max_seq_length} tokens, "
        f"precision {record.get('precision') or t.mixed_precision}, seed {t.seed}",
    ]
    selection = json.loads((run / "selection.json").read_text("utf-8")) if _fresh(run / "selection.json", since) else {}
    if selection.get("metric"):
        start_dev, best = selection.get("start"), selection.get("best_checkpoint")
        lines.append(
            f"- **Dev** ({selection['metric']}): kept step {selection.get('kept_step')}, best checkpoint "
            + (f"{best:.4f}" if best is not None else "none scored")
            + (f" against the start model's {start_dev:.4f}" if start_dev is not None else "")
        )
    trained = _scores(run / "results.json") if _fresh(run / "results.json", since) else {}
    start = _scores(run / "start_results.json") if _fresh(run / "start_results.json", since) else {}
    if trained:
        lines += ["", "| STS (Spearman × 100, test) | this model | start model |", "|---|---:|---:|"]
        for task, value in trained.items():
            before = f"{start[task]:.2f}" if task in start else "-"
            lines.append(f"| {task} | {value:.2f} | {before} |")
    else:
        lines += ["", "Not scored at the end of training: `sentlab eval --model PATH` scores it."]
    if cfg.method in PLAIN_LOADING:
        lines += ["", f"**Loading it**: {PLAIN_LOADING[cfg.method]}."]
    lines += [
        "",
        f"**Reproduce**: the run's config is `{CONFIG_FILE}` in this folder; from the folder the run started in "
        "(its data paths are relative to it; the data's sha256 is above), into a new run folder:",
        "",
        "```bash",
        f"{record['command']}",
        "```",
        END,
    ]
    return "\n".join(lines) + "\n"


def write_sentlab_section(
    cfg: TrainConfig, run: Path, model_folder: Path, record: dict[str, Any], since: float = 0.0
) -> None:
    """Copy the run's config into the model folder and put the sentlab section at the end of its
    README.md (replacing an earlier one), where sentence-transformers wrote its card."""
    config = run / "config.yaml"
    if config.is_file():
        shutil.copyfile(config, model_folder / CONFIG_FILE)
    readme = model_folder / "README.md"
    text = readme.read_text("utf-8") if readme.is_file() else ""
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + text[text.index(END) + len(END) :].lstrip("\n")
    readme.write_text(text.rstrip("\n") + "\n\n" + sentlab_section(cfg, run, record, since), encoding="utf-8")
