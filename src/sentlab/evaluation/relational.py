"""Relational scoring with an RSE model (Wang and Li, Sec. 3.3 "How can we use?", App. C).

The score of a pair under relation r_k is f(s_i, s_j, r_k) = cos(h_i + r_k, h_j); a mix of relations
is Σ_k w_k f(s_i, s_j, r_k) with the weights normalised to sum to 1 (the released code's
``sim_rel_func``). The mix is linear in the unit row of h_j, so a query's relational row
q_i = Σ_k w_k (h_i + r_k) / ||h_i + r_k|| scores every candidate by one inner product: retrieval tasks
(USEB, EvalRank) use it through :meth:`RelationalScorer.query_rows`.

Direction. f is not symmetric. ``forward`` (the default, the paper's definition) scores s_i → s_j
with the first sentence of a pair, or the query of a retrieval task, as the head. ``max`` is the
released code's STS scoring: the larger of the two directions' mixes. Retrieval tasks are always
scored forward, query as the head, as the released code's USEB evaluation does; ``max`` applies to
pair tasks (STS, the ranking tasks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentlab.errors import ConfigError
from sentlab.evaluation.scoring import CosineScorer, encode_unique
from sentlab.evaluation.useb import unit_rows

RELATION_TABLE = "rse_relations.json"
RELATION_VECTORS = "rse_relations.safetensors"
DIRECTIONS = ("forward", "max")


@dataclass
class RelationTable:
    """The relation vectors saved beside an RSE model, with its default scoring weights."""

    names: list[str]
    vectors: np.ndarray  # (relations, dimension), float32
    weights: dict[str, float]

    @staticmethod
    def is_saved_in(folder: str | Path) -> bool:
        return (Path(folder) / RELATION_TABLE).is_file()

    @classmethod
    def load(cls, folder: str | Path, dimension: int | None = None) -> RelationTable:
        """The table saved in ``folder``; one whose size does not match the encoder's ``dimension``
        (checked when given) is a one-line error."""
        from safetensors.numpy import load_file

        folder = Path(folder)
        try:
            table = json.loads((folder / RELATION_TABLE).read_text("utf-8"))
            vectors = load_file(str(folder / RELATION_VECTORS))["relation_vectors"]
            names, weights = list(table["relations"]), dict(table["weights"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"{folder}: no readable RSE relation table ({str(err).splitlines()[0]})") from None
        if vectors.ndim != 2 or vectors.shape != (len(names), dimension or vectors.shape[1]):
            raise ConfigError(
                f"{folder}: relation table is {tuple(vectors.shape)}, the encoder needs "
                f"({len(names)}, {dimension or 'any'})"
            )
        return cls(names, vectors.astype(np.float32), weights)

    @classmethod
    def zeros(cls, names: Sequence[str], dimension: int) -> RelationTable:
        """Every relation vector 0: plain cosine under every relation (a start model's baseline)."""
        return cls(list(names), np.zeros((len(names), dimension), np.float32), {names[0]: 1.0})

    def save(self, folder: str | Path) -> None:
        from safetensors.numpy import save_file

        folder = Path(folder)
        save_file(
            {"relation_vectors": np.ascontiguousarray(self.vectors, dtype=np.float32)}, str(folder / RELATION_VECTORS)
        )
        text = json.dumps({"relations": self.names, "weights": self.weights}, indent=1) + "\n"
        (folder / RELATION_TABLE).write_text(text, encoding="utf-8")

    def weight_vector(self, weights: Mapping[str, float] | None = None) -> np.ndarray:
        """Normalised weights over :attr:`names` (default: the saved ones); unknown names, negative
        weights and an all-zero mix are one-line errors."""
        weights = self.weights if weights is None else weights
        unknown = sorted(set(weights) - set(self.names))
        if unknown:
            raise ConfigError(f"unknown relation(s) {', '.join(unknown)}; this model has {', '.join(self.names)}")
        if any(not np.isfinite(w) or w < 0 for w in weights.values()):
            raise ConfigError("relation weights must be finite and >= 0")
        vector = np.asarray([float(weights.get(name, 0.0)) for name in self.names])
        if vector.sum() <= 0:
            raise ConfigError("relation weights sum to 0: give at least one relation a positive weight")
        return vector / vector.sum()

    def similarity(self) -> np.ndarray:
        """Cosine similarity between the relation vectors (Fig. 4)."""
        unit = self.vectors / np.maximum(np.linalg.norm(self.vectors, axis=1, keepdims=True), 1e-12)
        return unit.astype(np.float64) @ unit.T.astype(np.float64)


def parse_relation_weights(text: str) -> dict[str, float]:
    """``entailment=1,duplicate_question=0.5`` -> {name: weight}."""
    weights = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise ConfigError(f"--relation-weights: expected name=weight[,name=weight...], got {part!r}")
    if not weights:
        raise ConfigError("--relation-weights is empty")
    return weights


class RelationalScorer(CosineScorer):
    """A pair scorer (:class:`sentlab.evaluation.scoring.PairScorer`) for RSE's relational score;
    ``encode`` gives the plain embeddings h (the tail side of every relation), as the cosine scorer.

    ``model`` is a SentenceTransformer or an :class:`~sentlab.evaluation.scoring.EmbeddingCache`
    (anything with ``encode``); ``weights`` default to the table's saved ones.
    """

    def __init__(
        self,
        model,
        table: RelationTable,
        weights: Mapping[str, float] | None = None,
        direction: str = "forward",
        batch_size: int = 128,
        name: str = "rse",
    ):
        if direction not in DIRECTIONS:
            raise ConfigError(f"unknown direction {direction!r} (choose from {', '.join(DIRECTIONS)})")
        super().__init__(model, batch_size=batch_size, name=name)
        self.table, self.direction = table, direction
        self.weights = table.weight_vector(weights)

    def query_rows(self, sentences: Sequence[str]) -> np.ndarray:
        """Σ_k w_k unit(h + r_k): its inner product with unit(h_j) is the mixed forward score."""
        h = self.encode(sentences).astype(np.float64)
        rows = np.zeros_like(h)
        for weight, vector in zip(self.weights, self.table.vectors.astype(np.float64)):
            if weight:
                rows += weight * unit_rows(h + vector, np.float64)
        return rows.astype(np.float32)

    def relation_scores(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray:
        """(pairs, relations): cos(h_1 + r_k, h_2) for every relation, forward (Table 9's scores)."""
        embeddings, index = encode_unique(self.model, [*sentences1, *sentences2], self.batch_size)
        h1 = embeddings[[index[s] for s in sentences1]].astype(np.float64)
        h2 = unit_rows(embeddings[[index[s] for s in sentences2]], np.float64)
        return np.stack(
            [(unit_rows(h1 + r, np.float64) * h2).sum(axis=1) for r in self.table.vectors.astype(np.float64)], axis=1
        )

    def score(self, sentences1: Sequence[str], sentences2: Sequence[str]) -> np.ndarray:
        forward = self.relation_scores(sentences1, sentences2) @ self.weights
        if self.direction == "forward":
            return forward
        return np.maximum(forward, self.relation_scores(sentences2, sentences1) @ self.weights)
