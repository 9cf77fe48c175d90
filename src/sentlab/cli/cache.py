"""``sentlab cache``: the embedding cache and exported models."""

from __future__ import annotations

import argparse


def cmd_cache_info(args: argparse.Namespace) -> int:
    from sentlab.cache import cache_info

    info = cache_info()
    print(
        f"cache folder: {info['root']} (embeddings capped at {info['max_bytes'] / 1e9:g} GB; "
        "$SENTLAB_CACHE, $SENTLAB_CACHE_MAX_GB)"
    )
    print(f"embeddings: {info['embeddings']['entries']} entries, {info['embeddings']['bytes'] / 1e6:,.1f} MB")
    print(
        f"exports: {info['exports']['entries']} models, {info['exports']['bytes'] / 1e6:,.1f} MB"
        + "".join(f"\n  {setting}" for setting in info["exports"]["settings"])
    )
    return 0


def cmd_cache_clear(args: argparse.Namespace) -> int:
    from sentlab.cache import cache_clear, cache_root

    parts = [p for p, chosen in (("embeddings", args.embeddings), ("exports", args.exports)) if chosen] or [
        "embeddings",
        "exports",
    ]
    freed = cache_clear(what=parts)
    print(f"cleared {' and '.join(parts)} in {cache_root()} ({freed / 1e6:,.1f} MB)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cache", help="the embedding cache and exported models ($SENTLAB_CACHE, default ~/.cache/sentlab)"
    )
    cache_sub = p.add_subparsers(dest="cache_command", required=True)
    c = cache_sub.add_parser("info", help="where the cache is, its size and cap, the exported models")
    c.set_defaults(func=cmd_cache_info)
    c = cache_sub.add_parser("clear", help="delete cached embeddings and exports (both unless one is named)")
    c.add_argument("--embeddings", action="store_true", help="only the embedding entries")
    c.add_argument("--exports", action="store_true", help="only the exported models")
    c.set_defaults(func=cmd_cache_clear)
