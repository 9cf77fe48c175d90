"""The report of ``sentlab adapt``: a table of every arm and the start model on the user's tasks and the
general task, a bar chart with the intervals, and a one-line recommendation that states the measured
margin and its uncertainty.

Uncertainty (:mod:`sentlab.evaluation.uncertainty`): with one seed, each score carries its 95%
bootstrap interval over the task's items, and each margin its paired bootstrap interval; with
several seeds, scores are the mean over seeds with their standard deviation, and a margin is
*beyond the noise* only when the paired interval of every seed excludes 0 on the same side.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from sentlab.evaluation.results import EvalReport, MetricsResult
from sentlab.evaluation.uncertainty import Difference, paired_difference


def _result(report: EvalReport, task: str) -> MetricsResult | None:
    result = report.tasks.get(task)
    return result if isinstance(result, MetricsResult) else None


def margin(results: dict[str, dict[int, EvalReport]], a: str, b: str, task: str) -> dict[str, Any] | None:
    """``a`` minus ``b`` on ``task``, per seed (paired bootstrap) and over seeds; seeds are matched,
    and the start model (one evaluation) is compared with every seed."""
    per_seed: dict[int, Difference] = {}
    for seed, report in results[a].items():
        other = results[b].get(seed) if len(results[b]) > 1 else next(iter(results[b].values()))
        ra, rb = _result(report, task), other and _result(other, task)
        if ra is None or rb is None or "items" not in ra.extra or "items" not in rb.extra:
            return None
        per_seed[seed] = paired_difference(ra.extra["items"], rb.extra["items"])
    values = [d.difference for d in per_seed.values()]
    mean = float(np.mean(values))
    beyond = all(not d.inside_noise and np.sign(d.difference) == np.sign(mean) for d in per_seed.values())
    return {"difference": mean, "sd_over_seeds": float(np.std(values, ddof=1)) if len(values) > 1 else None,
            "per_seed": {str(s): d.to_dict() for s, d in per_seed.items()}, "beyond_noise": beyond}


def describe_margin(m: dict[str, Any]) -> str:
    per_seed = list(m["per_seed"].values())
    verdict = "beyond the noise" if m["beyond_noise"] else "inside the noise"
    if len(per_seed) == 1:
        d = per_seed[0]
        return f"{d['difference']:+.2f} (95% CI [{d['low']:+.2f}, {d['high']:+.2f}], {verdict})"
    intervals = ", ".join(f"[{d['low']:+.2f}, {d['high']:+.2f}]" for d in per_seed)
    return (f"{m['difference']:+.2f} mean over {len(per_seed)} seeds (sd {m['sd_over_seeds']:.2f}; "
            f"per-seed 95% CIs {intervals}; {verdict})")


def summarise(results: dict[str, dict[int, EvalReport]], tasks: list[str]) -> dict[str, dict[str, Any]]:
    """Per row and task: mean over seeds, sd, and (one seed) the bootstrap interval."""
    rows: dict[str, dict[str, Any]] = {}
    for row, per_seed in results.items():
        rows[row] = {}
        for task in tasks:
            found = [r for r in (_result(rep, task) for rep in per_seed.values()) if r is not None]
            if not found:
                continue
            values = [r.main for r in found]
            cell: dict[str, Any] = {"metric": found[0].main_metric, "mean": float(np.mean(values)),
                                    "seeds": len(values), "n": found[0].n}
            if len(values) > 1:
                cell["sd"] = float(np.std(values, ddof=1))
            elif "ci95" in found[0].extra:
                cell["ci95"] = found[0].extra["ci95"][found[0].main_metric]
            rows[row][task] = cell
    return rows


def _cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "-"
    if "sd" in cell:
        return f"{cell['mean']:.2f} ± {cell['sd']:.2f}"
    if "ci95" in cell:
        low, high = cell["ci95"]
        return f"{cell['mean']:.2f} [{low:.2f}, {high:.2f}]"
    return f"{cell['mean']:.2f}"


def recommend(rows: dict[str, dict[str, Any]], results: dict[str, dict[int, EvalReport]], primary: str,
              general: list[str], versus_start: dict[str, dict[str, Any] | None] | None = None
              ) -> tuple[str, dict[str, Any]]:
    """The one-line recommendation for ``primary`` and the margins behind it (``versus_start``: each
    arm's :func:`margin` against the start model on ``primary``, when already computed)."""
    ranked = sorted((r for r in rows if primary in rows[r]), key=lambda r: -rows[r][primary]["mean"])
    best = ranked[0]
    metric = rows[best][primary]["metric"]
    arms = [r for r in ranked if r != "start"]
    facts: dict[str, Any] = {"task": primary, "metric": metric, "ranking": ranked, "best": best}
    if not arms:
        return f"Only the start model was evaluated on {primary}.", facts
    top_arm = arms[0]
    versus_start = (versus_start or {}).get(top_arm) or margin(results, top_arm, "start", primary)
    facts["best_arm"], facts["best_arm_vs_start"] = top_arm, versus_start
    if versus_start is None:
        return f"{primary} keeps no items; no margin can be given.", facts
    score = f"{rows[top_arm][primary]['mean']:.2f} vs {rows['start'][primary]['mean']:.2f} for the start model"
    trade = ""
    for task in general:
        traded = margin(results, top_arm, "start", task)
        if traded is not None:
            facts[f"best_arm_vs_start_{task}"] = traded
            trade += f" On {task} it moves {describe_margin(traded)} against the start model."
    if versus_start["beyond_noise"] and versus_start["difference"] < 0:
        line = (f"Keep the start model for {primary}: every method lowered {metric}; even the best arm, {top_arm}, "
                f"scores {score}, {describe_margin(versus_start)}.")
        return line + trade, facts
    if not versus_start["beyond_noise"]:
        line = (f"Keep the start model for {primary}: no method improved {metric} beyond the noise; the best arm, "
                f"{top_arm}, scores {score}, {describe_margin(versus_start)}.")
        return line + trade, facts
    line = f"Use {top_arm} for {primary}: {metric} {score}, {describe_margin(versus_start)}"
    if len(arms) > 1:
        runner_up = arms[1]
        versus_next = margin(results, top_arm, runner_up, primary)
        facts["runner_up"], facts["best_arm_vs_runner_up"] = runner_up, versus_next
        if versus_next is not None:
            line += f"; against the runner-up, {runner_up}, {describe_margin(versus_next)}"
            if not versus_next["beyond_noise"]:
                line += f" - {top_arm} and {runner_up} are equally good choices within the noise"
    return line + "." + trade, facts


def other_tasks(rows: dict[str, dict[str, Any]], results: dict[str, dict[int, EvalReport]], tasks: list[str],
                best_arm: str | None) -> list[str]:
    """For each card after the first: which row is best there, and the primary task's best arm
    against the start model there."""
    lines = []
    for task in tasks:
        ranked = sorted((r for r in rows if task in rows[r]), key=lambda r: -rows[r][task]["mean"])
        if not ranked:
            continue
        line = f"- {task}: best {ranked[0]} ({rows[ranked[0]][task]['mean']:.2f} {rows[ranked[0]][task]['metric']})"
        if best_arm and best_arm in rows and task in rows[best_arm]:
            m = margin(results, best_arm, "start", task)
            if m is not None:
                line += f"; {best_arm} against the start model: {describe_margin(m)}"
        lines.append(line + f"; order: {', '.join(ranked)}")
    return lines


def plot(rows: dict[str, dict[str, Any]], tasks: list[str], path) -> None:
    from sentlab.reporting.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(tasks) * max(1, len(rows)) ** 0.5), 4))
    width = 0.8 / len(rows)
    x = np.arange(len(tasks))
    for k, (row, cells) in enumerate(rows.items()):
        heights = [cells[t]["mean"] if t in cells else np.nan for t in tasks]
        errors = np.zeros((2, len(tasks)))
        for i, t in enumerate(tasks):
            cell = cells.get(t, {})
            if "ci95" in cell:
                errors[:, i] = [cell["mean"] - cell["ci95"][0], cell["ci95"][1] - cell["mean"]]
            elif "sd" in cell:
                errors[:, i] = cell["sd"]
        bars = ax.bar(x + (k - (len(rows) - 1) / 2) * width, heights, width, yerr=errors, capsize=2, label=row)
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks(x, [f"{t}\n({next(iter(c[t]['metric'] for c in rows.values() if t in c))})" for t in tasks])
    ax.set_title("sentlab adapt: start model and arms (error bars: 95% CI or sd over seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(plan, results: dict[str, dict[int, EvalReport]], training: dict[str, dict[int, dict]]) -> dict:
    from sentlab.adapt import GENERAL_TASKS, Budget, write_json
    from sentlab.evaluation.task_cards import load_task_card

    cards = [load_task_card(path).name for path in plan.cards]
    general = GENERAL_TASKS[plan.settings.general]
    tasks = cards + general
    rows = summarise(results, tasks)
    deltas = {row: margin(results, row, "start", cards[0]) for row in results if row != "start"}
    line, facts = recommend(rows, results, cards[0], general, deltas)
    for row, per_seed in training.items():
        rows[row]["train_seconds"] = float(np.mean([info["train_seconds"] for info in per_seed.values()]))
        rows[row]["steps"] = float(np.mean([info["steps"] for info in per_seed.values()]))
        kept = sorted({info.get("kept_step") for info in per_seed.values()} - {None})
        if kept and kept != [rows[row]["steps"]]:
            rows[row]["kept_steps"] = kept
    headers = ["model", "steps", "train s", *(f"{t} ({rows['start'][t]['metric']})" if t in rows["start"] else t
                                             for t in tasks), f"Δ {cards[0]} vs start"]
    table = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
    for row, cells in rows.items():
        delta = deltas.get(row)
        steps = f"{cells.get('steps', 0):.0f}" + (f" (kept {', '.join(map(str, cells['kept_steps']))})"
                                                  if "kept_steps" in cells else "")
        table.append("| " + " | ".join([row, steps, f"{cells.get('train_seconds', 0):.0f}",
                                        *(_cell(cells.get(t)) for t in tasks),
                                        describe_margin(delta) if delta else "-"]) + " |")
    s = plan.settings
    seeds = ", ".join(map(str, plan.seeds))
    intro = (f"Start model {s.model} (pooling {s.pooler or 'as saved'}), adapted on {s.text} with "
             f"{Budget(**s.budget).describe()} per arm, batch {s.batch_size}, seeds {seeds}; "
             f"dev task: {s.dev_card or 'none (final model kept)'}.")
    noise = ("Cells: score [95% bootstrap CI over the task's items]" + ("" if len(plan.seeds) == 1 else
             " for the start model (one evaluation), mean ± sd over seeds for the arms")
             + "; Δ: paired bootstrap difference against the start model on the same items.")
    sections = ["# sentlab adapt", intro, "\n".join(table), noise, f"**Recommendation.** {line}"]
    others = other_tasks(rows, results, cards[1:], facts.get("best_arm"))
    if others:
        sections.append("## Does the choice hold on the other tasks?\n\n" + "\n".join(others))
        facts["other_tasks"] = others
    markdown = "\n\n".join(sections) + "\n"
    (plan.output / "report.md").write_text(markdown, encoding="utf-8")
    plot({r: {t: c for t, c in cells.items() if t in tasks} for r, cells in rows.items()}, tasks,
         plan.output / "adapt.png")
    summary = {"settings": asdict(s), "cards": cards, "general": general, "seeds": plan.seeds, "rows": rows,
               "recommendation": line, "facts": facts}
    write_json(plan.output / "report.json", summary)
    return summary
