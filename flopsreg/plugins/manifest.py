"""The manifest of the built-in plugins: what each module of :mod:`flopsreg.patterns` declares, as data.

The loader reads it at start-up (with :mod:`json`, no import of the modules) to answer what the
built-ins declare and to import only the modules a model or a command needs
(:class:`~flopsreg.plugins.loader.PluginLoader`). :mod:`flopsreg.plugins.make_manifest` writes it
by importing every built-in (``python -m flopsreg.plugins.make_manifest --write``), and it is
committed as ``flopsreg/patterns/manifest.json``; tests/plugins/test_manifest.py fails when it is
stale, naming that command.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

if TYPE_CHECKING:
    from flopsreg.declarations.pattern import Param

__all__ = ["DATA_KINDS", "FORMAT", "REFRESH", "PatternEntry", "declaration", "load", "params", "patterns_of", "rebuilt"]

FORMAT = 1
REFRESH = "python -m flopsreg.plugins.make_manifest --write"
# The declarations that are plain data, kept whole in the manifest and rebuilt without importing
# their module; the readers (which hold functions) are kept by name, with what is needed to
# choose them (a model_type's flags, the arguments a Megatron-LM reader claims).
# Kind -> the name of its class in flopsreg.declarations (imported where a declaration is rebuilt,
# so that reading the manifest imports no sympy: the cold path of the command line reads it too).
DATA_KINDS: dict[str, str] = {
    "quantities": "Quantity",
    "slots": "Slot",
    "slot_groups": "SlotGroup",
    "group_selectors": "GroupSelector",
    "blocks": "Block",
    "conventions": "Convention",
    "hf_layer_types": "HFLayerType",
}


class PatternEntry(NamedTuple):
    """What the manifest says about one built-in pattern: enough to decide whether a model can
    select it (slot, scope, flags, precedence) and which parameters it uses, without its formulas.
    A named tuple: a start-up reads one per built-in pattern."""

    name: str
    slot: str
    scope: str
    precedence: int
    flags: frozenset[str]
    produces: str
    param_names: frozenset[str]


def _data(value: Any) -> Any:
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, Mapping):
        return {key: _data(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_data(item) for item in value]
    return value


def declaration(item: Any) -> dict[str, Any]:
    """A plain-data declaration as JSON: its init arguments (sets sorted)."""
    return {field.alias: _data(getattr(item, field.name)) for field in attrs.fields(type(item)) if field.init}


def rebuilt(kind: str, data: Mapping[str, Any]) -> Any:
    """The declaration of *kind* that :func:`declaration` wrote as *data*."""
    from flopsreg.declarations import pattern, readers

    return getattr(readers if kind == "hf_layer_types" else pattern, DATA_KINDS[kind])(**data)


def load(path: str) -> dict[str, Any] | None:
    """The manifest at *path*, or None when there is none or it is of another format (the loader
    then imports every built-in, as before manifests)."""
    try:
        with open(path, encoding="utf-8") as file:
            manifest = json.load(file)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def patterns_of(manifest: Mapping[str, Any], module: str) -> list[PatternEntry]:
    """The patterns of built-in *module* (a name of BUILTIN) as the manifest lists them."""
    return [
        PatternEntry(p["name"], p["slot"], p["scope"], p["precedence"], frozenset(p["flags"]), p["produces"], frozenset(p["params"]))
        for p in manifest["modules"][module]["patterns"]
    ]


def params(manifest: Mapping[str, Any]) -> dict[str, Param]:
    """Every parameter a built-in pattern declares, by name (each built-in once)."""
    from flopsreg.declarations.pattern import Param

    return {name: Param(**data) for name, data in manifest["params"].items()}
