"""Where sentlab finds its data, and how it writes a file whole.

The data folder comes from (in order) an explicit argument, the ``SENTLAB_DATA`` environment
variable, or ``../shared/data`` relative to the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV_VAR = "SENTLAB_DATA"
DEFAULT_DATA_DIR = Path("../shared/data")


def data_dir(explicit: str | Path | None = None) -> Path:
    """Resolve the data folder (it is not required to exist: readers report missing files)."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_ENV_VAR)
    return Path(env).expanduser() if env else DEFAULT_DATA_DIR


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` whole or not at all (a temporary file renamed into place): a file a killed
    process leaves behind is never read as complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
