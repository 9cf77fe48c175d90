"""The report of ``sentlab adapt``: a table of every arm and the start model on the user's tasks and the
general task, a bar chart, and a one-line recommendation made on one set of items and confirmed on
another, with an interval that covers both the test items and the training seeds.

Choosing and confirming: with a dev card the rows (the start model among them) are ranked on the dev
card and the chosen row is compared with the start model on the first task card; without one, the
first card's items are split in two with a fixed seed (:func:`sentlab.evaluation.uncertainty.split_indices`),
the rows are ranked on one half and the margin is measured on the other. The report names both.

Uncertainty (:func:`sentlab.evaluation.uncertainty.seed_item_difference`): every margin is the mean
over seeds with a multi-bootstrap interval that resamples seeds and items together, and it also gives
the interval of each source alone. With one seed, training randomness is not measured: the report
says so, never calls a margin beyond the noise, and says which ``--seeds`` to run.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from sentlab.evaluation.results import EvalReport, MetricsResult
from sentlab.evaluation.uncertainty import (
    headline,
    item_count,
    seed_item_difference,
    split_indices,
    subset_items,
)

SPLIT_SEED = 0
MORE_SEEDS = "--seeds 42,43,44"


def _result(report: EvalReport, task: str) -> MetricsResult | None:
    result = report.tasks.get(task)
    return result if isinstance(result, MetricsResult) else None


def margin(results: dict[str, dict[int, EvalReport]], a: str, b: str, task: str) -> dict[str, Any] | None:
    """``a`` minus ``b`` on ``task``: the mean over each row's seeds (the start model is one evaluation),
    with the multi-bootstrap intervals over seeds and items; None when a row keeps no items there."""
    sides = []
    for row in (a, b):
        found = [_result(report, task) for report in results[row].values()]
        if not found or any(r is None or "items" not in r.extra for r in found):
            return None
        sides.append([r.extra["items"] for r in found])
    return seed_item_difference(*sides).to_dict()


def describe_margin(m: dict[str, Any]) -> str:
    if not m["training_measured"]:
        return (
            f"{m['difference']:+.2f} (95% CI over the items [{m['low']:+.2f}, {m['high']:+.2f}]; one seed, so "
            f"training randomness is not measured: run {MORE_SEEDS} before trusting it)"
        )
    verdict = "beyond the noise" if m["beyond_noise"] else "inside the noise"
    per_seed = ", ".join(f"{d:+.2f}" for d in m["per_seed"])
    return (
        f"{m['difference']:+.2f} mean over {m['seeds']} seeds (95% CI over seeds and items "
        f"[{m['low']:+.2f}, {m['high']:+.2f}]; items alone [{m['item_low']:+.2f}, {m['item_high']:+.2f}], "
        f"seeds alone [{m['seed_low']:+.2f}, {m['seed_high']:+.2f}]; per seed {per_seed}; {verdict})"
    )


def add_split(results: dict[str, dict[int, EvalReport]], task: str, seed: int = SPLIT_SEED) -> tuple[str, str]:
    """Add two virtual tasks to every report: ``task``'s items split in two disjoint halves (the same
    split for every row); returns (choosing task, confirming task)."""
    choose, confirm = f"{task} [choosing half]", f"{task} [confirming half]"
    for per_seed in results.values():
        for report in per_seed.values():
            result = _result(report, task)
            if result is None or "items" not in result.extra:
                continue
            items = result.extra["items"]
            for name, indices in zip((choose, confirm), split_indices(item_count(items), seed)):
                subset = subset_items(items, indices)
                report.tasks[name] = MetricsResult(
                    result.main_metric, {result.main_metric: headline(subset)}, n=len(indices), extra={"items": subset}
                )
    return choose, confirm


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
            cell: dict[str, Any] = {
                "metric": found[0].main_metric,
                "mean": float(np.mean(values)),
                "seeds": len(values),
                "n": found[0].n,
            }
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


def recommend(
    rows: dict[str, dict[str, Any]],
    results: dict[str, dict[int, EvalReport]],
    choose: str,
    confirm: str,
    general: list[str],
    primary: str = "",
    chose_on: str = "",
    confirmed_on: str = "",
) -> tuple[str, dict[str, Any]]:
    """The one-line recommendation: the best row on ``choose`` (the start model is a candidate), and
    its margin over the start model on ``confirm``, items that took no part in the choice."""
    ranked = sorted((r for r in rows if choose in rows[r]), key=lambda r: -rows[r][choose]["mean"])
    metric = rows[ranked[0]][choose]["metric"] if ranked else ""
    primary = primary or confirm
    facts: dict[str, Any] = {
        "choosing_task": choose,
        "confirming_task": confirm,
        "metric": metric,
        "ranking_on_choosing": ranked,
    }
    arms = [r for r in ranked if r != "start"]
    if not arms or "start" not in ranked:
        return (
            f"Only the start model was evaluated on {choose}." if ranked else f"No row was scored on {choose}.",
            facts,
        )
    chosen = ranked[0]
    candidate = arms[0]  # the arm the choice is about: the chosen one, or the best arm when the start won
    facts.update(chosen=chosen, best_arm=candidate)
    versus_start = margin(results, candidate, "start", confirm)
    facts["best_arm_vs_start"] = versus_start
    where = f" (chosen on {chose_on}; confirmed on {confirmed_on})" if chose_on else ""
    if versus_start is None:
        return f"{confirm} keeps no items; no margin can be given.", facts
    score = (
        f"{rows[candidate][confirm]['mean']:.2f} vs {rows['start'][confirm]['mean']:.2f} for the start model "
        f"on the confirming items"
    )
    trade = ""
    for task in general:
        traded = margin(results, candidate, "start", task)
        if traded is not None:
            facts[f"best_arm_vs_start_{task}"] = traded
            trade += f" On {task} {candidate} moves {describe_margin(traded)} against the start model."
    confirmed = versus_start["beyond_noise"] and versus_start["difference"] > 0
    if chosen == "start":
        line = (
            f"Keep the start model for {primary}{where}: it scored best on the choosing items; the best arm there, "
            f"{candidate}, scores {score}, {describe_margin(versus_start)}."
        )
    elif confirmed:
        line = f"Use {candidate} for {primary}{where}: {metric} {score}, {describe_margin(versus_start)}."
    elif not versus_start["training_measured"]:
        line = (
            f"Not decided for {primary}{where}: {candidate} scored best on the choosing items; on the confirming items {metric} "
            f"{score}, {describe_margin(versus_start)}."
        )
    elif versus_start["beyond_noise"]:
        line = (
            f"Keep the start model for {primary}{where}: {candidate}, best on the choosing items, is below it on "
            f"the confirming items: {score}, {describe_margin(versus_start)}."
        )
    else:
        line = (
            f"Keep the start model for {primary}{where}: {candidate}, best on the choosing items, does not beat it "
            f"beyond the noise on the confirming items: {score}, {describe_margin(versus_start)}."
        )
    facts["decision"] = (
        "use"
        if confirmed and chosen != "start"
        else "not decided"
        if (chosen != "start" and not versus_start["training_measured"])
        else "keep the start model"
    )
    return line + trade, facts


def other_tasks(
    rows: dict[str, dict[str, Any]], results: dict[str, dict[int, EvalReport]], tasks: list[str], best_arm: str | None
) -> list[str]:
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


def diverged_line(diverged: dict[str, dict[str, Any]], arms: list[str]) -> str:
    """Which arms diverged (one training record each: the first diverged seed) and, unless ``arms``
    already holds a retry of the same method, how to retry them."""
    from sentlab.adapt_plan import arm_spec

    told, retry = [], []
    for arm, info in diverged.items():
        method = arm.partition("@")[0]
        retried = [a for a in arms if a != arm and a.partition("@")[0] == method and a not in diverged]
        told.append(
            f"{arm} diverged at step {info['diverged']['step']} with seed {info['seed']} (its loss became "
            f"NaN or infinite{'; retried as ' + ', '.join(retried) if retried else ''})"
        )
        if not retried:
            retry.append(f"{method}@{arm_spec(arm).learning_rate / 10:.0e}")
    line = f"Not ranked: {'; '.join(told)}."
    if retry:
        line += f" To retry at a tenth of the learning rate, add {','.join(retry)} to --methods and rerun."
    return line


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
    from sentlab.adapt_plan import GENERAL_TASKS, Budget
    from sentlab.evaluation.task_cards import load_task_card
    from sentlab.paths import write_text_atomic
    from sentlab.training.run_folder import write_json

    cards = [load_task_card(path).name for path in plan.cards]
    general = GENERAL_TASKS[plan.settings.general]
    primary = cards[0]
    start = next(iter(results["start"].values()))
    if plan.settings.dev_card:
        choose, confirm = load_task_card(plan.settings.dev_card).name, primary
        columns = [choose, *cards, *general]
        chose_on = f"the dev card {choose}, {start.tasks[choose].n} items"
        confirmed_on = f"the task card {primary}, {start.tasks[primary].n} items"
    else:
        choose, confirm = add_split(results, primary)
        columns = [choose, confirm, *cards, *general]
        chose_on = (
            f"{start.tasks[choose].n} of {primary}'s {start.tasks[primary].n} items, a split with seed {SPLIT_SEED}"
        )
        confirmed_on = f"the other {start.tasks[confirm].n}"
    rows = summarise(results, columns)
    deltas = {row: margin(results, row, "start", confirm) for row in results if row != "start"}
    line, facts = recommend(rows, results, choose, confirm, general, primary, chose_on, confirmed_on)
    diverged = {
        arm: next(info for info in per_seed.values() if "diverged" in info)
        for arm, per_seed in training.items()
        if any("diverged" in info for info in per_seed.values())
    }
    if diverged:
        line += " " + diverged_line(diverged, list(training))
        facts["diverged"] = {arm: {"seed": info["seed"], **info["diverged"]} for arm, info in diverged.items()}
    for row, per_seed in training.items():
        rows.setdefault(row, {})
        if row in diverged:
            rows[row]["diverged"] = facts["diverged"][row]
        rows[row]["train_seconds"] = float(np.mean([info["train_seconds"] for info in per_seed.values()]))
        rows[row]["steps"] = float(np.mean([info["steps"] for info in per_seed.values()]))
        kept = sorted({info.get("kept_step") for info in per_seed.values()} - {None})
        if kept and kept != [rows[row]["steps"]]:
            rows[row]["kept_steps"] = kept
    headers = [
        "model",
        "steps",
        "train s",
        *(f"{t} ({rows['start'][t]['metric']})" if t in rows["start"] else t for t in columns),
        f"Δ {confirm} vs start",
    ]
    table = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
    for row, cells in rows.items():
        delta = deltas.get(row)
        steps = f"{cells.get('steps', 0):.0f}" + (
            f" (kept {', '.join(map(str, cells['kept_steps']))})" if "kept_steps" in cells else ""
        )
        if "diverged" in cells:
            delta_cell = f"diverged at step {cells['diverged']['step']} (seed {cells['diverged']['seed']}): not ranked"
        else:
            delta_cell = describe_margin(delta) if delta else "-"
        table.append(
            "| "
            + " | ".join(
                [
                    row,
                    steps,
                    f"{cells.get('train_seconds', 0):.0f}",
                    *(_cell(cells.get(t)) for t in columns),
                    delta_cell,
                ]
            )
            + " |"
        )
    s = plan.settings
    seeds = ", ".join(map(str, plan.seeds))
    runs = [info for per_seed in training.values() for info in per_seed.values()]
    eval_seconds = sum(
        v
        for per_seed in results.values()
        for report in per_seed.values()
        for k, v in report.settings.items()
        if k.startswith("eval_seconds_")
    )
    intro = (
        f"Start model {s.model} (pooling {s.pooler or 'as saved'}), adapted on {s.text} with "
        f"{Budget(**s.budget).describe()} per arm and seed, batch {s.batch_size}, seeds {seeds}; "
        f"dev card: {s.dev_card or 'none (final models kept)'}. Cost: {len(plan.arms)} arms x "
        f"{len(plan.seeds)} seeds = {len(runs)} training runs"
        f"{' (no more seeds of an arm after it diverged)' if diverged else ''}, "
        f"{sum(i['steps'] for i in runs):,} steps, "
        f"{sum(i['train_seconds'] for i in runs):,.0f} s of training and {eval_seconds:,.0f} s of evaluation."
    )
    choice = (
        f"Chosen on {chose_on}; confirmed on {confirmed_on}: the margins below and in the recommendation "
        f"come from items that took no part in the choice."
    )
    noise = (
        "Cells: the start model's score [95% bootstrap CI over the items] (one evaluation); the arms' mean "
        "± sd over seeds (or, with one seed, the item interval). Δ: the arm minus the start model on the "
        "confirming items, mean over seeds, with the multi-bootstrap interval over seeds and items together "
        "and each source's interval alone."
        + ("" if len(plan.seeds) > 1 else f" One seed: training randomness is not measured ({MORE_SEEDS}).")
    )
    sections = ["# sentlab adapt", intro, choice, "\n".join(table), noise, f"**Recommendation.** {line}"]
    others = other_tasks(
        rows, results, cards[1:], facts.get("chosen") if facts.get("chosen") != "start" else facts.get("best_arm")
    )
    if others:
        sections.append("## Does the choice hold on the other tasks?\n\n" + "\n".join(others))
        facts["other_tasks"] = others
    markdown = "\n\n".join(sections) + "\n"
    write_text_atomic(plan.output / "report.md", markdown)
    plot(
        {r: {t: c for t, c in cells.items() if t in columns} for r, cells in rows.items() if r not in diverged},
        columns,
        plan.output / "adapt.png",
    )
    summary = {
        "settings": asdict(s),
        "cards": cards,
        "general": general,
        "seeds": plan.seeds,
        "rows": rows,
        "choosing_task": choose,
        "confirming_task": confirm,
        "margins_vs_start": deltas,
        "recommendation": line,
        "facts": facts,
    }
    write_json(plan.output / "report.json", summary)
    return summary
