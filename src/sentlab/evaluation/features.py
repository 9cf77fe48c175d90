"""What a transfer classifier sees of a sentence: the embedding, or a layer average of [CLS].

* ``sentence``: the model's sentence embedding, as ``SentenceTransformer.encode`` returns it.
* ``cls-lastK`` (e.g. ``cls-last5``): the mean over the last K transformer layers of the [CLS]
  (first-token) hidden state - RSE's features for transfer tasks (Sec. 6.1, after Wang and Kuo
  2020), whatever pooler the model uses for similarity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from sentlab.errors import SentlabError

FeatureFn = Callable[[Sequence[str]], np.ndarray]  # sentences -> one feature row each
_CLS_LAST = re.compile(r"cls-last(\d+)$")


def cls_layer_average(
    encoder: SentenceTransformer, sentences: Sequence[str], last: int = 5, batch_size: int = 128
) -> np.ndarray:
    """Mean of the [CLS] hidden states of the last ``last`` layers, float32 (n, hidden)."""
    transformer = encoder[0]
    model = transformer.auto_model
    n_layers = model.config.num_hidden_layers
    if not 1 <= last <= n_layers:
        raise SentlabError(f"cls-last{last}: the model has {n_layers} layers")
    order = np.argsort([len(s) for s in sentences], kind="stable")[::-1]  # long first: less padding
    rows = np.zeros((len(sentences), model.config.hidden_size), dtype=np.float32)
    model.eval()
    for start in range(0, len(sentences), batch_size):
        chunk = order[start : start + batch_size]
        features = encoder.tokenize([sentences[i] for i in chunk])
        inputs = {
            k: v.to(encoder.device)
            for k, v in features.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }
        with torch.inference_mode():
            hidden = model(**inputs, output_hidden_states=True, return_dict=True).hidden_states
        rows[chunk] = torch.stack([h[:, 0] for h in hidden[-last:]]).mean(0).float().cpu().numpy()
    return rows


def feature_function(
    kind: str,
    encoder: SentenceTransformer,
    encode: Callable[[Sequence[str]], np.ndarray] | None = None,
    batch_size: int = 128,
) -> FeatureFn:
    """The feature extractor named ``kind``; ``encode`` (default: ``encoder.encode``) gives
    ``sentence`` features, so a shared embedding cache can serve them."""
    if kind == "sentence":
        if encode is not None:
            return encode
        return lambda sentences: encoder.encode(list(sentences), batch_size=batch_size, convert_to_numpy=True)
    match = _CLS_LAST.match(kind)
    if match:
        return lambda sentences: cls_layer_average(encoder, sentences, int(match.group(1)), batch_size)
    raise SentlabError(f"unknown features {kind!r} (available: sentence, cls-lastK such as cls-last5)")
