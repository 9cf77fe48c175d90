"""Influence of the corpus size (TSDAE paper Sec. 7.1, Fig. 3): the same method trained on the first
N sentences for each N (the paper: 128 ... 65,536, 10 epochs up to 100k steps), each final model
scored on one dev task (:mod:`sentlab.evaluation.dev_tasks`); the paper keeps the best epoch, sentlab
scores the model at the end of training. Writes ``corpus_size.json`` and ``corpus_size.png``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from sentlab.evaluation.dev_tasks import score_dev_task
from sentlab.progress import say

PAPER_SIZES = tuple(2**k for k in range(7, 17))  # 128 ... 65,536


def corpus_size_curve(
    config: str | Path,
    sizes: list[int] | None,
    task: str,
    output: str | Path,
    epochs: float = 10,
    max_steps: int = 100_000,
    overrides: list[str] | None = None,
    data_dir: str | None = None,
) -> dict:
    from sentlab.encoders import load_encoder
    from sentlab.methods import load_config
    from sentlab.training.engine import train

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    base = load_config(config, overrides)
    points = []
    for size in sizes or PAPER_SIZES:
        steps = min(max_steps, math.ceil(epochs * size / base.train.batch_size))
        run = output / f"n{size}"
        cfg = load_config(
            config,
            [
                *(overrides or []),
                f"data.limit={size}",
                f"train.max_steps={steps}",
                f"train.output_dir={run}",
                "eval.dev_task=none",
            ],
        )
        say(f"[corpus size] {size} sentences, {steps} steps")
        if not (run / "model" / "modules.json").is_file():  # a size trained by an earlier call is reused
            train(cfg, evaluate=False)
        model = load_encoder(run / "model")
        points.append({"sentences": size, "steps": steps, "score": score_dev_task(model.eval(), task, data_dir)})
    result = {"config": str(config), "method": base.method, "task": task, "points": points}
    (output / "corpus_size.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    plot_curve(result, output / "corpus_size.png")
    return result


def plot_curve(result: dict, path: Path) -> None:
    from sentlab.reporting.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(
        [p["sentences"] for p in result["points"]], [p["score"] for p in result["points"]], "o-", label=result["method"]
    )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("training sentences")
    ax.set_ylabel(result["task"])
    ax.set_title("Influence of the corpus size (TSDAE Fig. 3)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
