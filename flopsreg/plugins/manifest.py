"""The manifest of the built-in plugins: what each module of :mod:`flopsreg.patterns` declares, as data.

The loader reads it at start-up (with :mod:`json`, no import of the modules) to answer what the
built-ins declare and to import only the modules a model or a command needs
(:class:`~flopsreg.plugins.loader.PluginLoader`). :mod:`flopsreg.plugins.make_manifest` writes it
by importing every built-in (``python -m flopsreg.plugins.make_manifest --write``), and it is
committed as ``flopsreg/patterns/manifest.json``; tests/plugins/test_manifest.py fails when it is
stale, naming that command.

It is stored in two parts, so that a start-up reads what a model can use, not every family: the
*index* (``manifest.json``: per module its declarations, the flag sets its patterns need, the
flags of its layer patterns and the parameters they declare) and one file per module
(``manifest/<module>.json``: its patterns with their formula trees), read only when one of its
patterns may apply. In memory, the *whole* manifest is the index with each module's ``patterns``
in place (what :func:`split` splits and :func:`load_whole` joins).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

if TYPE_CHECKING:
    from flopsreg.declarations.pattern import Param

__all__ = [
    "DATA_KINDS", "FORMAT", "PATTERNS_FOLDER", "REFRESH", "PatternEntry", "declaration", "files", "load", "load_whole",
    "module_patterns", "params", "patterns_of", "rebuilt", "split", "write", "written",
]

FORMAT = 2
PATTERNS_FOLDER = "manifest"  # beside the index: one <module>.json per built-in
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


def _read(path: str) -> Any:
    """The JSON at *path*, or None when it cannot be read or decoded."""
    try:
        with open(path, "rb") as file:  # bytes: json reads UTF-8 itself, without a text layer (a registry reads every module's file)
            return json.loads(file.read())
    except (OSError, ValueError):
        return None


def load(path: str) -> dict[str, Any] | None:
    """The index of the manifest at *path*, or None when there is none or it is of another format
    (the loader then imports every built-in, as before manifests)."""
    index = _read(path)
    return index if isinstance(index, dict) and index.get("format") == FORMAT else None


def module_patterns(path: str, module: str) -> list[dict[str, Any]] | None:
    """The patterns of built-in *module* (a name of BUILTIN) in the manifest whose index is at
    *path*, or None when its file cannot be read."""
    patterns = _read(os.path.join(os.path.dirname(path), PATTERNS_FOLDER, f"{module}.json"))
    return patterns if isinstance(patterns, list) else None


def load_whole(path: str) -> dict[str, Any] | None:
    """The whole manifest at *path* (every module's patterns read), or None where a part is missing."""
    index = load(path)
    if index is None:
        return None
    for module, entry in index["modules"].items():
        patterns = module_patterns(path, module)
        if patterns is None:
            return None
        entry["patterns"] = patterns
    return index


def _summary(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A module's entry in the index: its declarations and what decides whether its patterns are read."""
    patterns = entry["patterns"]
    return {
        "declares": entry["declares"],
        "selects": sorted({tuple(p["flags"]) for p in patterns}),  # a pattern may apply only where all of one set are set
        "layer_flags": sorted({flag for p in patterns if p["scope"] == "layer" for flag in p["flags"]}),
        "params": sorted({name for p in patterns for name in p["params"]}),
    }


def split(whole: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The whole manifest as its index and each module's patterns."""
    index = {**whole, "modules": {module: _summary(entry) for module, entry in whole["modules"].items()}}
    return index, {module: list(entry["patterns"]) for module, entry in whole["modules"].items()}


def files(whole: Mapping[str, Any]) -> dict[str, str]:
    """The whole manifest as its files spell it, by path relative to the index's folder (stable: a
    regenerated one compares equal)."""
    index, patterns = split(whole)
    texts = {"manifest.json": json.dumps(index, indent=1) + "\n"}
    for module, items in patterns.items():
        texts[f"{PATTERNS_FOLDER}/{module}.json"] = json.dumps(items, indent=1) + "\n"
    return texts


def written(path: str) -> dict[str, str]:
    """The files of the manifest whose index is at *path*, as :func:`files` names them (the
    index and every ``*.json`` of its folder of patterns)."""
    folder = os.path.dirname(path)
    names = ["manifest.json"]
    patterns = os.path.join(folder, PATTERNS_FOLDER)
    if os.path.isdir(patterns):
        names += sorted(f"{PATTERNS_FOLDER}/{name}" for name in os.listdir(patterns) if name.endswith(".json"))
    texts = {}
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as file:
            texts[name] = file.read()
    return texts


def write(whole: Mapping[str, Any], path: str) -> None:
    """Write the whole manifest with its index at *path* (named ``manifest.json``), removing the
    files of modules it no longer lists."""
    folder = os.path.dirname(path)
    texts = files(whole)
    os.makedirs(os.path.join(folder, PATTERNS_FOLDER), exist_ok=True)
    for stale in set(written(path) if os.path.exists(path) else ()) - set(texts):
        os.remove(os.path.join(folder, stale))
    for name, text in texts.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as file:
            file.write(text)


def patterns_of(patterns: Sequence[Mapping[str, Any]]) -> list[PatternEntry]:
    """A module's patterns (as :func:`module_patterns` reads them) as entries."""
    return [
        PatternEntry(p["name"], p["slot"], p["scope"], p["precedence"], frozenset(p["flags"]), p["produces"], frozenset(p["params"]))
        for p in patterns
    ]


def params(manifest: Mapping[str, Any]) -> dict[str, Param]:
    """Every parameter a built-in pattern declares, by name (each built-in once)."""
    from flopsreg.declarations.pattern import Param

    return {name: Param(**data) for name, data in manifest["params"].items()}
