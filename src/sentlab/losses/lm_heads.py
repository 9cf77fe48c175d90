"""Language-model heads over a sentence encoder's backbone, for TSDAE's decoder and MLM training.

Both are built with transformers' own classes (``AutoModelForCausalLM`` with cross-attention,
``AutoModelForMaskedLM``) from the encoder's configuration. Weights come from the checkpoint the
backbone was loaded from, a folder or a hub name, when it has them (BERT's pre-trained LM head);
otherwise the head starts from the architecture's initialisation, with a notice (a
sentence-transformers checkpoint such as all-MiniLM-L6-v2 kept no LM head); the body then takes the
encoder's current weights, either *tied* (the very same tensors) or copied.
"""

from __future__ import annotations

import copy
from pathlib import Path

from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from sentlab.errors import ConfigError
from sentlab.progress import say


def head_model(
    encoder: PreTrainedModel,
    auto_class: type,
    config: PretrainedConfig | None = None,
    source: str | None = None,
    role: str = "decoder",
) -> PreTrainedModel:
    """A model of ``auto_class`` (e.g. ``AutoModelForCausalLM``) for ``encoder``'s architecture.

    ``source`` (a folder or hub name) supplies its weights; by default the checkpoint the encoder was
    loaded from, a local folder or a hub name alike (offline: from the local hub cache), so a
    checkpoint with a masked-LM head (bert-base-uncased, a raw LM pre-trained by sentlab) supplies its
    head as it does to sentence-transformers' ``DenoisingAutoEncoderLoss``. Head weights the
    checkpoint lacks start from the architecture's initialisation, with a one-line notice naming them
    (a decoder's new cross-attention is expected and not reported). An architecture without such a
    class in transformers is a one-line :class:`ConfigError`. The head is put on the encoder's device
    (a GPU-loaded encoder gets a GPU head: its own tensors and the shared ones on one device)."""
    return _head_model(encoder, auto_class, config or copy.deepcopy(encoder.config), source, role).to(encoder.device)


def _head_model(
    encoder: PreTrainedModel, auto_class: type, config: PretrainedConfig, source: str | None, role: str
) -> PreTrainedModel:
    try:
        if source is not None:
            try:
                return _from_checkpoint(auto_class, source, config, role)
            except OSError as err:
                raise ConfigError(f"{source}: cannot load the {role} ({str(err).splitlines()[0]})") from None
        own = getattr(encoder, "name_or_path", "") or ""
        if own and (Path(own).is_dir() or _is_cached_hub_name(own)):
            try:
                return _from_checkpoint(auto_class, own, config, role)
            except OSError:  # no weights there: the architecture's initialisation
                pass
        say(
            f"notice: {own or type(encoder).__name__} has no weights for the {role}; it starts from random "
            "initialisation"
        )
        return auto_class.from_config(config)
    except ValueError:
        raise ConfigError(
            f"{type(encoder).__name__}: transformers has no {auto_class.__name__.removeprefix('AutoModelFor')} class "
            f"for the {config.model_type} architecture, so it cannot be the {role}"
        ) from None


def _is_cached_hub_name(name: str) -> bool:
    from sentlab.encoders.loading import HUB_NAME, in_hub_cache

    return bool(HUB_NAME.match(name)) and in_hub_cache(name)


def _from_checkpoint(auto_class: type, source: str, config: PretrainedConfig, role: str) -> PreTrainedModel:
    """``auto_class.from_pretrained(source)``, saying which of the head's weights it did not find."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # its own load report; sentlab says what matters below
    try:
        model, info = auto_class.from_pretrained(source, config=config, output_loading_info=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    missing = [key for key in info.get("missing_keys", []) if "crossattention" not in key]
    if missing:
        say(
            f"notice: {source} has no weights for {len(missing)} tensor(s) of the {role} (e.g. {sorted(missing)[0]}); "
            "they start from random initialisation"
        )
    return model


def share_body(encoder: nn.Module, body: nn.Module, tie: bool) -> int:
    """Give ``body`` (the head model's backbone) the encoder's weights: with ``tie`` the encoder's
    tensors themselves (one tensor, two uses), else copies. Parameters the encoder lacks (e.g. the
    decoder's cross-attention) keep their own. Returns how many tensors were shared or copied."""
    body_modules = dict(body.named_modules())
    count = 0
    for name, param in encoder.named_parameters():
        module_name, _, attr = name.rpartition(".")
        target = body_modules.get(module_name)
        if target is None or not isinstance(getattr(target, attr, None), nn.Parameter):
            continue
        if getattr(target, attr).shape != param.shape:
            raise ConfigError(
                f"{name}: encoder and head disagree on the shape ({tuple(param.shape)} vs "
                f"{tuple(getattr(target, attr).shape)})"
            )
        if tie:
            setattr(target, attr, param)
        else:
            getattr(target, attr).data.copy_(param.data)
        count += 1
    if count == 0:
        raise ConfigError(
            f"{type(encoder).__name__} and {type(body).__name__} share no parameter names; "
            "are they the same architecture?"
        )
    return count
