"""Find bundled example model files by name (the file stem, e.g. ``gemma-3-4b``)."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["example_names", "example_path"]


def _files() -> dict[str, Traversable]:
    return {f.name.removesuffix(".toml"): f for f in files("flopsreg.examples").iterdir() if f.name.endswith(".toml")}


def example_names() -> list[str]:
    """Names of every bundled example, sorted."""
    return sorted(_files())


def example_path(name: str) -> Traversable | None:
    """The bundled model file called *name*, or None."""
    return _files().get(name.removesuffix(".toml"))
