"""TSDAE's reconstruction loss (Wang, Reimers and Gurevych 2021, Sec. 3).

J_SDAE (Sec. 3.1)::

    J_SDAE(θ) = E_{x~D} [ Σ_{t=1..l} log P_θ(x_t | x̃) ],   P_θ(x_t | x̃) = softmax_i(h_tᵀ e_i)[x_t]

The encoder embeds the *noised* sentence x̃ into one vector s (the model's pooled sentence
embedding); a Transformer decoder predicts the *original* sentence x token by token, and its
cross-attention sees only ``[sᵀ]`` (Sec. 3.2: H^(k) = Attention(H^(k-1), [sᵀ], [sᵀ])), never the
encoder's token states — ``encoder_hidden_states`` is the (batch, 1, d) tensor of s.

What is taken from sentence-transformers' ``DenoisingAutoEncoderLoss``: the decoder is
transformers' causal-LM class of the encoder's architecture with ``is_decoder`` and
``add_cross_attention``; the decoder input is the original token ids without the last position
and the targets are the ids shifted by one (so [CLS] is never predicted and [SEP] is); s enters as
``reps[:, None]``; tying shares the body's tensors. What is changed, and why:

* the loss is the paper's sum over the l target tokens of each sentence, averaged over the batch
  (``reduction="sentence-sum"``); the library and the authors' code average over all target tokens
  of the batch instead, which weights short sentences more — ``reduction="token-mean"`` gives that;
* the decoder is built from the encoder's *configuration and current weights* (a model built in
  code, or one trained by an earlier stage, has no hub name to reload), and tying goes from the
  encoder to the decoder (the encoder's trained weights are the shared start, and the LM head's
  output embeddings are re-tied to them, so e_i of the equation is the encoder's word embedding);
* an architecture with no causal-LM class (DistilBERT, MPNet, ...) is a one-line error naming the
  option that works (an untied decoder from a compatible checkpoint); the decoder is part of the
  loss, so it is training-only and the saved model is the encoder alone.

Inputs: pairs (noised sentence, original sentence), e.g. from :class:`sentlab.data.noise.NoisyPairs`;
no labels. Example::

    loss = TSDAELoss(model)                                  # tied decoder, paper's reduction
    loss = TSDAELoss(model, tie=False, decoder="bert-base-uncased")   # e.g. for a DistilBERT encoder
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from sentlab.errors import ConfigError
from sentlab.losses.lm_heads import head_model, share_body

REDUCTIONS = ("sentence-sum", "token-mean")


class TSDAELoss(nn.Module):
    """Negative J_SDAE of a batch (Sec. 3.1, see the module doc); ``last_components`` has the mean token NLL.

    Inputs: columns (noisy sentence, original sentence), no labels.

    Args:
        model: the encoder being trained; its pooled embedding is s.
        tie: share the encoder's weights with the decoder (the paper's default).
        decoder: an untied decoder's checkpoint (with ``tie=False``).
        reduction: ``sentence-sum`` (the paper) or ``token-mean`` (the authors' code and
            sentence-transformers' ``DenoisingAutoEncoderLoss``).

    Example::

        from sentlab.losses import TSDAELoss, noisy_pairs

        train_dataset = noisy_pairs(sentences, noise="delete", ratio=0.6)
        loss = TSDAELoss(model)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
    """

    def __init__(
        self, model: SentenceTransformer, tie: bool = True, decoder: str | None = None, reduction: str = "sentence-sum"
    ):
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ConfigError(f"unknown TSDAE reduction {reduction!r} (choose from {', '.join(REDUCTIONS)})")
        if tie and decoder:
            raise ConfigError("tsdae.decoder names a separate decoder checkpoint, which needs tsdae.tie: false")
        self.encoder = model
        self.reduction = reduction
        encoder_hf = model[0].auto_model
        config = AutoConfig.from_pretrained(decoder) if decoder else copy.deepcopy(encoder_hf.config)
        config.is_decoder = True
        config.add_cross_attention = True
        try:
            self.decoder = head_model(encoder_hf, AutoModelForCausalLM, config, source=decoder)
        except ConfigError as err:
            raise ConfigError(
                f"{err}; use tsdae.tie: false with tsdae.decoder: <a checkpoint that has a causal-LM "
                f"class and hidden size {encoder_hf.config.hidden_size}, e.g. bert-base-uncased>"
            ) from None
        if self.decoder.config.hidden_size != model.get_embedding_dimension():
            raise ConfigError(
                f"decoder hidden size {self.decoder.config.hidden_size} differs from the sentence "
                f"embedding size {model.get_embedding_dimension()}"
            )
        if decoder is None:
            share_body(encoder_hf, self.decoder.base_model, tie=tie)
            self.decoder.tie_weights()
        self.encoder_tokenizer = model.tokenizer
        self.decoder_tokenizer = AutoTokenizer.from_pretrained(decoder) if decoder else model.tokenizer
        self.retokenize = (
            decoder is not None and self.decoder_tokenizer.get_vocab() != self.encoder_tokenizer.get_vocab()
        )
        self.last_components: dict[str, Tensor] = {}

    def decoder_targets(self, original: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """Token ids and mask of the original sentences in the decoder's vocabulary."""
        if not self.retokenize:
            return original["input_ids"], original["attention_mask"]
        texts = self.encoder_tokenizer.batch_decode(original["input_ids"], skip_special_tokens=True)
        out = self.decoder_tokenizer(
            texts, padding=True, truncation=True, return_tensors="pt", max_length=original["input_ids"].shape[1]
        )
        return out["input_ids"].to(original["input_ids"].device), out["attention_mask"].to(original["input_ids"].device)

    def token_nll(self, s: Tensor, ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """-log P(x_t | s) for t = 2..l of each sentence (zero on padding), and the target mask."""
        inputs, input_mask = ids[:, :-1], mask[:, :-1]
        targets, target_mask = ids[:, 1:], mask[:, 1:]
        logits = self.decoder(
            input_ids=inputs,
            attention_mask=input_mask,
            encoder_hidden_states=s[:, None],
            encoder_attention_mask=torch.ones_like(s[:, :1], dtype=input_mask.dtype),
            use_cache=False,
        ).logits
        nll = F.cross_entropy(logits.transpose(1, 2).float(), targets, reduction="none")
        return nll * target_mask, target_mask

    def forward(self, sentence_features: list[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        noisy, original = sentence_features
        s = self.encoder(noisy)["sentence_embedding"]
        ids, mask = self.decoder_targets(original)
        nll, target_mask = self.token_nll(s, ids, mask)
        tokens = target_mask.sum().clamp(min=1)
        token_mean = nll.sum() / tokens
        self.last_components = {"token_nll": token_mean.detach()}
        if self.reduction == "token-mean":
            return token_mean
        return nll.sum(dim=1).mean()
