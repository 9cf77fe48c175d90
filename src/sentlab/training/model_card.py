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
scores beside the start model's, sentlab's version, the config (written into the folder without a
local absolute path: :func:`portable_tree`) and the command that reproduces it, and, for a
RankEncoder or RSE folder, what plain sentence-transformers keeps and what it loses.

The whole card describes the weights in the folder: when dev selection keeps an earlier step or the
start model, :func:`describe_kept` makes sentence-transformers' part bold that step's row and show that
step's evaluation, and the card says in its first sentence when the weights are the start model's.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer

from sentlab.encoders.adapters import ADAPTER_NOTE
from sentlab.training.config import TrainConfig, tree_strings
from sentlab.training.run_folder import local_models, named_models

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
# what plain sentence-transformers needs, or loses, for a folder sentlab saved, by kind (a method, the
# prompt pooler, an adapter): each card says its own; docs/guides/python-api.md lists them all
PLAIN_LOADING = {
    "bert-flow": "`SentenceTransformer(path, trust_remote_code=True)` loads it where sentlab is installed: its "
    "flow is sentlab's module `GlowFlow`, which sentence-transformers runs only when told to trust it; "
    "`sentlab.load(path)` needs no flag",
    "prompt pooler": "`SentenceTransformer(path, trust_remote_code=True)` loads it where sentlab is installed: "
    "its modules are sentlab's `PromptTransformer` and `MaskTokenPooling`, which sentence-transformers runs only "
    "when told to trust them; `sentlab.load(path)` needs no flag",
    "adapter": "`SentenceTransformer(path)` loads it with peft installed and the start model where "
    "`adapter_config.json` names it; `sentlab merge-adapter` gives full weights that load anywhere",
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


def hub_base(base: str) -> str | None:
    """The id under which the hub resolves an adapter's base model: a hub name as it is, the packaged
    all-MiniLM-L6-v2 (an alias's folder) as its hub id; None for any other local folder."""
    from sentlab.encoders.loading import resolve_model_path
    from sentlab.errors import ModelLoadError

    for alias, hub in HUB_IDS.items():
        try:
            if Path(base).expanduser().resolve() == Path(resolve_model_path(alias)).resolve():
                return hub
        except ModelLoadError:  # the alias's package is not installed: not its folder
            continue
    return hub_id(base)


def start_hub_base(name: str) -> str | None:
    """:func:`hub_base` of the start model ``name`` as an adapter records it (a folder by its absolute
    path, :func:`sentlab.encoders.adapters.add_lora`): the one rule for pushing and for the card."""
    from sentlab.encoders.loading import resolve_model_path

    start = resolve_model_path(name)
    return hub_base(str(Path(start).resolve()) if Path(start).exists() else start)


def describe_run(model: SentenceTransformer, cfg: TrainConfig, rows: int) -> None:
    """Before training: tell sentence-transformers' model card data what a sentlab run knows (the
    trainer then adds the training rows' columns and statistics under the name given here)."""
    data = model.model_card_data
    data.local_files_only = True  # no hub lookups: the run may be offline, and sentlab knows the answers
    start = hub_id(cfg.model.name)
    if start:
        data.base_model = start
    source = Path(cfg.data.train).name if cfg.data.train else " + ".join(cfg.data.sets) or "the method's sources"
    data.train_datasets = [{"name": f"{source} ({rows:,} rows)"}]
    data.model_name = f"{cfg.method} on {source}" + (f" from {start}" if start else "")  # no local paths
    data.add_tags(["sentlab", f"sentlab-{cfg.method}"] + (["lora", "peft"] if cfg.model.adapter else []))


def describe_kept(final: SentenceTransformer, kept: int | None, log_history: list[dict[str, Any]]) -> None:
    """Before the save: sentence-transformers' card data describes the weights kept by dev selection
    (``kept``: the step, 0 for the start model; None without selection, the last step's weights). The
    bold row of the training log is the kept step's, and the evaluation shown is the one logged at
    that step (the start model's, scored before the first step, for 0); an evaluator with nothing
    logged at that step is left out rather than shown with another step's scores."""
    if kept is None:
        return
    data = final.model_card_data
    data.best_model_step = kept
    logged = next(
        (row for row in log_history if row.get("step") == kept and any(k.startswith("eval_") for k in row)), {}
    )
    for evaluator, metrics in list((data.eval_results_dict or {}).items()):
        found = {key: logged.get(f"eval_{key}") for key in metrics}
        if found and all(value is not None for value in found.values()):
            data.eval_results_dict[evaluator] = found
        else:
            del data.eval_results_dict[evaluator]


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


def portable_tree(cfg: TrainConfig) -> tuple[dict[str, Any], list[str]]:
    """The run's config for the model folder (and the hub) with no local absolute path in it, and the
    local files and folders it names (what a reproduction needs beside it): a path under the data
    folder becomes ``$SENTLAB_DATA/...``, any other absolute path its file or folder name, a relative
    path stays; ``train.output_dir`` is ``runs/reproduced`` and ``data.data_dir`` is left to
    ``$SENTLAB_DATA``."""
    from sentlab.paths import data_dir

    root = data_dir(cfg.data.data_dir).resolve()
    needed: list[str] = []
    tree = cfg.to_tree()
    local = sorted({v for v in tree_strings(tree) if os.path.isabs(v) and "\n" not in v})
    names = _short_names([p for p in local if not _under(Path(p), root)])

    def portable(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: portable(item) for key, item in value.items()}
        if isinstance(value, list):
            return [portable(item) for item in value]
        if not isinstance(value, str) or value not in local:
            return value
        if _under(Path(value), root):
            return "$SENTLAB_DATA/" + Path(value).resolve().relative_to(root).as_posix()
        needed.append(names[value])
        return names[value]

    for key in PATH_KEYS:  # a relative path the config names: needed beside it as it is
        section, _, field = key.partition(".")
        value = (tree.get(section) or {}).get(field)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item and not os.path.isabs(item) and Path(item).exists():
                needed.append(item)
    for part in (tree.get("data", {}).get("sets") or {}).values():  # data.sets: each set's own file, teacher
        for item in (part.get("train"), part.get("teacher")):
            if isinstance(item, str) and item and not os.path.isabs(item) and Path(item).exists():
                needed.append(item)
    tree.pop("about", None)
    tree["data"].pop("data_dir", None)
    tree["train"]["output_dir"] = "runs/reproduced"
    return portable(tree), list(dict.fromkeys(needed))


# the keys whose value is a local file or folder when it names one (a relative one is listed as needed)
PATH_KEYS = (
    "model.name",
    "data.train",
    "eval.dev_task",
    "supervised.teacher",
    "rank.base_encoder",
    "rank.corpus",
    "rankcse.teachers",
)


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _short_names(paths: list[str]) -> dict[str, str]:
    """Each absolute path as its last parts, as few as keep two different paths apart
    (``/a/stage1/model`` and ``/b/x/model``: ``stage1/model`` and ``x/model``)."""
    names = {}
    for path in paths:
        parts = Path(path).parts
        for depth in range(1, len(parts)):
            name = Path(*parts[-depth:]).as_posix()
            if not any(other != path and Path(*Path(other).parts[-depth:]).as_posix() == name for other in paths):
                break
        names[path] = name
    return names


def _local_name(name: str) -> str:
    """A start model or data file as the card names it: a hub id, else no local absolute path."""
    return hub_id(name) or (Path(name).name if os.path.isabs(name) else name)


MODEL_ROLES = {
    "supervised.teacher": "Teacher",
    "supervised.loss_args.guide": "Guide model",
    "data.sets.*.teacher": "Teacher of the set",
    "data.sets.*.loss_args.guide": "Guide model of the set",
    "rankcse.teachers": "Teacher",
    "rank.base_encoder": "Base encoder (E1)",
    "tsdae.decoder": "Decoder",
}


def _models_lines(cfg: TrainConfig) -> list[str]:
    """The start model and every model the run learned against (a teacher, a guide, E1), each a local
    folder with its files' sha256 (:func:`~sentlab.training.run_folder.local_models`)."""
    identities = local_models(cfg)

    def files(key: str) -> str:
        return f" (a local folder; its files' sha256 `{identities[key]}`)" if key in identities else ""

    lines = [f"- **Start model**: `{_local_name(cfg.model.name) or cfg.model.label}`" + files("model.name")]
    for key, name in named_models(cfg).items():
        parts = key.split(".")
        pattern = ".".join(["data", "sets", "*", *parts[3:]]) if parts[:2] == ["data", "sets"] else key
        role = MODEL_ROLES.get(pattern.rsplit(".", 1)[0] if key[-1].isdigit() else pattern)
        if role:
            of_set = f" {parts[2]}" if pattern != key else ""
            lines.append(f"- **{role}{of_set}**: `{_local_name(name)}`" + files(key))
    return lines


def sentlab_section(cfg: TrainConfig, run: Path, record: dict[str, Any], since: float = 0.0) -> str:
    """The card's sentlab section: ``record`` holds version, command, rows and sha256 of the data;
    only the run's files written at or after ``since`` (this run's start) are read."""
    t = cfg.train
    paper = (cfg.about.paper if cfg.about else None) or PAPERS.get(cfg.method)
    selection = json.loads((run / "selection.json").read_text("utf-8")) if _fresh(run / "selection.json", since) else {}
    tree, needed = portable_tree(cfg)
    lines = [
        BEGIN,
        "## Trained with sentlab",
        "",
    ]
    if selection.get("kept_step") == 0:
        lines += [
            f"**These are the start model's weights, unchanged**: training ran {record.get('steps')} steps and no "
            f"checkpoint scored higher than the start model on the dev task ({selection.get('metric')}), so the "
            "start model was kept.",
            "",
        ]
    lines += [
        f"- **Method**: `{cfg.method}`" + (f", {paper}" if paper else "") + f" (sentlab {record['version']})",
        *_models_lines(cfg),
    ]
    if cfg.model.trust_remote_code:
        lines.append(
            "- **Remote code**: the run ran the Python code its models' configs name (`model.trust_remote_code: "
            "true`); `SentenceTransformer(path, trust_remote_code=True)` loads this model, "
            "`--trust-remote-code` in sentlab"
        )
    lines += [
        f"- **Training data**: `{tree['data'].get('train') or ', '.join(tree['data'].get('sets') or {}) or 'the method sources in the config'}`, "
        f"{record['rows']:,} rows" + (f", sha256 `{record['sha256']}`" if record.get("sha256") else ""),
        f"- **Settings**: batch {t.batch_size}, "
        + (f"{record['steps']} steps" if record.get("steps") is not None else f"{t.epochs:g} epoch(s)")
        + f", learning rate {t.learning_rate:g}, "
        + (
            ""
            if "model.max_seq_length" in cfg.start_lacks()
            else f"training length {cfg.model.max_seq_length} tokens, "
        )
        + f"precision {record.get('precision') or t.mixed_precision}, seed {t.seed}",
    ]
    runtime = json.loads((run / "runtime.json").read_text("utf-8")) if _fresh(run / "runtime.json", since) else {}
    if runtime.get("prompts"):
        prompts = runtime["prompts"]

        def listed(by_column: dict) -> str:
            return ", ".join(f"{column} `{prompt}`" for column, prompt in by_column.items()) or "none"

        by_set = all(isinstance(v, dict) for v in prompts.values())  # a set's own prompts, by the set's name
        lines.append(
            "- **Prompts** in training: "
            + ("; ".join(f"set {name}: {listed(p)}" for name, p in prompts.items()) if by_set else listed(prompts))
            + " (encode queries and documents with the same prompts)"
        )
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
    kinds = [k for k in (cfg.method, "prompt pooler" if cfg.model.pooler == "prompt" else "") if k in PLAIN_LOADING]
    for kind in kinds:  # a RankEncoder over the prompt pooler: both notes
        lines += ["", f"**Loading it**: {PLAIN_LOADING[kind]}."]
    if cfg.model.adapter is not None:
        a, base = cfg.model.adapter, start_hub_base(cfg.model.name)
        lines += [
            "",
            f"{ADAPTER_NOTE}: rank {a.rank} over "
            + (f"`{base}` (from the hub)" if base else f"the local folder `{_local_name(cfg.model.name)}`")
            + "; `SentenceTransformer(path)` loads it with peft installed"
            + ("" if base else ", where `adapter_config.json` names that folder by its path on the training machine")
            + "; `sentlab merge-adapter --model PATH --output MERGED` gives full weights.",
        ]
    beside = ", ".join(f"`{name}`" for name in needed)
    data_env = any("$SENTLAB_DATA/" in json.dumps(value) for value in tree.values())
    lines += [
        "",
        f"**Reproduce**: the run's config is `{CONFIG_FILE}` in this folder. In a folder holding it"
        + (f" and {beside}" if beside else "")
        + (" (the data's sha256 is above)" if record.get("sha256") else "")
        + (", with `$SENTLAB_DATA` set to sentlab's data folder" if data_env else "")
        + ", this trains it again into `runs/reproduced`:",
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
    """Write the run's config into the model folder (:func:`portable_tree`) and put the sentlab section
    at the end of its README.md (replacing an earlier one), where sentence-transformers wrote its card;
    when the start model was kept, the card's first sentence says so instead of "finetuned"."""
    import yaml

    from sentlab.paths import write_text_atomic

    write_text_atomic(model_folder / CONFIG_FILE, yaml.safe_dump(portable_tree(cfg)[0], sort_keys=False))
    readme = model_folder / "README.md"
    text = readme.read_text("utf-8") if readme.is_file() else ""
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + text[text.index(END) + len(END) :].lstrip("\n")
    selection = run / "selection.json"
    if _fresh(selection, since) and json.loads(selection.read_text("utf-8")).get("kept_step") == 0:
        start = _local_name(cfg.model.name) or cfg.model.label
        text = re.sub(
            r"This is a \[sentence-transformers\]\(https://www\.SBERT\.net\) model.*?\. It maps",
            lambda _: (
                f"This is a [sentence-transformers](https://www.SBERT.net) model: {start} itself, unchanged "
                "(training with sentlab kept no checkpoint that scored above it on the dev task). It maps"
            ),
            text,
            count=1,
            flags=re.S,
        )
    write_text_atomic(readme, text.rstrip("\n") + "\n\n" + sentlab_section(cfg, run, record, since))
