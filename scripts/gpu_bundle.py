"""Build what a GPU node without network needs to check sentlab (``benchmarks/gpu/check.sh``), on a
machine with network: run it from a checkout, then copy the checkout with the bundle folder to the
node (the bundle is ignored by git; 64 MiB with the checkout at most).

    python scripts/gpu_bundle.py --dest .gpu

The bundle holds:

* ``wheels/``: sentlab's own wheel and a wheelhouse (``scripts/wheelhouse.py``, the one
  implementation) of only what the node's image lacks or has at another version, for its Python and
  platform (``--python-version``, ``--platform``; the image: Python 3.12 with torch, numpy, scipy,
  scikit-learn, pandas, pyarrow, accelerate, safetensors and huggingface_hub 1.33). normflows is built
  from its source; huggingface_hub is left to the image (2.4 needs httpx2, which it lacks).
* ``data/``: the data the check reads, xz-compressed: the STS tasks and the first lines of the
  Wikipedia sentences, as many as fit (``data.json`` says how many).
* ``bundle.json``: what is in it, each file's size and sha256, the versions, the checkout's commit.

It says the bundle's size and refuses (one line, exit 2) to leave a bundle that does not fit
``--limit-mib`` together with the checkout's tracked files. ``--tiny`` makes a small bundle with no
wheels (the CPU check in CI installs nothing: the environment has sentlab already).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # run from a checkout, installed or not
from sentlab.cache import file_sha256  # noqa: E402

# what the node's image lacks or has at another version (pins from constraints.txt)
NODE_NEEDS = [
    "transformers",
    "sentence-transformers",
    "tokenizers",
    "datasets",
    "dill",
    "multiprocess",
    "xxhash",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "faiss-cpu",
    "normflows",
    "regex",  # transformers imports it
    "peft",  # model.adapter (LoRA) and its tests
    "model2vec",  # sentlab distill-static (the distill part), with what it needs beyond the image
    "rich",
    "markdown-it-py",
    "mdurl",
    "pytest",  # the suite part, with what it needs
    "iniconfig",
    "pluggy",
    "pygments",
]
# everything else sentlab declares, the image has (torch, numpy, scipy, scikit-learn, threadpoolctl, pandas,
# pyarrow, accelerate, safetensors, huggingface-hub, filelock, pyyaml, tqdm, matplotlib, tensorboard: the
# device notes of 2026-11-17). On the node, the install part's `pip check` fails where a base requirement
# is missing; of the test extra, a missing pytest fails the suite part and a missing tensorboard shows as
# its test skipped, with the reason, in that part's record; mteb (its polars wheel alone is over the
# bundle's limit) is left out, and its recipe's test skips, with the reason
STS = ["senteval/downstream/STS", "senteval/downstream/SICK"]  # the STS tasks sentlab scores (SICK-R too)
WIKIPEDIA = "wikipedia/wiki_sentences.txt"


def wheelhouse():
    spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "scripts" / "wheelhouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def checkout_bytes() -> int:
    """The tracked files of the checkout: what travels beside the bundle."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return sum((ROOT / name).stat().st_size for name in files.decode().split("\0") if name and (ROOT / name).is_file())


def checkout_hashes(root: Path = ROOT) -> dict[str, str]:
    """The sha256 of each tracked file of the checkout as it is on disk (``git ls-files``)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    names = [name for name in listed.decode().split("\0") if name and (root / name).is_file()]
    return {name: file_sha256(root / name) for name in names}


def compress(source: Path, target: Path, limit_bytes: int | None = None, lines: int | None = None) -> int:
    """``source`` xz-compressed to ``target`` (its first ``lines`` lines when given); the lines written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with source.open("rb") as inp, lzma.open(target, "wb", preset=6) as out:
        for line in inp:
            if lines is not None and written >= lines:
                break
            out.write(line)
            written += 1
    return written


def fill_wikipedia(source: Path, target: Path, budget: int) -> int:
    """As many of the first lines of ``source`` as fit ``budget`` bytes compressed (halving the count
    until they do); the lines kept."""
    total = sum(1 for _ in source.open("rb"))
    lines = total
    while lines > 1000:
        compress(source, target, lines=lines)
        if target.stat().st_size <= budget:
            return lines
        lines = int(lines * budget / target.stat().st_size * 0.97)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=ROOT / ".gpu")
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $SENTLAB_DATA, else ../shared/data")
    parser.add_argument("--python-version", default="3.12")
    parser.add_argument("--platform", default="manylinux_2_28_x86_64")
    parser.add_argument("--limit-mib", type=float, default=64.0, help="the carry limit, checkout included")
    parser.add_argument("--tiny", action="store_true", help="no wheels, 2,000 Wikipedia lines: the CPU check's")
    args = parser.parse_args(argv)
    data = args.data_dir or Path(os.environ.get("SENTLAB_DATA", ROOT.parent / "shared" / "data"))
    for needed in (*(data / p for p in STS), data / WIKIPEDIA):
        if not needed.exists():
            print(f"error: {needed}: not found (give --data-dir or set $SENTLAB_DATA)", file=sys.stderr)
            return 2
    limit = int(args.limit_mib * 2**20)
    shutil.rmtree(args.dest, ignore_errors=True)
    wheels = args.dest / "wheels"
    wheels.mkdir(parents=True)
    module = wheelhouse()
    pins = {module.name_of(p): p for p in module.pins(ROOT / "constraints.txt")}
    versions = {name: pins[name].split("==")[1] for name in NODE_NEEDS if name in pins}
    if not args.tiny:
        chosen = [pins[name] for name in NODE_NEEDS]
        module.write_requirements(wheels, chosen)
        for command in module.commands(
            wheels, args.python_version, args.platform, ROOT / "constraints.txt", pins=chosen
        ):
            print("+ " + " ".join(command[3:6]) + " ...", file=sys.stderr)
            if subprocess.run(command).returncode != 0:
                print(f"error: {' '.join(command)} failed", file=sys.stderr)
                return 1
    sts = args.dest / "data" / "sts.tar.xz"
    sts.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-cJf", str(sts), "-C", str(data), *STS], check=True)
    used = checkout_bytes() + sum(p.stat().st_size for p in args.dest.rglob("*") if p.is_file())
    wiki = args.dest / "data" / "wiki_sentences.txt.xz"
    if args.tiny:
        lines = compress(data / WIKIPEDIA, wiki, lines=2000)
    else:
        lines = fill_wikipedia(data / WIKIPEDIA, wiki, limit - used - (256 << 10))  # 256 KiB for the record
        if not lines:
            print(f"error: even 1,000 Wikipedia lines do not fit {args.limit_mib:g} MiB with the rest", file=sys.stderr)
            shutil.rmtree(args.dest, ignore_errors=True)
            return 2
    (args.dest / "data" / "data.json").write_text(json.dumps({"wikipedia_lines": lines, "sts": STS}) + "\n")
    files = {
        str(p.relative_to(args.dest)): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
        for p in sorted(args.dest.rglob("*"))
        if p.is_file()
    }
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    # the wheel holds the working tree: say when it differs from the commit
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    total = checkout_bytes() + sum(f["bytes"] for f in files.values())
    record = {
        "commit": commit,
        "dirty": bool(dirty),
        # the checkout the bundle belongs to, file by file: a node's copy (a tar of git ls-files, no .git)
        # is checked against it before any part runs (benchmarks/gpu/check.py)
        "checkout": checkout_hashes(),
        "target": {"python": args.python_version, "platform": args.platform},
        "tiny": args.tiny,
        "versions": versions,
        "wikipedia_lines": lines,
        "files": files,
        "bytes": {"bundle": sum(f["bytes"] for f in files.values()), "with_checkout": total, "limit": limit},
    }
    (args.dest / "bundle.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(
        f"bundle {args.dest}: {record['bytes']['bundle'] / 2**20:.1f} MiB, {total / 2**20:.1f} MiB with the checkout "
        f"(limit {args.limit_mib:g} MiB); {len(files)} files, {lines:,} Wikipedia lines",
        file=sys.stderr,
    )
    if total > limit:
        print(f"error: {total / 2**20:.1f} MiB with the checkout exceeds {args.limit_mib:g} MiB", file=sys.stderr)
        shutil.rmtree(args.dest, ignore_errors=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
