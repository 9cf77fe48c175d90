"""Weight files checked before anything reads them: a damaged file is a one-line error naming it.

A safetensors file is an 8-byte header length, a JSON header whose tensors' ``data_offsets`` end at
the end of the data, then the data: a file cut short (a process killed while writing it, a full disk)
has fewer bytes than its header promises, which :func:`safetensors_problem` reports without reading
the tensors. Pickled weights (``pytorch_model.bin``, ``*.pt``) are not loaded at all where no
safetensors file stands beside them: sentlab never unpickles a model's weights.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from sentlab.errors import ModelLoadError

PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


def safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole safetensors file, or None when its size matches its header."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return f"{size} bytes, too short for a safetensors header"
            (header_length,) = struct.unpack("<Q", head)
            if header_length > size - 8:
                return f"{size} bytes, cut inside its header (damaged or partly written)"
            header = json.loads(f.read(header_length))
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    except (ValueError, UnicodeDecodeError):
        return "its safetensors header is not valid JSON (damaged or partly written)"
    ends = [
        entry["data_offsets"][1]
        for key, entry in header.items()
        if key != "__metadata__" and isinstance(entry, dict) and "data_offsets" in entry
    ]
    expected = 8 + header_length + max(ends, default=0)
    if size != expected:
        return f"{size:,} bytes where its header needs {expected:,} (damaged or partly written)"
    return None


def check_weight_files(folder: str | Path) -> None:
    """Raise :class:`ModelLoadError` naming the first damaged safetensors file under ``folder``, or the
    pickled weights file of a module that has no safetensors weights."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*.safetensors")):
        problem = safetensors_problem(path)
        if problem:
            raise ModelLoadError(f"{path}: damaged weights file: {problem}; restore or re-create it")
    for directory in [folder, *sorted(p for p in folder.rglob("*") if p.is_dir())]:
        pickled = [directory / name for name in PICKLED_WEIGHTS[:2] if (directory / name).is_file()]
        if pickled and not any(directory.glob("*.safetensors")):
            raise ModelLoadError(
                f"{pickled[0]}: pickled weights, which sentlab does not load (unpickling can run "
                "code); convert them to model.safetensors with a tool you trust"
            )
