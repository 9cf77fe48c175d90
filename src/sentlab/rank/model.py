"""RankEncoder inference (Seonwoo et al. 2023, Eq. 2 and Eq. 7) and the RankEncoder model folder.

Eq. 7 (mixed similarity):

    sim(x_i, x_j) = lambda_inf * z_i . z_j + (1 - lambda_inf) * cos(E(x_i), E(x_j))

with z the rank vectors of E over the corpus (Eq. 2-3). ``lambda_inf = 1`` is RankEncoder_E
(rank vectors alone), ``lambda_inf = 0`` plain cosine; both ends are exact, not approximate. The
paper's setting is 0.1 with E the re-trained encoder E2.

A RankEncoder folder is a sentence-transformers model folder (``SentenceTransformer(path)`` loads
the encoder) with the corpus index of that encoder and lambda_inf beside it::

    MODEL/...                        the encoder, as sentence-transformers saves it
    MODEL/rankencoder/               the corpus index (see :mod:`sentlab.rank.index`)
    MODEL/rankencoder.json           {"lambda_inf": ...}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer

from sentlab.errors import DataError
from sentlab.evaluation.scoring import cosine_rows, encode_unique
from sentlab.rank.index import CorpusIndex
from sentlab.rank.vectors import rank_vectors

RANKENCODER_INDEX_DIR = "rankencoder"
RANKENCODER_CONFIG = "rankencoder.json"
DEFAULT_LAMBDA_INF = 0.1  # Sec. 4.3


def check_lambda(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise DataError(f"lambda_inf must lie in [0, 1], got {value}")
    return float(value)


class RankScorer:
    """Pair scorer for Eq. 7 (any ``lambda_inf`` in [0, 1]); plugs into the STS evaluators.

    ``encode`` returns ``[sqrt(lambda) * z, sqrt(1 - lambda) * v / |v|]``, whose inner products are
    exactly Eq. 7, so alignment / uniformity are measured in the space the similarity lives in
    (with ``lambda_inf = 1``: the rank vectors of Table 2).
    """

    def __init__(
        self,
        encoder: SentenceTransformer,
        index: CorpusIndex,
        lambda_inf: float = DEFAULT_LAMBDA_INF,
        batch_size: int = 128,
        name: str = "rankencoder",
        pair_chunk: int = 256,
        show_progress_bar: bool = False,
    ):
        self.encoder = encoder
        self.index = index
        self.lambda_inf = check_lambda(lambda_inf)
        self.batch_size = batch_size
        self.name = name
        self.pair_chunk = pair_chunk
        self.show_progress_bar = show_progress_bar

    def _corpus(self) -> torch.Tensor:
        return self.index.tensor(self.encoder.device)

    def rank_vectors(self, embeddings: np.ndarray) -> torch.Tensor:
        """Eq. 2-3 for rows of base-encoder ``embeddings``."""
        queries = F.normalize(torch.as_tensor(embeddings, dtype=torch.float32, device=self.encoder.device), dim=-1)
        return rank_vectors(queries, self._corpus(), normalized=True)

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        embeddings, row = encode_unique(self.encoder, sentences, self.batch_size, self.show_progress_bar)
        embeddings = embeddings[[row[s] for s in sentences]]
        parts = []
        if self.lambda_inf > 0:
            parts.append(np.sqrt(self.lambda_inf) * self.rank_vectors(embeddings).cpu().numpy())
        if self.lambda_inf < 1:
            unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
            parts.append(np.sqrt(1 - self.lambda_inf) * unit)
        return np.concatenate(parts, axis=1)

    def rank_scores(self, embeddings: np.ndarray, rows1: np.ndarray, rows2: np.ndarray) -> np.ndarray:
        """z_a . z_b for the pairs (rows1[k], rows2[k]) of ``embeddings``, a chunk of pairs at a time."""
        scores = np.empty(len(rows1), dtype=np.float64)
        for start in range(0, len(rows1), self.pair_chunk):
            a, b = rows1[start : start + self.pair_chunk], rows2[start : start + self.pair_chunk]
            needed, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
            z = self.rank_vectors(embeddings[needed])
            za, zb = (
                z[torch.as_tensor(inverse[: len(a)], device=z.device)],
                z[torch.as_tensor(inverse[len(a) :], device=z.device)],
            )
            scores[start : start + len(a)] = (za * zb).sum(dim=1).double().cpu().numpy()
        return scores

    def similarity_parts(
        self, sentences1: Sequence[str], sentences2: Sequence[str], with_rank: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Eq. 7's two terms for the pairs: cos(E(x_i), E(x_j)) and z_i . z_j (None without ``with_rank``)."""
        if len(sentences1) != len(sentences2):
            raise ValueError("score() needs two lists of equal length")
        embeddings, row = encode_unique(
            self.encoder, [*sentences1, *sentences2], self.batch_size, self.show_progress_bar
        )
        rows1 = np.asarray([row[s] for s in sentences1])
        rows2 = np.asarray([row[s] for s in sentences2])
        cosine = cosine_rows(embeddings[rows1], embeddings[rows2])
        return cosine, self.rank_scores(embeddings, rows1, rows2) if with_rank else None

    @staticmethod
    def mix(cosine: np.ndarray, ranked: np.ndarray | None, lambda_inf: float) -> np.ndarray:
        """Eq. 7; exactly ``cosine`` at lambda 0 and exactly ``ranked`` at lambda 1."""
        if lambda_inf == 0:
            return cosine
        if lambda_inf == 1:
            return ranked
        return lambda_inf * ranked + (1 - lambda_inf) * cosine

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray:
        cosine, ranked = self.similarity_parts(sentences1, sentences2, with_rank=self.lambda_inf > 0)
        return self.mix(cosine, ranked, self.lambda_inf)


@dataclass
class RankEncoder:
    """An encoder, its corpus index and lambda_inf: one folder, one object."""

    encoder: SentenceTransformer
    index: CorpusIndex
    lambda_inf: float = DEFAULT_LAMBDA_INF

    def __post_init__(self) -> None:
        self.lambda_inf = check_lambda(self.lambda_inf)

    def scorer(self, batch_size: int = 128, name: str = "rankencoder", lambda_inf: float | None = None) -> RankScorer:
        lam = self.lambda_inf if lambda_inf is None else lambda_inf
        return RankScorer(self.encoder, self.index, lam, batch_size=batch_size, name=name)

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        self.encoder.save(str(folder))
        self.index.save(folder / RANKENCODER_INDEX_DIR)
        (folder / RANKENCODER_CONFIG).write_text(
            json.dumps({"lambda_inf": self.lambda_inf}, indent=2) + "\n", encoding="utf-8"
        )
        return folder

    @staticmethod
    def is_rankencoder(folder: str | Path) -> bool:
        return Path(folder, RANKENCODER_CONFIG).is_file()

    @classmethod
    def load(
        cls, folder: str | Path, device: str | None = None, encoder: SentenceTransformer | None = None
    ) -> RankEncoder:
        from sentlab.encoders.loading import load_encoder

        folder = Path(folder)
        if not cls.is_rankencoder(folder):
            raise DataError(f"{folder}: not a RankEncoder folder ({RANKENCODER_CONFIG} missing)")
        try:
            config = json.loads((folder / RANKENCODER_CONFIG).read_text("utf-8"))
            lambda_inf = float(config["lambda_inf"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise DataError(f'{folder / RANKENCODER_CONFIG}: expected {{"lambda_inf": <number>}}') from None
        encoder = encoder or load_encoder(folder, device=device)
        index = CorpusIndex.load(folder / RANKENCODER_INDEX_DIR)
        index.check_encoder(encoder)
        return cls(encoder, index, lambda_inf)
