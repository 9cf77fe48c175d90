"""The masked-LM loss of the TSDAE paper's MLM baseline (Sec. 5.2) and of sentlab's raw LM.

BERT's objective (Devlin et al. 2019): 15 % of the tokens are chosen; of those 80 % become [MASK],
10 % a random token, 10 % stay; cross-entropy on the chosen ones. The draw is that of transformers'
``DataCollatorForLanguageModeling.torch_mask_tokens`` (special tokens never chosen; random tokens from
the whole vocabulary), made afresh every step on the device the ids are on, so a GPU step does not
copy its batch to the host and back.
"""

from __future__ import annotations

import torch
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn
from transformers import AutoModelForMaskedLM

from sentlab import devices
from sentlab.errors import ConfigError
from sentlab.losses.lm_heads import head_model, share_body


class MLMLoss(nn.Module):
    """Masked-LM cross-entropy on one column of sentences; the head's body is the encoder (tied). The
    loss is the mean cross-entropy over the chosen positions, as transformers' masked-LM loss; on an
    accelerator the head runs at every position (a static shape: a compiled step builds one graph and
    nothing waits for the device), on a CPU at the chosen positions only (:meth:`scored`). Under mixed precision the head's
    body and its prediction layer (called directly, so named in ``half_precision_modules``) run in
    half precision and the cross-entropy in float32.

    Inputs: one column of sentences, no labels.

    Example::

        from sentlab.losses import MLMLoss

        loss = MLMLoss(model, probability=0.15)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=sentences, loss=loss)
    """

    half_precision_modules = ("head.cls",)  # sentlab.precision.loss_networks

    def __init__(self, model: SentenceTransformer, probability: float = 0.15):
        super().__init__()
        self.encoder = model
        encoder_hf = model[0].auto_model
        self.head = head_model(encoder_hf, AutoModelForMaskedLM, role="masked-LM head")
        share_body(encoder_hf, self.head.base_model, tie=True)
        self.head.tie_weights()
        if model.tokenizer.mask_token is None:
            raise ConfigError(f"{type(encoder_hf).__name__}: the tokenizer has no mask token, so MLM cannot train it")
        if not 0 < probability < 1:
            raise ConfigError(f"mlm.probability must be between 0 and 1, got {probability}")
        self.probability = probability
        self.mask_token_id = model.tokenizer.mask_token_id
        self.vocabulary_size = len(model.tokenizer)
        # the tokenizer's, not the checkpoint's: not saved, but moved with the loss to its device
        special = torch.tensor(sorted(set(model.tokenizer.all_special_ids)), dtype=torch.long, device=model.device)
        self.register_buffer("special_ids", special, persistent=False)
        self.last_components: dict[str, Tensor] = {}

    def mask_tokens(self, ids: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """(inputs, targets) of BERT's masking of ``ids``, on their device: each ordinary token chosen
        with ``probability``; a chosen one becomes [MASK] (80 %), a random token (10 %) or stays (10 %);
        targets are the original ids at the chosen positions and -100 elsewhere."""
        device = ids.device
        special = torch.isin(ids, self.special_ids.to(device))  # a no-op where the ids are (training)

        def draw(p: float) -> Tensor:
            return torch.rand(ids.shape, device=device, generator=generator) < p

        chosen = draw(self.probability) & ~special
        targets = torch.where(chosen, ids, torch.full_like(ids, -100))
        to_mask = chosen & draw(0.8)
        to_random = chosen & ~to_mask & draw(0.5)  # half of the remaining 20 %
        random_ids = torch.randint(self.vocabulary_size, ids.shape, device=device, generator=generator)
        inputs = torch.where(to_mask, torch.full_like(ids, self.mask_token_id), ids)
        inputs = torch.where(to_random, random_ids, inputs)
        return inputs, targets

    def logits(self, inputs: Tensor, attention_mask: Tensor, at: Tensor | None = None) -> Tensor:
        """The head's logits at every position ([batch, length, vocabulary]), or at the positions the
        boolean mask ``at`` selects ([selected, vocabulary])."""
        prediction = getattr(self.head, "cls", None)
        if prediction is None:  # an architecture whose head is not BERT's: the head model as a whole
            logits = self.head(input_ids=inputs, attention_mask=attention_mask).logits
            return logits if at is None else logits[at]
        states = self.head.base_model(input_ids=inputs, attention_mask=attention_mask).last_hidden_state
        return prediction(states if at is None else states[at])

    def scored(self, inputs: Tensor, attention_mask: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(mean cross-entropy over the chosen tokens, correct predictions, chosen tokens) of one masked
        batch: transformers' masked-LM loss, computed one of two ways with the same value:

        * on an accelerator, the head at every position and ``ignore_index=-100`` at the positions not
          chosen: every shape is the batch's, nothing is read back to the host, and a compiled head
          sees one shape (selecting the chosen positions would give a shape only the data knows: the
          host would wait for the device every step, and the compiled head would see a new shape);
        * on the host (a CPU: nothing to wait for), the head at the chosen positions only, a sixth of
          its work (the head at every position made a CPU step 1.87 times as long for a MiniLM-sized
          model, ``benchmarks/perf/mlm_head_shape.py``, and 1.74 times for the packed raw LM,
          ``benchmarks/perf/rawlm_throughput.py``: docs/results.md).
        """
        chosen = targets != -100
        if devices.runs_on_host(inputs.device):
            logits = self.logits(inputs, attention_mask, at=chosen)
            wanted = targets[chosen]
            loss = nn.functional.cross_entropy(logits.float(), wanted)
            return loss, (logits.argmax(-1) == wanted).sum(), chosen.sum()
        logits = self.logits(inputs, attention_mask)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=-100)
        correct = (logits.argmax(-1) == targets) & chosen
        return loss, correct.sum(), chosen.sum()

    def forward(self, sentence_features: list[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        features = sentence_features[0]
        ids = features["input_ids"]
        inputs, targets = self.mask_tokens(ids.detach())
        loss, correct, chosen = self.scored(inputs, features["attention_mask"], targets)
        self.last_components = {"mlm_accuracy": (correct.float() / chosen.clamp(min=1)).detach()}
        return loss
