"""``sentlab cache``: every part of sentlab's cache (embeddings, exported models, text tables, RSE's triples,
fetched reference models)."""

from __future__ import annotations

import argparse

PART_HELP = {
    "embeddings": "cached embeddings of text lists",
    "exports": "models exported for onnx / OpenVINO",
    "text": "training texts and table files as memory-mapped tables (with their row numbers and packed blocks)",
    "rse": "RSE's relational triples as memory-mapped tables",
    "models": "reference models fetched from the package index by their hub ids (benchmarks/reference_models.py)",
}


def cmd_cache_info(args: argparse.Namespace) -> int:
    from sentlab.cache import PARTS, cache_info

    info = cache_info()
    total = sum(info[part]["bytes"] for part in PARTS)
    print(
        f"cache folder: {info['root']} ({total / 1e6:,.1f} MB of a {info['max_bytes'] / 1e9:g} GB cap; "
        "$SENTLAB_CACHE, $SENTLAB_CACHE_MAX_GB)"
    )
    for part in PARTS:
        more = "".join(
            f", {info[part][state]['entries']} {label} ({info[part][state]['bytes'] / 1e6:,.1f} MB)"
            for state, label in (("building", "being built"), ("leftovers", "left by killed builds"))
            if info[part][state]["entries"]
        )
        print(f"{part}: {info[part]['entries']} entries{more}, {info[part]['bytes'] / 1e6:,.1f} MB")
        if part == "exports":
            print("".join(f"  {setting}\n" for setting in info["exports"]["settings"]), end="")
    return 0


def cmd_cache_clear(args: argparse.Namespace) -> int:
    from sentlab.cache import PARTS, cache_clear, cache_root

    parts = [part for part in PARTS if getattr(args, part)] or list(PARTS)
    freed, skipped = cache_clear(what=parts)
    print(f"cleared {', '.join(parts)} in {cache_root()} ({freed / 1e6:,.1f} MB)")
    if skipped:
        print(f"left {len(skipped)} entries being built or read by another process: {', '.join(skipped)}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache",
        help="sentlab's cache: embeddings, exported models, text tables, RSE's triples, fetched reference models "
        "($SENTLAB_CACHE, default ~/.cache/sentlab)",
    )
    cache_sub = p.add_subparsers(dest="cache_command", required=True)
    c = cache_sub.add_parser("info", help="where the cache is, its cap, each part's entries and size")
    c.set_defaults(func=cmd_cache_info)
    c = cache_sub.add_parser("clear", help="delete parts of the cache (every part unless some are named)")
    for part, text in PART_HELP.items():
        c.add_argument(f"--{part}", action="store_true", help=f"only the {text}")
    c.set_defaults(func=cmd_cache_clear)
