"""Where sentlab finds its data.

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
