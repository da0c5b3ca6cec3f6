"""Writes the manifest of the built-in plugins (:mod:`flopsreg.plugins.manifest`) from the modules themselves.

``python -m flopsreg.plugins.make_manifest --write`` after changing a built-in; ``--check`` exits 1
when the committed manifest (its index and every module's file) differs from the modules
(tests/plugins/test_manifest.py does the same).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import sympy

from flopsreg.declarations.pattern import Pattern, holds_weights_only
from flopsreg.declarations.symbols import SHARED
from flopsreg.formula.exact import tree_of
from flopsreg.formula.named import named
from flopsreg.plugins.loader import PluginLoader, manifest_path
from flopsreg.plugins.manifest import DATA_KINDS, FORMAT, REFRESH, declaration, files, write, written

__all__ = ["build", "main"]


def _tree(expression: Any) -> Any:
    """*expression* as a formula tree by name (:mod:`flopsreg.formula.named`); None stays None."""
    if expression is None:
        return None
    return named(*tree_of(sympy.sympify(expression)))


def _pattern(pattern: Pattern, params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    for param in pattern.params:
        params.setdefault(param.name, declaration(param))
    return {
        "name": pattern.name,
        "slot": pattern.slot,
        "scope": pattern.scope,
        "precedence": pattern.precedence,
        "flags": sorted(pattern.flags),
        "produces": pattern.produces,
        "params": [param.name for param in pattern.params],
        "weights_only": holds_weights_only(pattern),
        "refusal": pattern.refusal,
        "summary": pattern.summary,  # for `flopsreg patterns`, which lists the built-ins from the manifest
        # What composition reads of the pattern, as formula trees by name (flopsreg.engine.cold
        # composes with them), in one JSON string: a start-up parses only the selected patterns'.
        "trees": json.dumps({
            "formula": _tree(pattern.formula),
            "provides": {name: _tree(expr) for name, expr in pattern.provides.items()},
            "weights": _tree(pattern.weights),
            "active_weights": _tree(pattern.active_weights),
            "constraints": [[c.message, _tree(c.condition)] for c in pattern.constraints],
        }, separators=(",", ":")),
    }


def build() -> dict[str, Any]:
    """The manifest of the built-ins as they are: every module of BUILTIN imported and loaded, in its order."""
    loader = PluginLoader(load_entry_points=False, trust_builtins=False)  # from the modules themselves, checked: never from the manifest being replaced
    contributions = loader.contributions()
    if loader.errors:
        raise SystemExit(f"a built-in plugin failed to load: {loader.errors[0]}")
    modules: dict[str, Any] = {}
    params: dict[str, dict[str, Any]] = {}
    for plugin, contribution in contributions.items():  # only the built-ins, in BUILTIN order
        name = plugin.removeprefix("flopsreg.patterns.")
        declared: dict[str, Any] = {}
        for kind, items in contribution.declared.items():
            if not items:
                continue
            if kind in DATA_KINDS:
                declared[kind] = [declaration(item) for item in items]
            elif kind == "hf_readers":
                declared[kind] = [{"name": r.name, "flags": sorted(r.flags)} for r in items]
            else:  # megatron_readers
                declared[kind] = [{"name": r.name, "arguments": list(r.arguments), "precedence": r.precedence} for r in items]
        modules[name] = {"declares": declared, "patterns": [_pattern(p, params) for p in contribution.patterns]}
    shared = sorted(name for name, info in SHARED.items() if info.kind == "dimension")
    return {"format": FORMAT, "refresh": REFRESH, "params": params, "shared_dimensions": shared, "modules": modules}


def main(argv: Sequence[str] | None = None) -> int:
    """``--write`` regenerates the committed manifest; ``--check`` says whether it is fresh."""
    parser = argparse.ArgumentParser(prog="python -m flopsreg.plugins.make_manifest", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the manifest")
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed manifest is stale")
    args = parser.parse_args(argv)
    whole = build()
    if args.write:
        write(whole, manifest_path())
        return 0
    if args.check:
        stale = written(manifest_path()) != files(whole)
        if stale:
            print(f"{manifest_path()} is stale: run {REFRESH}")
        return int(stale)
    print(json.dumps(whole, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
