"""A guard that runs on a CPU for what breaks only on a device: ``tensor.numpy()`` raises for a tensor
on a GPU, and on a CPU it passes whether or not the tensor would have been moved. So every
``.numpy()`` in sentlab and its tests goes through ``.cpu()`` (or ``.to("cpu")``) in the same
expression, on a CPU tensor too (where it costs nothing), and this lint holds that rule."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _moved_to_cpu(node: ast.AST) -> bool:
    """Whether the expression a ``.numpy()`` is called on passes through ``.cpu()`` / ``.to("cpu")``."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute):
                return False
            name = node.func.attr
            to_cpu = name == "to" and any(
                isinstance(a, ast.Constant) and a.value == "cpu"
                for a in [*node.args, *(k.value for k in node.keywords)]
            )
            if name == "cpu" or to_cpu:
                return True
            node = node.func.value
        else:
            node = node.value
    return False


def numpy_without_cpu(source: str, name: str = "<source>") -> list[str]:
    """``name:line`` of each ``.numpy()`` whose receiver is not moved to the CPU first."""
    return [
        f"{name}:{node.lineno}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "numpy"
        and not node.args
        and not _moved_to_cpu(node.func.value)
    ]


def test_every_numpy_call_moves_its_tensor_to_the_cpu_first():
    found = [
        hit
        for folder in ("src", "tests", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for hit in numpy_without_cpu(path.read_text("utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, "tensor.numpy() without .cpu() (raises for a tensor on a GPU): " + ", ".join(found)


def test_the_lint_finds_what_breaks_on_a_device():
    assert numpy_without_cpu("q.numpy()") == ["<source>:1"]
    assert numpy_without_cpu("expected.detach().numpy()") == ["<source>:1"]
    assert numpy_without_cpu("(a @ b.T)[0].numpy()") == ["<source>:1"]
    assert numpy_without_cpu("x.detach().cpu().numpy()\ny[0].to('cpu').numpy()\nz.to(device='cpu').numpy()") == []
