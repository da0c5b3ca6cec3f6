"""Old module paths, kept for one release (0.2): importing one warns ``DeprecationWarning`` and
gives the module at its new path.

Until 0.1 the core was one flat folder (``flopsreg.compile``, ``flopsreg.registry``, ...); its
modules now live in folders by the path data takes (docs/architecture.md). :func:`install` puts
:class:`OldPaths` on ``sys.meta_path``; ``import flopsreg.compile`` then returns
``flopsreg.formula.compile`` itself (the same module object, so monkeypatching either works).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

# old module path -> new module path (every module that moved in 0.2; the others kept their path)
MOVED: dict[str, str] = {
    f"flopsreg.{old}": f"flopsreg.{folder}.{old}"
    for folder, olds in {
        "declarations": ("declare", "pattern", "symbols"),
        "formula": ("compile", "runtime", "prefix"),
        "plugins": ("hookspecs", "registry", "checks", "testing"),
        "model": ("examples_index",),
        "engine": (
            "select", "compose", "evaluate", "sweep", "serving", "compare", "utilisation", "parameters", "peaks", "cache",
        ),
        "render": ("notebook", "plot"),
    }.items()
    for old in olds
} | {"flopsreg.latex": "flopsreg.render.tex"}  # renamed: a submodule render.latex would hide render.latex()


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED`; loading one warns and returns the moved module."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} is deprecated and will be removed in 0.3: import {new}", DeprecationWarning, stacklevel=2
        )
        return importlib.import_module(new)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the moved module was imported by :meth:`create_module`."""


def install() -> None:
    """Put :class:`OldPaths` on ``sys.meta_path`` once (idempotent: reloading flopsreg adds no second)."""
    if not any(isinstance(finder, OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(OldPaths())
