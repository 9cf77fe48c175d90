"""``sentlab data``: the data sets sentlab reads, which are present, and downloads of the public ones."""

from __future__ import annotations

import argparse

from sentlab.cli.common import data_dir_arg
from sentlab.errors import SentlabError


def cmd_data_list(args: argparse.Namespace) -> int:
    from sentlab.data.sources import SOURCES
    from sentlab.paths import data_dir

    root = data_dir(args.data_dir)
    print(f"data folder: {root} (--data-dir, else $SENTLAB_DATA, else ../shared/data)")
    width = max(len(name) for name in SOURCES)
    for name, source in SOURCES.items():
        state = "present" if source.present(root) else "absent "
        print(f"{name:<{width}}  {state}  {source.description}; {source.how_to_get()}")
    return 0


def cmd_data_download(args: argparse.Namespace) -> int:
    from sentlab.data.sources import SOURCES, download
    from sentlab.methods import load_config
    from sentlab.paths import data_dir

    if args.target and args.data_dir:
        raise SentlabError("give --target or --data-dir, not both (--target writes there instead of the data folder)")
    root = data_dir(args.target or args.data_dir)
    names = list(args.names)
    for preset in args.preset:
        needed = load_config(preset).data_sets()  # a bad config is a one-line error
        names += [
            name for name in needed if name in SOURCES and SOURCES[name].fetchable and not SOURCES[name].present(root)
        ]
        manual = [
            name
            for name in needed
            if name in SOURCES and not SOURCES[name].fetchable and not SOURCES[name].present(root)
        ]
        for name in manual:
            print(f"{preset} also needs {name!r}, which sentlab cannot download: {SOURCES[name].how_to_get()}")
    if not names and not args.preset:
        raise SentlabError("name the data sets to download (see `sentlab data list`) or give --preset NAME")
    for name in dict.fromkeys(names):
        source = download(name, root)
        print(f"{name}: written to {', '.join(str(root / path) for path in source.paths)}")
    if not names:
        print(f"nothing to download: what the preset needs is in {root} or must be fetched by hand")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="the data sets sentlab reads: list them, download the public ones")
    data_sub = p.add_subparsers(dest="data_command", required=True)
    d = data_sub.add_parser("list", help="every data set, whether it is in the data folder, and how to get it")
    data_dir_arg(d)
    d.set_defaults(func=cmd_data_list)
    d = data_sub.add_parser(
        "download",
        help="fetch data sets from their public source into the data folder "
        "(needs internet): sts, wiki1m, wikipedia, nli-for-simcse",
    )
    d.add_argument("names", nargs="*", metavar="NAME", help="data sets (see `sentlab data list`)")
    d.add_argument(
        "--preset",
        action="append",
        default=[],
        metavar="PRESET",
        help="also every downloadable data set this preset reads and the data folder lacks (repeatable)",
    )
    d.add_argument("--target", default=None, help="write here instead of the data folder")
    data_dir_arg(d)
    d.set_defaults(func=cmd_data_download)
