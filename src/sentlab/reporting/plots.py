"""RankCSE's figures, each as a PNG plus the numbers behind it (JSON).

* Fig. 3: the alignment-uniformity plane (STS-B dev; lower is better on both axes), one point per
  model, read from ``sentlab eval`` results files.
* Fig. 4: the distribution of cosine similarity of STS-B dev pairs per gold-score bucket
  ([0, 1), [1, 2), [2, 3), [3, 4), [4, 5]), one panel per model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from sentlab.data.sts import load_sts_task
from sentlab.errors import DataError
from sentlab.evaluation.results import EvalReport
from sentlab.evaluation.scoring import PairScorer

GOLD_BUCKETS = ((0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.0), (4.0, 5.0))


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def alignment_uniformity_points(results_files: list[str | Path]) -> list[dict[str, Any]]:
    points = []
    for path in results_files:
        report = EvalReport.read(path)
        if "alignment" not in report.summary or "uniformity" not in report.summary:
            raise DataError(f"{path}: has no alignment / uniformity (run `sentlab eval --tasks sts`)")
        points.append(
            {
                "model": report.model,
                "alignment": report.summary["alignment"],
                "uniformity": report.summary["uniformity"],
                "sts_avg": report.summary.get("sts_avg"),
                "file": str(path),
            }
        )
    return points


def plot_alignment_uniformity(points: list[dict[str, Any]], out_dir: str | Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "alignment_uniformity.json").write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 5))
    for point in points:
        ax.scatter(point["uniformity"], point["alignment"], s=40)
        label = point["model"] + (f" ({point['sts_avg']:.2f})" if point.get("sts_avg") is not None else "")
        ax.annotate(
            label, (point["uniformity"], point["alignment"]), textcoords="offset points", xytext=(4, 4), fontsize=8
        )
    ax.set_xlabel("uniformity (lower is better)")
    ax.set_ylabel("alignment (lower is better)")
    ax.set_title("Alignment and uniformity, STS-B dev")
    fig.tight_layout()
    path = out_dir / "alignment_uniformity.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def cosine_by_gold_bucket(scorer: PairScorer, data_dir: str | Path | None = None) -> dict[str, Any]:
    dev = load_sts_task("STS-B", data_dir, split="dev")
    cos = np.asarray(scorer.score(dev.sentences1, dev.sentences2), dtype=np.float64)
    buckets = []
    for low, high in GOLD_BUCKETS:
        mask = (dev.scores >= low) & ((dev.scores < high) if high < 5 else (dev.scores <= high))
        values = cos[mask]
        buckets.append(
            {
                "gold_range": [low, high],
                "n_pairs": int(mask.sum()),
                "cosines": values.round(5).tolist(),
                "mean": float(values.mean()) if len(values) else None,
                "quartiles": np.quantile(values, [0.25, 0.5, 0.75]).tolist() if len(values) else None,
            }
        )
    return {"model": scorer.name, "split": "STS-B dev", "buckets": buckets}


def plot_cosine_buckets(distributions: list[dict[str, Any]], out_dir: str | Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cosine_by_gold_bucket.json").write_text(json.dumps(distributions, indent=2) + "\n", encoding="utf-8")
    plt = pyplot()
    fig, axes = plt.subplots(1, len(distributions), figsize=(4.5 * len(distributions), 4), squeeze=False)
    for ax, dist in zip(axes[0], distributions):
        data = [b["cosines"] or [np.nan] for b in dist["buckets"]]
        ax.boxplot(data, orientation="horizontal", showfliers=False)
        ax.set_yticks(
            range(1, len(data) + 1), [f"{b['gold_range'][0]:.0f}-{b['gold_range'][1]:.0f}" for b in dist["buckets"]]
        )
        ax.set_xlabel("cosine similarity")
        ax.set_title(dist["model"], fontsize=9)
    axes[0][0].set_ylabel("gold score bucket")
    fig.tight_layout()
    path = out_dir / "cosine_by_gold_bucket.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_relation_similarity(
    names: list[str], similarity: np.ndarray, out_dir: str | Path, title: str = "RSE relation vectors"
) -> Path:
    """RSE Fig. 4: cosine similarity between the relation vectors, as a heatmap (+ the matrix as JSON)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"relations": names, "cosine": np.round(similarity, 5).tolist(), "title": title}
    (out_dir / "relation_similarity.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(1.1 * len(names) + 2.5, 1.0 * len(names) + 1.5))
    image = ax.imshow(similarity, cmap="viridis", vmin=-1, vmax=1)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(
                j,
                i,
                f"{similarity[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if similarity[i, j] < 0.5 else "black",
            )
    fig.colorbar(image, ax=ax, fraction=0.046)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path = out_dir / "relation_similarity.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_scores_by_relation(
    scores: dict[str, dict[str, float]], out_dir: str | Path, title: str = "USEB under each relational score"
) -> Path:
    """RSE Fig. 5: one group of bars per task, one bar per relational score (+ the scores as JSON).
    ``scores``: {scoring name: {task: score}}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scores_by_relation.json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    tasks = list(dict.fromkeys(task for per_task in scores.values() for task in per_task))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(2.2 * len(tasks) + 3, 4))
    width = 0.8 / max(1, len(scores))
    for k, (name, per_task) in enumerate(scores.items()):
        ax.bar(np.arange(len(tasks)) + k * width, [per_task.get(t, np.nan) for t in tasks], width, label=name)
    ax.set_xticks(np.arange(len(tasks)) + 0.4 - width / 2, tasks)
    ax.set_ylabel("score x 100")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out_dir / "scores_by_relation.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
