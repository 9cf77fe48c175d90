"""The analyses of the RankEncoder paper (Seonwoo et al. 2023), each as JSON (+ PNG for figures).

* :func:`similar_pairs` - Sec. 5.4 / Table 5: Spearman on STS-B test pairs with gold in [0.67, 1.0]
  (0-1 scale) for E, RankEncoder_E (Eq. 2) and, given a re-trained model, E2 and Eq. 7.
* :func:`overlapping_neighbours` - Sec. 5.3 / Fig. 6: STS-B test pairs grouped by E's cosine; per
  group the mean size of the intersection of the two sentences' top-100 corpus neighbours (exact
  inner-product search with faiss) and the Spearman gain of RankEncoder_E over E.
* :func:`rank_geometry` - Sec. 5.5 / Table 2: alignment and uniformity of E's vectors and of the rank
  vectors (STS-B dev; positives are pairs with gold > 4).
* :func:`vector_map` - Fig. 7: 1,000 STS-B sentences laid out in 2-D from the distances
  1 - cos (E's space) and 1 - z_i . z_j (rank space), side by side. The layout method is not named in
  the paper; sentlab uses metric MDS (scikit-learn), which keeps distances (t-SNE would equalise
  densities, the very thing the figure shows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from sentlab.data.sts import STSPairs, load_sts_task
from sentlab.evaluation.scoring import (
    CosineScorer,
    EmbeddingCache,
    PairScorer,
    cosine_rows,
)
from sentlab.evaluation.sts import (
    alignment_uniformity,
    correlations,
    similar_pairs_score,
)
from sentlab.rank.index import CorpusIndex
from sentlab.rank.model import RankEncoder, RankScorer

COSINE_BINS = (-1.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _write(out_dir: Path, name: str, payload: dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def similar_pairs(variants: dict[str, PairScorer], stsb_test: STSPairs) -> dict[str, Any]:
    rows = {}
    for name, scorer in variants.items():
        result = similar_pairs_score(scorer, stsb_test)
        rows[name] = {"spearman": result.spearman, "n_pairs": result.n_pairs}
    return {"analysis": "similar_pairs", "gold_range_0_1": [0.67, 1.0], "split": "STS-B test", "variants": rows}


def top_k_neighbours(queries: np.ndarray, index: CorpusIndex, k: int = 100) -> np.ndarray:
    """Ids of the k corpus sentences with the highest cosine to each query (exact search, faiss)."""
    import faiss

    search = faiss.IndexFlatIP(index.dim)
    search.add(np.ascontiguousarray(index.vectors, dtype=np.float32))
    unit = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    _, ids = search.search(np.ascontiguousarray(unit, dtype=np.float32), min(k, len(index)))
    return ids


def overlapping_neighbours(
    encoder: EmbeddingCache,
    index: CorpusIndex,
    pairs: STSPairs,
    k: int = 100,
    bins: tuple[float, ...] = COSINE_BINS,
    min_pairs: int = 10,
) -> dict[str, Any]:
    a = encoder.encode(pairs.sentences1)
    b = encoder.encode(pairs.sentences2)
    cos = cosine_rows(a, b)
    ranked = RankScorer(encoder, index, 1.0).score(pairs.sentences1, pairs.sentences2)
    neighbours = top_k_neighbours(np.concatenate([a, b]), index, k)  # one search index, one search
    neighbours_a, neighbours_b = neighbours[: len(a)], neighbours[len(a) :]
    overlap = np.array([len(np.intersect1d(x, y)) for x, y in zip(neighbours_a, neighbours_b)])
    groups = []
    for low, high in zip(bins[:-1], bins[1:]):
        mask = (cos > low) & (cos <= high)
        group: dict[str, Any] = {"cosine_range": [low, high], "n_pairs": int(mask.sum())}
        if mask.sum() >= 1:
            group["mean_overlap"] = float(overlap[mask].mean())
        if mask.sum() >= min_pairs and np.ptp(cos[mask]) > 0 and np.ptp(ranked[mask]) > 0:
            base, _ = correlations(cos[mask], pairs.scores[mask])
            rank, _ = correlations(ranked[mask], pairs.scores[mask])
            group.update({"spearman_E": base, "spearman_RankEncoder_E": rank, "gain": rank - base})
        groups.append(group)
    return {
        "analysis": "overlapping_neighbours",
        "k": k,
        "split": "STS-B test",
        "corpus_size": len(index),
        "min_pairs_for_spearman": min_pairs,
        "groups": groups,
    }


def rank_geometry(encoder: EmbeddingCache, index: CorpusIndex, dev: STSPairs) -> dict[str, Any]:
    base = alignment_uniformity(CosineScorer(encoder), dev)
    rank = alignment_uniformity(RankScorer(encoder, index, 1.0), dev)
    return {"analysis": "rank_geometry", "split": "STS-B dev", "E": base, "RankEncoder_E": rank}


def vector_map(
    encoder: EmbeddingCache, index: CorpusIndex, pairs: STSPairs, n: int = 1000, seed: int = 0
) -> dict[str, Any]:
    from sklearn.manifold import MDS

    sentences = list(dict.fromkeys(pairs.sentences1 + pairs.sentences2))
    rng = np.random.default_rng(seed)
    sample = [sentences[i] for i in sorted(rng.choice(len(sentences), size=min(n, len(sentences)), replace=False))]
    base = encoder.encode(sample)
    unit = base / np.linalg.norm(base, axis=1, keepdims=True)
    z = RankScorer(encoder, index, 1.0).rank_vectors(base).double()
    spaces = {
        "E": 1 - unit.astype(np.float64) @ unit.T.astype(np.float64),
        "RankEncoder_E": (1 - z @ z.T).cpu().numpy(),
    }
    layout = {}
    for name, distances in spaces.items():
        distances = np.clip((distances + distances.T) / 2, 0, None)
        np.fill_diagonal(distances, 0)
        mds = MDS(
            n_components=2,
            metric="precomputed",
            metric_mds=True,
            init="random",
            random_state=seed,
            n_init=1,
            max_iter=300,
            normalized_stress="auto",
        )
        coords = mds.fit_transform(distances)
        upper = distances[np.triu_indices(len(distances), 1)]
        layout[name] = {
            "coordinates": coords.round(5).tolist(),
            "stress": float(mds.stress_),
            "mean_distance": float(upper.mean()),
            "mean_nearest_neighbour_distance": float(np.sort(distances, axis=1)[:, 1].mean()),
        }
    return {
        "analysis": "vector_map",
        "n_sentences": len(sample),
        "seed": seed,
        "layout": "metric MDS",
        "sentences": sample,
        "spaces": layout,
    }


def plot_overlap(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in result["groups"] if "mean_overlap" in g]
    labels = [f"{g['cosine_range'][0]:.1f}-{g['cosine_range'][1]:.1f}" for g in groups]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(labels, [g["mean_overlap"] for g in groups], color="gold", label="overlapping neighbours (top 100)")
    ax.set_xlabel("cosine similarity of the pair under E")
    ax.set_ylabel("mean overlapping neighbours")
    ax2 = ax.twinx()
    gains = [(i, g["gain"]) for i, g in enumerate(groups) if "gain" in g]
    ax2.plot([i for i, _ in gains], [v for _, v in gains], "o-", color="tab:blue", label="Spearman gain")
    ax2.axhline(0, color="grey", lw=0.5)
    ax2.set_ylabel("RankEncoder_E - E (Spearman x 100)")
    ax.set_title(f"Overlapping neighbours and gain (corpus {result['corpus_size']})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_map(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    for ax, (name, space) in zip(axes, result["spaces"].items()):
        coords = np.asarray(space["coordinates"])
        ax.scatter(coords[:, 0], coords[:, 1], s=4, color="grey")
        ax.set_title(f"{name} (dist = 1 - similarity)")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def analyze(
    encoder_model,
    index: CorpusIndex,
    out_dir: str | Path,
    data_dir: str | Path | None = None,
    retrained: RankEncoder | None = None,
    name: str = "E",
) -> dict[str, Path]:
    """Run all four analyses for encoder E with its index; write JSON and PNG files into ``out_dir``."""
    out_dir = Path(out_dir)
    encoder = EmbeddingCache(encoder_model)
    test = load_sts_task("STS-B", data_dir, split="test")
    dev = load_sts_task("STS-B", data_dir, split="dev")
    variants: dict[str, PairScorer] = {
        name: CosineScorer(encoder),
        f"RankEncoder_{name}": RankScorer(encoder, index, 1.0),
    }
    if retrained is not None:
        cache2 = EmbeddingCache(retrained.encoder)
        variants[f"RankEncoder_{name}-retrain"] = CosineScorer(cache2)
        variants[f"RankEncoder_{name}-retrain-inf"] = RankScorer(cache2, retrained.index, retrained.lambda_inf)
    written = {"similar_pairs": _write(out_dir, "similar_pairs", similar_pairs(variants, test))}
    overlap = overlapping_neighbours(encoder, index, test)
    written["overlapping_neighbours"] = _write(out_dir, "overlapping_neighbours", overlap)
    plot_overlap(overlap, out_dir / "overlapping_neighbours.png")
    written["rank_geometry"] = _write(out_dir, "rank_geometry", rank_geometry(encoder, index, dev))
    vmap = vector_map(encoder, index, test)
    written["vector_map"] = _write(out_dir, "vector_map", vmap)
    plot_map(vmap, out_dir / "vector_map.png")
    return written
