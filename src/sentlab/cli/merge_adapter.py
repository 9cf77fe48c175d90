"""``sentlab merge-adapter``: fold a saved model's LoRA adapter into full weights
(:func:`sentlab.encoders.adapters.merge_folder`)."""

from __future__ import annotations

import argparse


def cmd_merge_adapter(args: argparse.Namespace) -> int:
    from sentlab.encoders.adapters import merge_folder

    merge_folder(args.model, args.output)
    print(f"{args.model}: adapter merged; full weights written to {args.output}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge-adapter",
        help="fold a model's LoRA adapter (model.adapter) into its weights: a folder that loads without peft",
    )
    p.add_argument("--model", required=True, help="a saved model folder with an adapter (RUN/model)")
    p.add_argument("--output", required=True, help="the folder to write the merged model to")
    p.set_defaults(func=cmd_merge_adapter)
