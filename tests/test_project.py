"""The project a user cites and follows: one version everywhere (the package, `sentlab --version`, the
changelog's newest entry, CITATION.cff), a removed flag deprecated with a one-line notice, and a Python
lower bound that every extra the documentation installs runs on."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
import yaml

import sentlab
from sentlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]


def test_one_version_everywhere(capsys):
    version = PYPROJECT["version"]
    assert sentlab.__version__ == version
    newest = re.search(r"^## (\S+) \(\d{4}-\d\d-\d\d\)$", (ROOT / "CHANGELOG.md").read_text("utf-8"), re.M)
    assert newest and newest.group(1) == version, "CHANGELOG.md's newest entry is the package's version"
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text("utf-8"))
    assert citation["version"] == version and citation["cff-version"] == "1.2.0"
    try:
        installed = distribution("sentlab").version
    except PackageNotFoundError:
        pytest.skip("sentlab is not installed (run from a checkout on PYTHONPATH)")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"sentlab {installed}"


def test_a_deprecated_flag_runs_on_with_one_line_saying_when_it_goes(tmp_path, tiny_backbone, capsys):
    """`sentlab encode --no-cache` (removed in the memory-mapped rewrite): a script that passes it still
    runs, and stderr says it does nothing and when it goes; the changelog lists it."""
    text = tmp_path / "t.txt"
    text.write_text("a cat\nthe dog\n", encoding="utf-8")
    out = tmp_path / "t.npy"
    assert (
        main(["encode", "--model", str(tiny_backbone), "--input", str(text), "--output", str(out), "--no-cache"]) == 0
    )
    assert out.is_file()
    notices = [line for line in capsys.readouterr().err.splitlines() if "--no-cache" in line]
    assert (
        len(notices) == 1 and "deprecated and does nothing" in notices[0] and "removed in sentlab 0.3.0" in notices[0]
    )
    assert "`sentlab encode --no-cache`" in (ROOT / "CHANGELOG.md").read_text("utf-8")


def _lower_bound(specifier: str) -> tuple[int, ...] | None:
    found = re.search(r">=\s*([\d.]+)", specifier)
    return tuple(int(p) for p in found.group(1).split(".")) if found else None


def test_the_python_lower_bound_holds_for_every_extra_the_pages_install():
    """Each installed distribution sentlab's install command pulls in (its dependencies and the extras
    the README installs, followed through their own requirements) runs on sentlab's lowest Python."""
    from packaging.requirements import Requirement

    ours = _lower_bound(PYPROJECT["requires-python"])
    readme = (ROOT / "README.md").read_text("utf-8")
    extras = re.search(r'-e "\.\[([\w,]+)\]"', readme).group(1).split(",")
    queue = [Requirement(r) for r in PYPROJECT["dependencies"]]
    queue += [Requirement(r) for extra in extras for r in PYPROJECT["optional-dependencies"][extra]]
    seen, short = set(), []
    while queue:
        requirement = queue.pop()
        name = requirement.name.lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = distribution(requirement.name)
        except PackageNotFoundError:
            continue  # not installed here (a platform marker): nothing to read
        needed = _lower_bound(dist.metadata.get("Requires-Python") or "")
        if needed and needed > ours:
            short.append(f"{dist.metadata['Name']} needs Python {'.'.join(map(str, needed))}")
        for text in dist.requires or []:
            child = Requirement(text)
            if child.marker is None or child.marker.evaluate({"extra": ""}):
                queue.append(child)
    assert len(seen) > 50  # the closure was followed, not only the direct dependencies
    assert not short, f"requires-python {PYPROJECT['requires-python']} is too low: " + "; ".join(short)


def test_the_removed_cached_rse_loss_still_builds_for_a_version(tiny_backbone_no_dropout, capsys):
    """A drop-in for 0.1.0's class, for its version of deprecation: importable from both places, an
    RSELoss with its relation vectors under their own names, and the value and gradients of
    GradientCache(RSELoss(...)) (float64: the chunks' sums agree to rounding)."""
    import torch

    from sentlab.encoders import build_encoder
    from sentlab.losses import CachedRSELoss, GradientCache, RSELoss
    from sentlab.losses.rse import CachedRSELoss as FromRSE

    assert FromRSE is CachedRSELoss
    model = build_encoder(str(tiny_backbone_no_dropout), "mean").double()
    with pytest.warns(DeprecationWarning, match="removed in sentlab 0.3.0"):
        loss = CachedRSELoss(model, ["entailment", "duplicate"], temperature=0.1, mini_batch_size=2)
    assert "CachedRSELoss is deprecated" in capsys.readouterr().err
    assert isinstance(loss, RSELoss) and isinstance(loss, CachedRSELoss) and issubclass(CachedRSELoss, RSELoss)
    assert loss.temperature == 0.1 and loss.mini_batch_size == 2
    assert "relation_vectors" in dict(loss.named_parameters()) and "relation_vectors" in loss.state_dict()
    assert not any("_cache" in k for k in loss.state_dict())  # the cache holds the loss, not the reverse
    reference = GradientCache(RSELoss(model, ["entailment", "duplicate"], temperature=0.1), 2)
    with torch.no_grad():
        reference.loss.relation_vectors.copy_(loss.relation_vectors)
    heads, tails = ["a man plays", "a dog runs", "two cats", "the sun"], ["music", "a park", "sleep", "sky"]

    def value_and_grads(fn, vectors):
        model.zero_grad()
        vectors.grad = None
        features = [model.tokenize(heads), model.tokenize(tails)]
        value = fn(features, torch.tensor([0, 1, 0, 1]))
        value.backward()
        return value.detach(), [p.grad.clone() for p in [vectors, *model.parameters()] if p.grad is not None]

    got, got_grads = value_and_grads(loss, loss.relation_vectors)
    want, want_grads = value_and_grads(reference, reference.loss.relation_vectors)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    assert len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-9, atol=1e-12)
    assert "`sentlab.losses.CachedRSELoss`" in (ROOT / "CHANGELOG.md").read_text("utf-8")


@pytest.mark.slow
def test_the_sdist_holds_the_package_and_builds_the_same_wheel_as_the_checkout(tmp_path):
    """A user without a checkout installs from the sdist. Built from the files git ships (the working
    tree's tracked files), it holds the package and its metadata only (MANIFEST.in leaves the tests,
    which need the whole checkout), and the wheel pip builds from it holds the same files as the wheel
    built from the same tree (the presets and every module included)."""
    import io
    import subprocess
    import sys
    import tarfile
    import zipfile

    def run(*argv, cwd=ROOT) -> subprocess.CompletedProcess:
        done = subprocess.run(argv, cwd=cwd, capture_output=True)
        assert done.returncode == 0, f"{' '.join(map(str, argv))}:\n{done.stderr.decode(errors='replace')[-2000:]}"
        return done

    if subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode != 0:
        pytest.skip("needs a git checkout")
    # the working tree's tracked files, untouched (a stash commit; HEAD when the tree is clean)
    identity = ["-c", "user.name=sentlab tests", "-c", "user.email=tests@sentlab.invalid"]
    stash = subprocess.run(["git", *identity, "stash", "create"], cwd=ROOT, capture_output=True)
    tree = (stash.stdout.decode().strip() if stash.returncode == 0 else "") or "HEAD"
    source, sdists, from_sdist, from_tree = (tmp_path / name for name in ("source", "sdist", "from-sdist", "from-tree"))
    source.mkdir()
    tarfile.open(fileobj=io.BytesIO(run("git", "archive", "--format=tar", tree).stdout)).extractall(
        source, filter="data"
    )
    # setuptools' PEP 517 hook, the one `python -m build --sdist` calls, without a network build environment
    run(sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(sdists)!r})", cwd=source)
    sdist = next(sdists.glob("sentlab-*.tar.gz"))
    top = f"sentlab-{PYPROJECT['version']}"
    assert sdist.name == f"{top}.tar.gz"
    members = tarfile.open(sdist).getnames()
    assert {m.split("/")[1] for m in members if "/" in m} <= {
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "PKG-INFO",
        "setup.cfg",
        "MANIFEST.in",
        "src",
    }, "the sdist holds only the package and its metadata"
    assert f"{top}/src/sentlab/presets/simcse-unsup-minilm-cpu.yaml" in members
    for target, what in ((from_sdist, sdist), (from_tree, source)):
        run(
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(target),
            str(what),
        )

    def files(folder: Path) -> set[str]:
        return set(zipfile.ZipFile(next(folder.glob("sentlab-*.whl"))).namelist())

    shipped = files(from_sdist)
    assert shipped == files(from_tree)
    modules = {str(p.relative_to(source / "src")) for p in (source / "src" / "sentlab").rglob("*.py")}
    assert modules and modules <= shipped, sorted(modules - shipped)[:5]
