"""Entry points read from the ``entry_points.txt`` of the distributions on ``sys.path``, without
importing :mod:`importlib.metadata` (a tenth of a cold start): whether any plugin of a group may
be installed, and flopsreg's own registered objects (the readers behind ``Model.from_*``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["may_declare_entry_points", "own_entry_point"]


_METADATA = re.compile(r".*\.(dist|egg)-info$")


def _entry_point_files(folders: re.Pattern[str] = _METADATA) -> Iterator[tuple[str, str | None]]:
    """(folder name, text of its ``entry_points.txt``) of each ``*.dist-info``/``*.egg-info`` folder
    on ``sys.path`` whose name *folders* matches, in path order; (path entry, None) for an entry
    that is a zip or egg file."""
    for entry in sys.path:
        folder = entry or os.curdir
        try:
            names = os.listdir(folder)
        except NotADirectoryError:  # a zip or an egg file: importlib.metadata reads those
            yield entry, None
            continue
        except OSError:
            continue
        for name in names:
            if folders.match(name):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8", errors="replace") as file:
                        yield name, file.read()
                except OSError:
                    continue


def _other_finder() -> bool:
    """Whether a finder other than the path finder finds distributions (only importlib.metadata knows what)."""
    return any(hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder for finder in sys.meta_path)


def may_declare_entry_points(group: str) -> bool:
    """Whether any distribution on ``sys.path`` may declare entry points of *group*.

    A look at each ``*.dist-info``/``*.egg-info`` folder's ``entry_points.txt``; anything it cannot
    read this way (a zip or egg file on the path, a custom finder) answers True, and
    :mod:`importlib.metadata` then decides. False lets a start skip importing it.
    """
    header = re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]", re.MULTILINE)
    if _other_finder():
        return True
    return any(text is None or header.search(text) for _, text in _entry_point_files())


_OWN = re.compile(r"flopsreg(-[^-]+)?\.(dist|egg)-info$", re.IGNORECASE)


def own_entry_point(group: str, name: str) -> Any:
    """The object flopsreg's own distribution registers as *name* in entry-point *group*, imported;
    None if it registers none. The first flopsreg distribution folder on ``sys.path`` counts, as
    for :mod:`importlib.metadata`, which answers where there is none (flopsreg in a zip) or
    another finder finds distributions."""
    if not _other_finder():
        for _, text in _entry_point_files(_OWN):
            if text is not None:  # (zips and eggs on the path, the standard library's among them, hold no flopsreg)
                return _load(_value(text, group, name))
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        return next((entry.load() for entry in distribution("flopsreg").entry_points.select(group=group, name=name)), None)
    except PackageNotFoundError:
        return None


def _value(text: str, group: str, name: str) -> str | None:
    """``module:attribute`` of *name* under ``[group]`` in the text of an ``entry_points.txt``."""
    section = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[] ")
        elif section == group and line.partition("=")[0].strip() == name:
            return line.partition("=")[2].strip()
    return None


def _load(value: str | None) -> Any:
    """The object ``module:attribute`` names, imported (None for None)."""
    if value is None:
        return None
    module, _, attribute = value.partition(":")
    target: Any = importlib.import_module(module.strip())
    for part in filter(None, attribute.strip().split(".")):
        target = getattr(target, part)
    return target
