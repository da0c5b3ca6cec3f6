"""Old module paths and names, kept for one release (0.2): using one warns ``DeprecationWarning``
and gives what replaced it.

Until 0.1 the core was one flat folder (``flopsreg.compile``, ``flopsreg.registry``, ...); its
modules now live in folders by the path data takes (docs/architecture.md), some renamed for what
they do. :func:`install` puts :class:`OldPaths` on ``sys.meta_path``; ``import flopsreg.compile``
then returns ``flopsreg.formula.exact`` itself (the same module object, so monkeypatching either
works). A module that kept its path but renamed names sets ``__getattr__ = old_names(__name__)``
(:data:`RENAMED`): ``flopsreg.registry.PluginRegistry`` gives ``flopsreg.plugins.loader.PluginLoader``.
Renamed methods and package-level names (``Registry.plan``, ``Result.plan``, ``flopsreg.ModelPlan``,
``flopsreg.Selection``) warn where they are defined.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable, Sequence

# old module path -> new module path (every module that moved or was renamed in 0.2; the others kept their path)
MOVED: dict[str, str] = {
    f"flopsreg.{old}": f"flopsreg.{folder}.{new}"
    for folder, renames in {
        "declarations": {"declare": "readers", "pattern": "pattern", "symbols": "symbols"},
        "formula": {"compile": "exact", "runtime": "tree", "prefix": "cached_prefix"},
        "plugins": {"hookspecs": "hookspecs", "checks": "checks", "testing": "testing"},
        "model": {"examples_index": "examples_index"},
        "engine": {
            name: name
            for name in ("select", "compose", "evaluate", "sweep", "serving", "compare", "utilisation", "parameters", "peaks", "cache")
        },
        "render": {"notebook": "notebook", "plot": "plot"},
    }.items()
    for old, new in renames.items()
} | {
    "flopsreg.latex": "flopsreg.render.tex",  # renamed: a submodule render.latex would hide render.latex()
    "flopsreg.api": "flopsreg.registry",  # the front end is the registry users make
    "flopsreg.engine.images": "flopsreg.engine.media",  # it plans images, videos and audio clips alike
}

# module -> {old name: "new.module:new_name"}: names renamed in 0.2 where the module kept its path
# (flopsreg.registry held the plugin loader until 0.1; it now holds the front end, Registry).
RENAMED: dict[str, dict[str, str]] = {
    "flopsreg.registry": {
        name: f"flopsreg.plugins.loader:{name}"
        for name in ("ENTRY_POINT_GROUP", "builtin_plugins", "default_plugins", "may_declare_entry_points", "plugin_fault")
    } | {"PluginRegistry": "flopsreg.plugins.loader:PluginLoader"},
    "flopsreg.engine.evaluate": {"Evaluator": "flopsreg.engine.evaluate:CompositionCache"},
    # images, videos and audio clips share one path: its names say media (0.2)
    "flopsreg.engine.media": {
        "Images": "flopsreg.engine.media:Media", "plan_images": "flopsreg.engine.media:plan_media",
    },
} | {
    module: {"ImageRule": f"{module}:MediaRule", "ImagePlan": f"{module}:MediaPlan"}  # plugins keep importing flopsreg.plugin
    for module in ("flopsreg.declarations.towers", "flopsreg.plugin")
}


def old_names(module: str) -> Callable[[str], object]:
    """The ``__getattr__`` of *module*: each of its names in :data:`RENAMED` warns and gives the new one."""

    def __getattr__(name: str) -> object:
        target = RENAMED.get(module, {}).get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        path, _, new = target.partition(":")
        warnings.warn(f"{module}.{name} is deprecated and will be removed in 0.3: use {path}.{new}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(path), new)

    return __getattr__


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
