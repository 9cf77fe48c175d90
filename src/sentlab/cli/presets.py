"""``sentlab presets``: the training presets shipped with sentlab, and one of them as YAML to edit."""

from __future__ import annotations

import argparse


def cmd_presets_list(args: argparse.Namespace) -> int:
    from sentlab.presets import list_presets

    presets = [p for p in list_presets() if args.all or "/" not in p.name]
    if args.hardware:
        presets = [p for p in presets if p.hardware == args.hardware]
    rows = [("name", "method", "start model", "hardware", "run on a GPU", "data", "paper")]
    rows += [
        (p.name, p.method, p.model, p.hardware, "yes" if p.run_on_gpu else "no", ", ".join(p.data), p.paper)
        for p in presets
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths)) + "  " + row[-1])
    if not args.all:
        print("(papers-in-miniature presets: --all; one preset: sentlab presets show NAME)")
    return 0


def cmd_presets_show(args: argparse.Namespace) -> int:
    from sentlab.errors import ConfigError
    from sentlab.presets import packaged_file

    if args.all or args.hardware:
        raise ConfigError(
            "--all and --hardware choose what the listing shows; `sentlab presets show NAME` takes neither"
        )
    path = packaged_file(args.name)
    if path is None:
        raise ConfigError(f"{args.name}: no preset of that name (`sentlab presets` lists them)")
    print(path.read_text("utf-8"), end="")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("presets", help="the training presets shipped with sentlab (sentlab train NAME trains one)")
    p.add_argument("--all", action="store_true", help="also the papers-in-miniature presets (miniature/...)")
    p.add_argument("--hardware", choices=("cpu", "gpu"), default=None, help="only the presets for this hardware")
    p.set_defaults(func=cmd_presets_list)
    presets_sub = p.add_subparsers(dest="presets_command")
    s = presets_sub.add_parser("show", help="print a preset's YAML (sentlab presets show NAME > my.yaml to edit it)")
    s.add_argument("name", metavar="NAME")
    s.set_defaults(func=cmd_presets_show)
