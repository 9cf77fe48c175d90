"""LoRA adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") through
``peft``, as sentence-transformers' ``SentenceTransformer.add_adapter`` adds them: each targeted linear
layer W gets a trainable low-rank update (alpha / r) B A beside it, W frozen.

:func:`add_lora` puts the adapter on a model before training (``model.adapter``); a model saved with
it holds the adapter only (``adapter_config.json`` and ``adapter_model.safetensors``, naming the
start model's folder), which plain sentence-transformers loads with ``peft`` installed.
:func:`merge_adapter` folds each update into its layer (W + (alpha / r) B A) and drops the adapter:
full weights that load without ``peft`` (``sentlab merge-adapter``). ``peft`` is an optional extra
(the ``peft`` extra); without it, an adapter is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

from sentence_transformers import SentenceTransformer

from sentlab.errors import ConfigError, extra_hint
from sentlab.progress import say


def _peft():
    try:
        import peft
    except ImportError:
        raise ConfigError(f"model.adapter needs peft ({extra_hint('peft')})") from None
    return peft


def linear_names(model: SentenceTransformer) -> list[str]:
    """The last names of the encoder's linear layers (what ``target_modules`` can name), sorted."""
    from torch import nn

    return sorted(
        {name.rsplit(".", 1)[-1] for name, m in model[0].auto_model.named_modules() if isinstance(m, nn.Linear)}
    )


# the attention's query and value projections as architectures name them (BERT's, decoders', MPNet's and
# T5's, DistilBERT's, DeBERTa's): LoRA's default targets (Hu et al. 2021, Sec. 7.1) where peft has none
QUERY_VALUE_NAMES = (
    ("query", "value"),
    ("q_proj", "v_proj"),
    ("q", "v"),
    ("q_lin", "v_lin"),
    ("query_proj", "value_proj"),
)


def default_targets(model: SentenceTransformer) -> list[str] | None:
    """None where peft has default target modules for the encoder's architecture; else the attention's
    query and value projections by their names (MPNet's ``q`` and ``v``), said in one line; an
    architecture with neither is one line asking for ``model.adapter.target_modules``."""
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as PEFT_DEFAULTS

    kind = getattr(model[0].auto_model.config, "model_type", None)
    if kind in PEFT_DEFAULTS:
        return None
    known = set(linear_names(model))
    for pair in QUERY_VALUE_NAMES:
        if set(pair) <= known:
            say(
                f"model.adapter.target_modules: peft has no default for {kind}; its query and value projections {list(pair)}"
            )
            return list(pair)
    raise ConfigError(
        f"model.adapter.target_modules: peft has no default for {kind}, and its linear layers name no query and value "
        f"projection; name the layers to adapt (its linear layers: {', '.join(sorted(known))})"
    )


def add_lora(
    model: SentenceTransformer, rank: int, alpha: float, dropout: float, target_modules: list[str] | None
) -> None:
    """Put a LoRA adapter on ``model``'s encoder (its other weights frozen). ``target_modules`` None:
    peft's default for the architecture, else its query and value projections (:func:`default_targets`)."""
    peft = _peft()
    if target_modules is not None:
        known = linear_names(model)
        missing = [t for t in target_modules if t not in known]
        if missing:
            raise ConfigError(
                f"model.adapter.target_modules: the encoder has no linear layer named {missing[0]!r} "
                f"(its linear layers: {', '.join(known)})"
            )
    else:
        target_modules = default_targets(model)
    config = peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=target_modules)
    encoder = model[0].auto_model
    start = Path(encoder.config._name_or_path)
    if start.exists():  # the adapter names its start model: by an absolute path, wherever it is loaded from
        # peft's adapter_config.json takes the base from the model's own name_or_path, not its config's
        encoder.name_or_path = encoder.config._name_or_path = str(start.resolve())
    try:
        model.add_adapter(config)
    except ValueError as err:  # e.g. an architecture peft has no default target modules for
        raise ConfigError(f"model.adapter: {str(err).splitlines()[0]}") from None


def adapter_on_adapter(start: str) -> str:
    """The one line refusing a new adapter over a start that holds one: the new adapter would name the
    first one's base alone, so a reload would drop the first stage's update."""
    return (
        f"model.adapter: {start} holds a LoRA adapter itself, and a new adapter would name only its base "
        f"model, dropping that adapter's training on reload; merge it first (sentlab merge-adapter --model "
        f"{start} --output MERGED) and start from MERGED"
    )


def adapter_base(folder: str | Path) -> str | None:
    """The base model a saved adapter folder names (``adapter_config.json``), None for full weights."""
    import json

    config = Path(folder, "adapter_config.json")
    if not config.is_file():
        return None
    return json.loads(config.read_text("utf-8")).get("base_model_name_or_path")


def has_adapter(model: SentenceTransformer) -> bool:
    backbone = getattr(model[0], "auto_model", None)  # a static model has none
    return bool(getattr(backbone, "_hf_peft_config_loaded", False))


def merge_adapter(model: SentenceTransformer) -> SentenceTransformer:
    """``model`` with each LoRA update folded into its layer and the adapter removed (in place)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    encoder = model[0].auto_model
    for name, module in list(encoder.named_modules()):
        if isinstance(module, BaseTunerLayer):
            module.merge()
            parent, _, child = name.rpartition(".")
            setattr(encoder.get_submodule(parent) if parent else encoder, child, module.get_base_layer())
    # a model that never held an adapter, with the merged weights: saving it writes plain weights (the
    # adapted one would still save them under peft's names)
    plain = type(encoder)(encoder.config).to(encoder.device, encoder.dtype)  # the class that was loaded
    plain.load_state_dict(encoder.state_dict())
    model[0].model = plain.train(encoder.training)  # auto_model is a read-only view of it
    return model


ADAPTER_NOTE = "**A LoRA adapter, not full weights**"  # the card paragraph of an adapter folder (model_card.py)


def merged_card(text: str, source: str) -> str:
    """An adapter folder's card as the merged model's: the adapter paragraph and the ``lora`` / ``peft``
    tags removed, and a line saying the weights are the adapter merged into its base."""
    import re

    text = re.sub(rf"\n{re.escape(ADAPTER_NOTE)}.*?\n(?=\n|$)", "", text, flags=re.S)
    text = re.sub(r"^- (lora|peft)\n", "", text, flags=re.M)
    merged = f"**Full weights**: a LoRA adapter ({Path(source).name}) merged into its base by `sentlab merge-adapter`."
    return text.replace("## Trained with sentlab\n", f"## Trained with sentlab\n\n{merged}\n", 1)


def merge_folder(source: str | Path, output: str | Path) -> None:
    """Load a saved model with an adapter, merge it, and save full weights to ``output``."""
    from sentlab.encoders.loading import load_encoder

    _peft()
    if Path(output).exists() and any(Path(output).iterdir()):
        raise ConfigError(f"{output}: not empty; merge into a new folder")
    import shutil

    model = load_encoder(str(source), device="cpu")
    if not has_adapter(model):
        raise ConfigError(f"{source}: the model has no adapter to merge")
    # written beside and renamed when whole: a merge cut short never looks like a model
    partial = Path(output).with_name(Path(output).name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        merge_adapter(model).save(str(partial))
        config = Path(source, "sentlab_config.yaml")  # the run's config, which the card's "Reproduce" names
        if config.is_file():
            shutil.copy2(config, partial / config.name)
        card = partial / "README.md"
        if card.is_file():  # the adapter's card, saved again: it says full weights now
            card.write_text(merged_card(card.read_text("utf-8"), str(source)), encoding="utf-8")
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if Path(output).exists():
        Path(output).rmdir()  # empty (checked above)
    partial.rename(output)
