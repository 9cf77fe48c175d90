"""Reading a config: the one place that fills the registry of methods before a config is validated.

The config schema (:mod:`sentlab.training.config`) sits below the methods that extend it and never
names them; this module, in the methods' layer, loads them: sentlab's own methods (this package's
modules register themselves as it is imported) and each package of one's own methods named in the
``sentlab.methods`` entry-point group (a package declares itself there in its ``pyproject.toml``,
``[project.entry-points."sentlab.methods"]``). Every command, the Python API and the benchmarks read
configs through :func:`load_config` and :func:`validate_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sentlab.errors import ConfigError
from sentlab.methods.base import METHODS
from sentlab.training import config as schema
from sentlab.training.config import TrainConfig, parse_config, registered_configs

METHOD_PACKAGES = "sentlab.methods"  # the entry-point group of installed packages of one's own methods
_LOADED: list[bool] = []  # the entry points' packages were imported


def installed_methods() -> dict[str, type[TrainConfig]]:
    """Every method's config class by name: sentlab's, then those of the installed packages of the
    ``sentlab.methods`` entry-point group (imported once; a package that fails to import is a
    one-line :class:`ConfigError` naming it)."""
    if not _LOADED:
        from importlib.metadata import entry_points

        for package in entry_points(group=METHOD_PACKAGES):
            registries = (METHODS, schema.CONFIG_CLASSES, schema.METHOD_REFUSES)
            before = [dict(registry) for registry in registries]
            try:
                package.load()
            except Exception as err:  # one line naming the package, not a traceback from inside it
                for registry, saved in zip(registries, before):  # what it registered before failing goes
                    registry.clear()
                    registry.update(saved)
                schema._ADAPTER.clear()
                raise ConfigError(
                    f"the methods of {package.value!r} (entry point {package.name!r}) fail to load: {err}"
                ) from None
        _LOADED.append(True)
    return registered_configs()


def load_config(
    path: str | Path, overrides: list[str] | None = None, updates: Mapping[str, Any] | None = None
) -> TrainConfig:
    """A YAML config (a file, or a packaged preset by name) with ``key=value`` overrides and ``updates``
    merged in, validated against every installed method (:func:`sentlab.training.config.parse_config`:
    its errors are one line naming the ``--set`` option or the file)."""
    installed_methods()
    return parse_config(path, overrides, updates)


def validate_config(tree: Mapping[str, Any]) -> TrainConfig:
    """A config given as nested mappings, validated against every installed method."""
    installed_methods()
    return TrainConfig.model_validate(dict(tree))
