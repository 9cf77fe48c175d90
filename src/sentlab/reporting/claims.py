"""Claims re-tested over seeds and items: a published comparison
declared as data (:class:`Claim`: which row should beat which, on what), judged from results files
written with ``sentlab eval --items`` by the multi-bootstrap over seeds and items
(:func:`sentlab.evaluation.uncertainty.seed_item_difference`), and rendered as a table and a figure.

Verdicts: *holds* when the difference is beyond the noise (the combined interval excludes 0 and every
seed agrees) in the claimed direction; *does not hold* when it is beyond the noise the other way;
*inconclusive* otherwise (including one seed: training randomness not measured).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentlab.data.sts import STS_TASKS
from sentlab.errors import DataError
from sentlab.evaluation.uncertainty import (
    SeedItemDifference,
    headline,
    parts_items,
    seed_item_difference,
)

MEASURES = ("sts_avg", "ranking_kcc_avg", "domain")  # headlines over several tasks; any other name is one task


@dataclass(frozen=True)
class Claim:
    """``better`` scores above ``worse`` on ``task``: ``sts_avg`` (the seven STS tasks),
    ``ranking_kcc_avg`` (their ranking tasks, Kendall's tau), ``domain`` (CQADupStack and TwitterPara)
    or one task's name (e.g. ``STS-B``). ``paper`` is the paper's margin on its own scale (None where
    it reports none for this measure)."""

    id: str
    source: str
    better: str
    worse: str
    task: str
    paper: float | None = None

    @property
    def statement(self) -> str:
        return f"{self.better} > {self.worse} on {self.task}"


def task_items(report: dict, task: str) -> dict:
    """The items behind ``task``'s headline in a results file written with ``--items``."""
    names = {
        "sts_avg": list(STS_TASKS),
        "ranking_kcc_avg": [f"{t}-ranking" for t in STS_TASKS],
        "domain": ["CQADupStack", "TwitterPara"],
    }.get(task, [task])
    found = []
    for name in names:
        items = report.get("tasks", {}).get(name, {}).get("extra", {}).get("items")
        if items is None:
            raise DataError(
                f"{report.get('model', 'a results file')}: no items for {name} (score it with sentlab eval --items)"
            )
        found.append(items)
    return parts_items(found) if task in MEASURES else found[0]


def verdict(difference: SeedItemDifference) -> str:
    if not difference.beyond_noise:
        return "inconclusive"
    return "holds" if difference.difference > 0 else "does not hold"


def compare(claim: Claim, better: Sequence[dict[str, Any]], worse: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The claim judged from results files (one per seed on each side; a baseline: one): both means,
    the difference with its three intervals, per-seed differences, the paper's margin, the verdict."""
    a = [task_items(r, claim.task) for r in better]
    b = [task_items(r, claim.task) for r in worse]
    difference = seed_item_difference(a, b)
    rounded = {
        k: (round(v, 2) if isinstance(v, float) else [round(x, 2) for x in v] if k == "per_seed" else v)
        for k, v in difference.to_dict().items()
    }
    return {
        "claim": claim.id,
        "source": claim.source,
        "statement": claim.statement,
        "verdict": verdict(difference),
        "better_mean": round(sum(headline(i) for i in a) / len(a), 2),
        "worse_mean": round(sum(headline(i) for i in b) / len(b), 2),
        "paper_margin": claim.paper,
        **rounded,
    }


def claims_table(rows: list[dict[str, Any]]) -> str:
    """The judged claims (:func:`compare`) as a Markdown table."""
    table = [
        "| claim | source | comparison | mean | vs | margin [seeds x items] [items] [seeds] | per seed | paper "
        "| verdict |",
        "|---|---|---|---:|---:|---|---|---:|---|",
    ]
    for r in rows:
        paper = "" if r["paper_margin"] is None else format(r["paper_margin"], "+.2f")
        table.append(
            f"| {r['claim']} | {r['source']} | {r['statement']} | {r['better_mean']:.2f} | "
            f"{r['worse_mean']:.2f} | {r['difference']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}] "
            f"[{r['item_low']:+.2f}, {r['item_high']:+.2f}] [{r['seed_low']:+.2f}, {r['seed_high']:+.2f}] | "
            f"{', '.join(f'{d:+.2f}' for d in r['per_seed'])} | {paper} | {r['verdict']} |"
        )
    return "\n".join(table)


def write_claims(output: Path, rows: list[dict[str, Any]], extra: dict[str, Any], sections: Sequence[str] = ()) -> None:
    """``claims.json`` (the rows and ``extra``), ``claims.md`` (the table, then ``sections``) and
    ``claims.png`` (each margin with its interval over seeds and items; x: the paper's margin)."""
    output.mkdir(parents=True, exist_ok=True)
    (output / "claims.json").write_text(json.dumps({"claims": rows, **extra}, indent=1) + "\n", encoding="utf-8")
    (output / "claims.md").write_text("\n\n".join(["# Claims", claims_table(rows), *sections]) + "\n", encoding="utf-8")
    if not rows:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.2))
    for y, r in enumerate(rows):
        colour = {"holds": "tab:green", "does not hold": "tab:red"}.get(r["verdict"], "tab:grey")
        ax.errorbar(
            r["difference"],
            y,
            xerr=[[r["difference"] - r["low"]], [r["high"] - r["difference"]]],
            fmt="o",
            color=colour,
        )
        if r["paper_margin"] is not None:
            ax.plot(r["paper_margin"], y, "x", color="black")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [f"{r['claim']}: {r['statement']}" for r in rows], fontsize=7)
    ax.set_xlabel("margin (points; 95% CI over seeds and items; x: the paper's margin)")
    fig.tight_layout()
    fig.savefig(output / "claims.png", dpi=120)
    plt.close(fig)
