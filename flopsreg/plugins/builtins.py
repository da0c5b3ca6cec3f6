"""Which plugins a default registry loads, answered without importing any of them (nor sympy):
the list of built-ins, their manifest, and whether an installed distribution may add a plugin.

The loader reads these before it imports anything; the cold path of the command line
(:mod:`flopsreg.engine.cold`) reads them to know that the manifest speaks for every plugin.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from flopsreg.plugins import manifest

__all__ = ["ENTRY_POINT_GROUP", "builtin_names", "builtins_alone", "manifest_path", "may_declare_entry_points", "planned_manifest"]

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
    """The manifest, if there is one that lists exactly the modules of BUILTIN, else None."""
    data = manifest.load(manifest_path())
    if data is None or list(data["modules"]) != list(builtin_names()):
        return None
    return data


def may_declare_entry_points(group: str) -> bool:
    """Whether any distribution on ``sys.path`` may declare entry points of *group*.

    A look at each ``*.dist-info``/``*.egg-info`` folder's ``entry_points.txt``; anything it cannot
    read this way (a zip or egg file on the path, a custom finder) answers True, and
    :mod:`importlib.metadata` then decides. False lets a start skip importing it.
    """
    header = re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]", re.MULTILINE)
    if any(hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder for finder in sys.meta_path):
        return True  # another finder of distributions: only importlib.metadata knows what it finds
    for entry in sys.path:
        folder = entry or os.curdir
        try:
            names = os.listdir(folder)
        except NotADirectoryError:  # a zip or an egg file: importlib.metadata reads those
            return True
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8", errors="replace") as file:
                        if header.search(file.read()):
                            return True
                except OSError:
                    continue
    return False


def builtins_alone() -> bool:
    """Whether a default registry (:meth:`flopsreg.Registry.default`) would load the built-ins and
    nothing else: plugin autoloading is off, or no distribution may declare an entry point."""
    return os.environ.get("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD") == "1" or not may_declare_entry_points(ENTRY_POINT_GROUP)
