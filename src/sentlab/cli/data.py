"""``sentlab data``: data utilities."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_data_download(args: argparse.Namespace) -> int:
    import shutil

    from sentlab.data.hub import download_sts

    target = Path(args.target)
    existed = target.exists()
    try:
        written = download_sts(args.target)
    except BaseException:
        if not existed:  # nothing half-downloaded is left behind
            shutil.rmtree(target, ignore_errors=True)
        raise
    for name, count in written.items():
        print(f"{name}: {count} pairs")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="data utilities")
    data_sub = p.add_subparsers(dest="data_command", required=True)
    d = data_sub.add_parser("download", help="fetch the STS sets from the datasets hub (needs internet)")
    d.add_argument("--target", required=True, help="folder to write the SentEval layout into")
    d.set_defaults(func=cmd_data_download)
