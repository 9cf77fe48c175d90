"""The benchmarks' one runner, from the repository root:

    python -m benchmarks list [--kind perf|study]     # every benchmark: name, kind, record date, machine
    python -m benchmarks show NAME                    # its command at its declared settings
    python -m benchmarks run NAME [NAME ...]          # run each, write benchmarks/records/NAME.json
    python -m benchmarks run --kind perf              # every performance benchmark on this machine
    python -m benchmarks import gpu-speed-h100 --from OUT/speed.json   # a GPU check part, as a record
    python -m benchmarks feeds                        # rewrite each module's Feeds line

``benchmarks/registry.py`` declares the benchmarks; ``benchmarks/record.py`` reads and writes records.
A run that fails leaves its record as it was and the runner exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import record, registry


def _listing(kind: str | None) -> list[str]:
    rows = []
    for b in registry.BENCHMARKS.values() if kind != "gpu" else []:
        if kind and b.kind != kind:
            continue
        path = record.RECORDS / f"{b.name}.json"
        if path.is_file():
            r = record.read(b.name)
            where = ", ".join(r["machine"].get("gpus") or []) or r["machine"].get("cpu", {}).get("model", "?")
            kept = f"{r['date'][:10]}\t{where}"
        else:
            kept = "no record\t"
        rows.append(f"{b.name}\t{b.kind}\t{kept}\t{b.command}")
    for r in record.all_records() if kind in (None, "gpu") else []:
        if r["name"] not in registry.BENCHMARKS:  # the GPU check's parts, kept with `import`
            where = ", ".join(r["machine"].get("gpus") or []) or "?"
            rows.append(f"{r['name']}\tgpu\t{r['date'][:10]}\t{where}\t{r['command']}")
    return rows


def _run(names: list[str], dry_run: bool) -> int:
    """Each benchmark in turn; one that fails is named at the end and the others still run."""
    failed = []
    for name in names:
        b = registry.get(name)
        if dry_run:
            print(b.command)
            continue
        print(f"benchmarks: {name} ({b.kind}): {b.command}", file=sys.stderr)
        result = Path(b.result) if b.result else None
        if result is not None:
            result.parent.mkdir(parents=True, exist_ok=True)
        if record.run(name, b.argv, result, record.RECORDS, declared=b.command):
            failed.append(name)
    if failed:
        print(f"benchmarks: failed, records left as they were: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    listed = sub.add_parser("list", help="every benchmark and its record")
    listed.add_argument("--kind", choices=[*registry.KINDS, "gpu"], help="gpu: the GPU check's parts kept")
    shown = sub.add_parser("show", help="a benchmark's command at its declared settings")
    shown.add_argument("name")
    ran = sub.add_parser("run", help="run benchmarks and write their records")
    ran.add_argument("names", nargs="*", metavar="NAME")
    ran.add_argument("--kind", choices=registry.KINDS, help="every benchmark of this kind")
    ran.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    kept = sub.add_parser("import", help="keep a GPU check part's file as the record gpu-PART-CARD")
    kept.add_argument("name")
    kept.add_argument("--from", dest="source", type=Path, required=True)
    sub.add_parser("feeds", help="rewrite each benchmark module's Feeds line from the registry and the pages")
    args = parser.parse_args(argv)

    if args.action == "list":
        print("\n".join(_listing(args.kind)))
        return 0
    if args.action == "show":
        if registry.gpu_part(args.name) and (record.RECORDS / f"{args.name}.json").is_file():
            print(record.read(args.name)["command"])  # a GPU part: the command it ran on the node
        else:
            print(registry.get(args.name).command)
        return 0
    if args.action == "run":
        if bool(args.names) == bool(args.kind):
            parser.error("run takes benchmark names or --kind, one of the two")
        names = args.names or [b.name for b in registry.BENCHMARKS.values() if b.kind == args.kind]
        return _run(names, args.dry_run)
    if args.action == "import":
        part = registry.gpu_part(args.name)
        if part is None:
            parser.error(f"name a GPU part's record gpu-PART-CARD, PART one of {', '.join(registry.GPU_PARTS)}")
        return record.imported(args.name, args.source, part=part)
    from benchmarks import common

    print("\n".join(common.write_feeds()) or "every Feeds line is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
