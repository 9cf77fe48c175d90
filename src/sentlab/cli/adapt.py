"""``sentlab adapt``: adapt a model to your unlabelled text with every applicable method and recommend one."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentlab.cli.common import comma_list, data_dir_arg, positive_int, quiet_arg, seeds_arg, trust_remote_code_arg
from sentlab.errors import DataError


def cmd_adapt(args: argparse.Namespace) -> int:
    from sentlab.adapt import (
        AdaptPlan,
        AdaptSettings,
        Budget,
        run_adapt,
        start_model_max_length,
    )
    from sentlab.cache import file_sha256
    from sentlab.encoders.loading import folder_identity
    from sentlab.evaluation.task_cards import load_task_card

    budget = Budget(steps=args.steps, sentences=args.sentences, minutes=args.minutes)
    text = Path(args.text)
    if not text.is_file():
        raise DataError(f"{text}: file not found")
    for card in [*args.task_card, *([args.dev_card] if args.dev_card else [])]:
        if not Path(card).is_file():
            raise DataError(f"{card}: task card not found")
    pooler = None if args.pooler == "none" else args.pooler
    max_seq_length = args.max_seq_length or start_model_max_length(args.model, args.trust_remote_code)
    settings = AdaptSettings(
        text=str(text),
        text_sha256=file_sha256(text),
        model=args.model,
        pooler=pooler,
        max_seq_length=max_seq_length,
        batch_size=args.batch_size,
        budget={k: v for k, v in vars(budget).items()},
        dev_card=str(Path(args.dev_card).resolve()) if args.dev_card else None,
        general=args.general,
        data_dir=args.data_dir,
        eval_steps=args.eval_steps,
        trust_remote_code=args.trust_remote_code,
        model_sha256=folder_identity(args.model),
        dev_card_identity=load_task_card(args.dev_card).identity() if args.dev_card else None,
    )
    plan = AdaptPlan(
        settings,
        [str(Path(c).resolve()) for c in args.task_card],
        args.methods,
        args.seeds,
        Path(args.output),
        progress_bar=not args.quiet,
    )
    run_adapt(plan)
    print((plan.output / "report.md").read_text("utf-8"), end="")
    print(f"written {plan.output / 'report.md'}, {plan.output / 'report.json'}, {plan.output / 'adapt.png'}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentlab.adapt import GENERAL_TASKS

    p = sub.add_parser(
        "adapt",
        help="adapt a model to your unlabelled text with every applicable method under one "
        "budget, score each on your task card(s) and STS, and recommend one",
    )
    p.add_argument("--text", required=True, help="unlabelled in-domain text, one sentence a line")
    p.add_argument(
        "--task-card",
        action="append",
        required=True,
        metavar="CARD.yaml",
        help="your task (test); the first one decides the recommendation; repeatable",
    )
    p.add_argument(
        "--dev-card",
        default=None,
        metavar="CARD.yaml",
        help="a small labelled dev task: each arm keeps its best checkpoint on it (default: final model)",
    )
    p.add_argument("--output", required=True, help="the adapt folder (rerun the command to resume)")
    p.add_argument("--model", default="minilm", help="the start model (alias, folder or hub name)")
    p.add_argument("--pooler", default="mean", help="pooling of every arm (default mean; 'none': as saved)")
    p.add_argument(
        "--methods",
        type=comma_list(),
        default="tsdae,ct,mlm,simcse,bert-flow",
        help="comma-separated arms (default: all of tsdae, ct, mlm, simcse, bert-flow); ARM@LR is that "
        "arm at another learning rate, its own row (e.g. bert-flow@1e-5)",
    )
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--steps", type=positive_int, help="budget: optimizer steps per arm")
    budget.add_argument("--sentences", type=positive_int, help="budget: training sentences per arm")
    budget.add_argument("--minutes", type=float, help="budget: wall-clock minutes of training per arm")
    p.add_argument("--batch-size", type=positive_int, default=8, help="every arm's batch size (default 8, TSDAE's)")
    p.add_argument(
        "--max-seq-length",
        type=positive_int,
        default=None,
        help="truncate training and evaluation inputs to N tokens (default: the start model's own maximum)",
    )
    seeds_arg(
        p,
        [42, 43, 44],
        "comma-separated training seeds of every arm (default 42,43,44; with one, training randomness is not "
        "measured and no margin is called beyond the noise)",
    )
    p.add_argument(
        "--general",
        choices=tuple(GENERAL_TASKS),
        default="sts-b",
        help="the general task that shows what adapting traded: STS-B test (default), the seven STS "
        "tasks' average, or none",
    )
    p.add_argument(
        "--eval-steps",
        type=positive_int,
        default=100,
        help="checkpoint (and dev-card evaluation) every N steps (default 100)",
    )
    trust_remote_code_arg(p)
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_adapt)
