"""The modules of ``src/sentlab`` import one another without a circle.

Every import statement counts, a function's deferred import included: a circle that only works because
one side imports late is still two modules that each need the other. The graph is read from the source
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


def test_the_method_registry_fills_itself_where_only_the_schema_is_imported():
    """No module imports sentlab.methods for its side effect: a process that imports the config schema
    alone validates any method's config (the registry loads the methods on first use)."""
    import subprocess
    import sys

    bare = [
        f"{path.relative_to(SRC.parent)}:{node.lineno}"
        for folder in (SRC, SRC.parent / "tests")
        for path in folder.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Import) and any(alias.name == "sentlab.methods" for alias in node.names)
    ]
    assert not bare, "imported for a side effect: " + ", ".join(bare)
    code = (
        "import sys; from sentlab.training.config import config_adapter\n"
        "assert 'sentlab.methods' not in sys.modules\n"
        "tree = {'method': 'tsdae', 'model': {'name': 'm'}, 'data': {'train': 'x.txt'}, 'train': {'output_dir': 'o'}}\n"
        "cfg = config_adapter().validate_python(tree)\n"
        "print(type(cfg).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "TSDAEConfig"


def test_no_import_circle_in_src():
    found = circle(import_graph())
    assert not found, "import circle: " + " -> ".join(found)


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
