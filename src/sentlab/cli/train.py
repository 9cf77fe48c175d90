"""``sentlab train``: train an encoder from a preset or a YAML config."""

from __future__ import annotations

import argparse
import shlex

from sentlab.cli.common import (
    allow_changed_arg,
    data_dir_arg,
    quiet_arg,
    set_arg,
    train_overrides,
)


def cmd_train(args: argparse.Namespace) -> int:
    from sentlab.methods import load_config
    from sentlab.training.engine import train

    if args.private and not args.push_to_hub:
        from sentlab.errors import ConfigError

        raise ConfigError("--private applies to --push-to-hub REPO_ID; give both or neither")
    cfg = load_config(args.config, train_overrides(args))
    merge = False
    if args.push_to_hub:
        from sentlab.cli.push import check_destination

        check_destination(args.push_to_hub)  # before the training, not after it
        merge = push_merges(cfg)
    paths = train(cfg, resume=args.resume, evaluate=not args.no_eval, allow_changed=args.allow_changed_settings)
    print_outcome(paths)
    if args.push_to_hub:
        from sentlab.cli.push import push_folder
        from sentlab.errors import SentlabError

        folder = paths.model
        if merge:
            folder = merged_copy(paths.model, paths.root / "merged")
        try:
            url = push_folder(folder, args.push_to_hub, args.private)
        except Exception as err:  # any failure of the upload (HTTP, network, rights): the model stays where it is
            reason = str(err).splitlines()[0] if str(err) else type(err).__name__
            retry = shlex.join(["sentlab", "push", str(folder), args.push_to_hub])
            retry += " --private" if args.private else ""  # a retry that creates the repository keeps it private
            raise SentlabError(f"the upload failed ({reason}); the model is kept: {retry}") from None
        print(f"pushed {folder} to {args.push_to_hub}: {url}")
    return 0


def push_merges(cfg) -> bool:
    """Whether ``--push-to-hub`` must push merged weights, said before training: an adapter over a start
    the hub resolves (a hub name, an alias) is pushed as an adapter naming it; over a local folder, which
    nobody loading from the hub has, the adapter is merged into full weights after training."""
    from sentlab.progress import say
    from sentlab.training.model_card import start_hub_base

    if cfg.model.adapter is None:
        return False
    base = start_hub_base(cfg.model.name)
    if base is not None:
        say(f"--push-to-hub: the LoRA adapter is pushed, naming its base model {base} (loading it needs peft)")
        return False
    say(
        f"--push-to-hub: the start model {cfg.model.label} is a local folder the hub cannot resolve, so the "
        "adapter is merged into full weights after training and the merged model is pushed (RUN/merged)"
    )
    return True


def merged_copy(model, folder):
    """``model``'s adapter merged into full weights in ``folder``, made again each time (a merge is
    seconds; an earlier one may be of other weights: a resumed run, a folder merged by hand)."""
    import shutil

    from sentlab.encoders.adapters import merge_folder

    shutil.rmtree(folder, ignore_errors=True)
    merge_folder(model, folder)
    return folder


def print_outcome(paths) -> None:
    """The dev-task selection (start model against the best checkpoint) and the final results, the
    start model's row first when it was scored, so the terminal says whether training helped."""
    import json

    from sentlab.evaluation.results import EvalReport

    if paths.selection.is_file():
        chosen = json.loads(paths.selection.read_text("utf-8"))
        best = chosen.get("best_checkpoint")
        print(
            f"dev task ({chosen['metric']}): start model {chosen['start']:.4f}, best checkpoint "
            + (f"{best:.4f}" if best is not None else "none")
            + f"; kept step {chosen['kept_step']}"
        )
    start = [EvalReport.read(paths.start_results)] if paths.start_results.is_file() else []
    for results in (paths.results, paths.rank_results):  # cosine; Eq. 7 for RankEncoder runs
        if results.is_file():
            trained = EvalReport.read(results)
            print(trained.table(*start) if not start else start[0].table(trained))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train an encoder from a preset or a YAML config")
    p.add_argument(
        "config",
        metavar="CONFIG",
        help="a preset name (sentlab presets), e.g. simcse-unsup-minilm-cpu, "
        "or a YAML config file (sentlab presets show NAME > my.yaml)",
    )
    set_arg(p)
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of the run")
    p.add_argument("--no-eval", action="store_true", help="skip the final STS evaluation")
    p.add_argument(
        "--push-to-hub",
        metavar="REPO_ID",
        default=None,
        help="upload the saved model to this hub repository once trained, as sentlab push does",
    )
    p.add_argument("--private", action="store_true", help="with --push-to-hub: create the repository private")
    allow_changed_arg(p)
    data_dir_arg(p)
    quiet_arg(p)
    p.set_defaults(func=cmd_train)
