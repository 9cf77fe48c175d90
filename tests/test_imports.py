"""The modules of ``src/sentlab`` import one another without a circle.

Every import statement counts, a function's deferred import included: a circle that only works because
one side imports late is still two modules that each need the other. A string that is a module's full
name counts too (``importlib.import_module("sentlab.x")``): naming a module is reaching it. The graph is read from the source
with ``ast``; an import of ``a.b.c`` (or ``from a.b import c``, c a module) is an edge to that module.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(node: ast.AST, package: str, files: dict[str, Path]) -> list[str]:
    """The sentlab modules an import statement names."""
    targets: list[str] = []
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
    return [target for target in targets if target in files]


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """Each module of ``root/sentlab`` -> the modules of it that it imports. Importing ``a.b.c`` also
    runs ``a/b/__init__.py``: what that file imports when it runs (its statements at module level, not
    the deferred ones in its functions) counts as imported by the importer too."""
    files = {module_name(path, root): path for path in (root / "sentlab").rglob("*.py")}
    trees = {name: ast.parse(path.read_text("utf-8")) for name, path in files.items()}

    def package_of(name: str) -> str:
        return name if files[name].name == "__init__.py" else name.rpartition(".")[0]

    on_load = {  # what a package's __init__ imports as it runs
        name: {t for node in trees[name].body for t in _imports(node, package_of(name), files)}
        for name, path in files.items()
        if path.name == "__init__.py"
    }
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name in files:
        for node in ast.walk(trees[name]):
            if isinstance(node, ast.Constant) and node.value in files and not name.startswith(f"{node.value}."):
                graph[name].add(node.value)  # a module named in a string (importlib, patching) is reached too
            for target in _imports(node, package_of(name), files):
                parts = target.split(".")
                # the importer's own packages ran before it (they are its importers, not its imports)
                enclosing = [
                    p for p in (".".join(parts[:i]) for i in range(2, len(parts))) if not name.startswith(p + ".")
                ]
                for reached in [target, *(t for p in enclosing if p in on_load for t in on_load[p])]:
                    if reached != name:
                        graph[name].add(reached)
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (its modules in order, the first repeated last), or []."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as err:
        return list(err.args[1])
    return []


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return False


def test_an_enclosing_package_counts_as_imported(tmp_path):
    """``from sentlab.b.c import f`` runs ``sentlab/b/__init__.py``: its imports are the importer's too."""
    package = tmp_path / "sentlab"
    (package / "b").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from sentlab.b.c import f\n")
    (package / "b" / "__init__.py").write_text("from sentlab import d\n\ndef later():\n    from sentlab import e\n")
    (package / "b" / "c.py").write_text("def f():\n    pass\n")
    (package / "d.py").write_text("from sentlab import a\n")
    (package / "e.py").write_text("")
    graph = import_graph(tmp_path)
    assert graph["sentlab.a"] == {"sentlab.b.c", "sentlab.d"}  # b's deferred import of e does not run
    assert sorted(set(circle(graph))) == ["sentlab.a", "sentlab.d"]


def test_the_schema_never_loads_the_methods_and_the_methods_read_every_config():
    """The config schema names no method, not even by a string: imported alone, it validates nothing
    and says where configs are read (no method is loaded behind the caller's back); read through
    sentlab.methods, every method's config validates."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from sentlab.errors import ConfigError\n"
        "from sentlab.training.config import TrainConfig\n"
        "tree = {'method': 'tsdae', 'model': {'name': 'm'}, 'data': {'train': 'x.txt'}, 'train': {'output_dir': 'o'}}\n"
        "try:\n"
        "    TrainConfig.model_validate(tree)\n"
        "except ConfigError as err:\n"
        "    print(err)\n"
        "assert 'sentlab.methods' not in sys.modules\n"
        "from sentlab.methods import validate_config\n"
        "print(type(validate_config(tree)).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "no method is registered: read a config through sentlab.methods.load_config (a tree: validate_config)",
        "TSDAEConfig",
    ]


PLUGIN = """
from typing import Literal

from sentlab.methods.base import register
from sentlab.methods.simcse import SimCSEUnsup, SimCSEUnsupConfig


class MyConfig(SimCSEUnsupConfig):
    method: Literal["my-method"]


@register
class MyMethod(SimCSEUnsup):
    name = "my-method"
    config_class = MyConfig
"""


def test_a_package_of_one_s_own_methods_is_loaded_from_its_entry_point(tmp_path, monkeypatch):
    """A package in the ``sentlab.methods`` entry-point group is imported before a config is read, so
    a config naming its method validates; one that fails to import is a one-line error naming it."""
    import importlib.metadata
    import sys

    from sentlab.errors import ConfigError
    from sentlab.methods import METHODS, loading
    from sentlab.training import config

    (tmp_path / "my_methods_ok.py").write_text(PLUGIN)
    broken = PLUGIN.replace("my-method", "my-broken") + "\nraise ImportError('needs torch-nightly')\n"
    (tmp_path / "my_methods_bad.py").write_text(broken)  # registers a method, then fails
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = {name: dict(r) for name, r in (("m", METHODS), ("c", config.CONFIG_CLASSES), ("r", config.METHOD_REFUSES))}
    points = [importlib.metadata.EntryPoint("mine", "my_methods_ok", loading.METHOD_PACKAGES)]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: points if group == "sentlab.methods" else [])
    monkeypatch.setattr(loading, "_LOADED", [])
    tree = {"method": "my-method", "model": {"name": "m"}, "data": {"train": "x.txt"}, "train": {"output_dir": "o"}}
    try:
        assert type(loading.validate_config(tree)).__name__ == "MyConfig"
        points[:] = [importlib.metadata.EntryPoint("broken", "my_methods_bad", loading.METHOD_PACKAGES)]
        monkeypatch.setattr(loading, "_LOADED", [])
        for _ in range(2):  # what it registered before failing is gone: the second try fails the same way
            with pytest.raises(
                ConfigError, match="the methods of 'my_methods_bad' .entry point 'broken'. fail to load"
            ):
                loading.load_config("simcse-unsup-minilm-cpu")
            assert "my-broken" not in METHODS and "my-broken" not in config.CONFIG_CLASSES
            monkeypatch.setattr(loading, "_LOADED", [])
    finally:  # the plugin's method leaves no trace for the tests after this one
        for registry, before in ((METHODS, saved["m"]), (config.CONFIG_CLASSES, saved["c"])):
            registry.clear()
            registry.update(before)
        config.METHOD_REFUSES.clear()
        config.METHOD_REFUSES.update(saved["r"])
        config._ADAPTER.clear()
        sys.modules.pop("my_methods_ok", None)


def test_no_import_circle_in_src():
    found = circle(import_graph())
    assert not found, "import circle: " + " -> ".join(found)


def test_a_module_named_in_a_string_is_reached(tmp_path):
    package = tmp_path / "sentlab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import importlib\n\ndef f():\n    importlib.import_module('sentlab.b')\n")
    (package / "b.py").write_text("from sentlab import a\n")
    assert sorted(set(circle(import_graph(tmp_path)))) == ["sentlab.a", "sentlab.b"]


def test_the_check_finds_a_circle(tmp_path):
    package = tmp_path / "sentlab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from sentlab.b import g\n")  # a deferred import counts
    (package / "b.py").write_text("from sentlab import a\n")
    assert sorted(set(circle(import_graph(tmp_path)))) == ["sentlab.a", "sentlab.b"]


@pytest.mark.parametrize(
    "lower, upper",
    [
        ("sentlab.training.config", "sentlab.methods.base"),
        ("sentlab.data.sts", "sentlab.data.sources"),
        ("sentlab.reporting.adapt", "sentlab.adapt"),
    ],
)
def test_a_layer_does_not_reach_up(lower, upper):
    """The three circles that stood here stay untied: the config schema below the methods that extend
    it, the STS reader below the downloads, the adapt report below the run that writes it."""
    assert not reaches(import_graph(), lower, upper)


# The layers of docs/reference/architecture.md, lowest first; a module belongs to the longest prefix
# that names it, and imports only modules of its own layer or of layers below it.
LAYERS = [
    [
        "sentlab.errors",
        "sentlab.paths",
        "sentlab.progress",
        "sentlab.cache",
        "sentlab.cache_folder",
        "sentlab.devices",
        "sentlab.precision",
        "sentlab.quantize",
    ],
    ["sentlab.data", "sentlab.presets"],
    ["sentlab.encoders", "sentlab.rank.index", "sentlab.rank.vectors", "sentlab.mining"],
    ["sentlab.losses"],
    ["sentlab.evaluation", "sentlab.rank", "sentlab.reporting.plots", "sentlab.encoding"],
    ["sentlab.training.config", "sentlab.training.run_folder", "sentlab.training.samplers"],
    ["sentlab.methods"],
    ["sentlab.training"],
    ["sentlab.adapt_plan"],
    ["sentlab.adapt", "sentlab.reporting"],
    ["sentlab.api"],
    ["sentlab.cli", "sentlab"],
]


def layer(module: str) -> int:
    named = [(len(p), i) for i, names in enumerate(LAYERS) for p in names if module == p or module.startswith(p + ".")]
    assert named, f"{module} is in no layer"
    return max(named)[1]


def test_every_import_goes_to_the_same_layer_or_below():
    graph = import_graph()
    upward = [f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer(b) > layer(a)]
    assert not upward, "imports that reach a layer above: " + "; ".join(sorted(upward))
