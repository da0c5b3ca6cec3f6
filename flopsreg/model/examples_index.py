"""Find bundled example model files by name (the file stem, e.g. ``gemma-3-4b``)."""

from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["example_names", "example_path"]


def _files() -> dict[str, Path]:
    # The examples are plain files of an installed package; importlib.resources would cost
    # more start-up time than the whole lookup.
    folder = Path(importlib.import_module("flopsreg.examples").__file__).parent
    return {f.name.removesuffix(".toml"): f for f in folder.iterdir() if f.name.endswith(".toml")}


def example_names() -> list[str]:
    """Names of every bundled example, sorted."""
    return sorted(_files())


def example_path(name: str) -> Path | None:
    """The bundled model file called *name*, or None."""
    return _files().get(name.removesuffix(".toml"))
