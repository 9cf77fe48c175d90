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


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """Each module of ``root/sentlab`` -> the modules of it that it imports."""
    files = {module_name(path, root): path for path in (root / "sentlab").rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                if target in files and target != name:
                    graph[name].add(target)
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
    ["sentlab.errors", "sentlab.paths", "sentlab.progress", "sentlab.cache", "sentlab.devices", "sentlab.precision"],
    ["sentlab.data", "sentlab.presets"],
    ["sentlab.encoders", "sentlab.rank.index", "sentlab.rank.vectors"],
    ["sentlab.losses"],
    ["sentlab.evaluation", "sentlab.rank", "sentlab.reporting.plots"],
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
