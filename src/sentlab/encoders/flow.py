"""BERT-flow's normalising flow as a sentence-transformers module (Li et al. 2020; TSDAE paper Sec. 5.5).

The pooled vector u of the frozen encoder is mapped to z = f_φ⁻¹(u), which is trained to follow a
standard Gaussian by maximum likelihood (the TSDAE paper's Eq. 1-2 of Sec. 5.5, change of variables)::

    max_φ  E_u [ log p_Z(f_φ⁻¹(u)) + log |det ∂f_φ⁻¹(u) / ∂u| ]

The flow is Glow (Kingma and Dhariwal 2018) from the maintained ``normflows`` library: ``steps``
blocks of affine coupling (a small conv net of ``hidden_channels`` channels), invertible 1x1
convolution (LU-parametrised) and ActNorm (initialised from the first batch), on u seen as a
(d, 1, 1) image as in the BERT-flow code, with a standard-normal base. One level, no multi-scale
split: a 1x1 "image" cannot be squeezed. The module's output ``sentence_embedding`` is z; in
training mode it also leaves ``flow_log_likelihood`` (log p(u) per sentence) for the loss.

Saved as a module folder (config + safetensors) of the model; ``sentlab`` loads it, and so does
``SentenceTransformer(path, trust_remote_code=True)`` — the flag lets sentence-transformers import
this installed class, nothing is downloaded.
"""

from __future__ import annotations

import math

import torch

from sentlab.encoders.heads import ModuleWithWeights
from sentlab.precision import float32_region


def glow(dimension: int, steps: int, hidden_channels: int, seed: int):
    """A normflows ``NormalizingFlow``: ``steps`` Glow blocks over (dimension, 1, 1), N(0, I) base."""
    import normflows as nf

    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)  # the 1x1 convolutions start from a random rotation: same one on reload
    try:
        blocks = [
            nf.flows.GlowBlock(dimension, hidden_channels, split_mode="channel", scale=True) for _ in range(steps)
        ]
    finally:
        torch.random.set_rng_state(generator_state)
    base = nf.distributions.DiagGaussian((dimension, 1, 1), trainable=False)
    return nf.NormalizingFlow(q0=base, flows=blocks)


class GlowFlow(ModuleWithWeights):
    """z = f⁻¹(u) of a Glow flow over the pooled vector (see module doc).

    Float32 on purpose under mixed precision (autocast is switched off in :meth:`forward`): the
    log-likelihood sums log |det| over every coupling and ActNorm scale, and the 1x1 convolutions'
    LU factors are exponentiated; in bf16 (8 significant bits) each of those terms is off by up to
    0.4 %, on a sum of hundreds of nats. The flow is small (a few conv nets of 32 channels), so
    float32 costs little beside the encoder, which does run in half precision."""

    runs_in_float32 = "log-determinants and exponentiated LU factors need float32; the flow is small beside the encoder"

    config_keys: list[str] = ["embedding_dimension", "steps", "hidden_channels", "seed"]

    def __init__(self, embedding_dimension: int, steps: int = 6, hidden_channels: int = 32, seed: int = 0):
        super().__init__()
        if embedding_dimension % 2:
            raise ValueError(f"a Glow coupling splits the vector in halves; dimension {embedding_dimension} is odd")
        self.embedding_dimension, self.steps, self.hidden_channels, self.seed = (
            embedding_dimension,
            steps,
            hidden_channels,
            seed,
        )
        self.flow = glow(embedding_dimension, steps, hidden_channels, seed)

    def initialise(self, u: torch.Tensor) -> None:
        """Glow's data-dependent ActNorm initialisation (each ActNorm scales its input to zero mean,
        unit variance) from the vectors ``u``, instead of from the first training batch."""
        for module in self.flow.modules():
            if hasattr(module, "data_dep_init_done"):
                module.data_dep_init_done = torch.tensor(0.0)
        with torch.no_grad(), float32_region(u.device.type):
            self.flow.inverse_and_log_det(u.float()[:, :, None, None])

    def latent_and_log_likelihood(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """z = f⁻¹(u) and log p(u) = log N(z; 0, I) + log |det ∂z/∂u|, per row."""
        z, log_det = self.flow.inverse_and_log_det(u.float()[:, :, None, None])
        log_pz = self.flow.q0.log_prob(z)
        return z.flatten(1), log_pz + log_det

    def forward(self, features: dict[str, torch.Tensor], **kwargs) -> dict[str, torch.Tensor]:
        u = features["sentence_embedding"]
        with float32_region(u.device.type):
            if self.training:
                z, log_likelihood = self.latent_and_log_likelihood(u)
                features["flow_log_likelihood"] = log_likelihood
            else:
                z = self.flow.inverse(u.float()[:, :, None, None]).flatten(1)
        features["sentence_embedding"] = z.to(u.dtype)
        return features

    def sample_inverse(self, z: torch.Tensor) -> torch.Tensor:
        """u = f(z) (the flow's generative direction)."""
        return self.flow.forward(z.float()[:, :, None, None]).flatten(1)

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension


def standard_normal_log_density(z: torch.Tensor) -> torch.Tensor:
    """log N(z; 0, I) per row (for tests and analyses)."""
    return -0.5 * (z.pow(2).sum(dim=1) + z.shape[1] * math.log(2 * math.pi))
