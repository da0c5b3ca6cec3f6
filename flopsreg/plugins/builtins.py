"""Which plugins a default registry loads, answered without importing any of them (nor sympy):
the list of built-ins, their manifest, and whether an installed distribution may add a plugin.

The loader reads these before it imports anything; the cold path of the command line
(:mod:`flopsreg.engine.cold`) reads them to know that the manifest speaks for every plugin.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from flopsreg.plugins import manifest
from flopsreg.plugins.entry_points import may_declare_entry_points

__all__ = ["ENTRY_POINT_GROUP", "builtin_names", "builtins_alone", "listed_patterns", "manifest_path", "may_declare_entry_points",
           "planned_manifest", "planned_patterns"]

ENTRY_POINT_GROUP = "flopsreg"


def builtin_names() -> tuple[str, ...]:
    """The modules :data:`flopsreg.patterns.BUILTIN` lists, in its order (the package alone is imported)."""
    from flopsreg.patterns import BUILTIN

    return BUILTIN


def manifest_path() -> str:
    """Where the manifest of the built-ins lives: beside them, so that the wheel ships it."""
    from flopsreg import patterns

    return os.path.join(os.path.dirname(patterns.__file__), "manifest.json")


def planned_manifest() -> Mapping[str, Any] | None:
    """The manifest's index, if there is one that lists exactly the modules of BUILTIN, else None."""
    data = manifest.load(manifest_path())
    if data is None or list(data["modules"]) != list(builtin_names()):
        return None
    return data


def planned_patterns(module: str) -> list[dict[str, Any]] | None:
    """The patterns of built-in *module* as the manifest lists them, or None where it cannot say."""
    return manifest.module_patterns(manifest_path(), module)


def builtins_alone() -> bool:
    """Whether a default registry (:meth:`flopsreg.Registry.default`) would load the built-ins and
    nothing else: plugin autoloading is off, or no distribution may declare an entry point."""
    return os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD") == "1" or not may_declare_entry_points(ENTRY_POINT_GROUP)


def listed_patterns() -> list[Mapping[str, Any]] | None:
    """Every pattern of a default registry as the manifest lists it, in the order of
    :attr:`PluginLoader.patterns <flopsreg.plugins.loader.PluginLoader.patterns>` (slot, precedence
    highest first, name), without importing a built-in; None where it cannot say (another plugin
    may be installed, no manifest of BUILTIN, a module's file missing or without summaries)."""
    index = planned_manifest() if builtins_alone() else None
    if index is None:
        return None
    listed: list[Mapping[str, Any]] = []
    for module in index["modules"]:
        patterns = planned_patterns(module)
        if patterns is None or not all(isinstance(item, dict) and "summary" in item for item in patterns):
            return None
        listed += patterns
    return sorted(listed, key=lambda item: (item["slot"], -item["precedence"], item["name"]))
