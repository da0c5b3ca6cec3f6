"""The built-in plugins, imported with sympy's evaluation off (as every registry imports them,
for start-up time), declare exactly what they declare when imported with evaluation on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sympy

from flopsreg.declarations.pattern import canonical

# Run in a fresh interpreter, so that no test has imported a built-in module before: prints every
# declaration of every built-in module as JSON, sympy expressions as srepr.
_DUMP = r"""
import importlib, json, pkgutil, sys, types
import attrs, sympy
import flopsreg.patterns
from flopsreg.plugins import hookspecs
from flopsreg.declarations.pattern import Constraint, Pattern, canonical
from flopsreg.plugins.loader import builtin_plugins

fields = [a for a in attrs.fields(Pattern) if a.init]  # what a plugin declares

def show(value):
    if isinstance(value, Pattern):
        return {
            **{a.alias: show(getattr(value, a.alias)) for a in fields},
            "raw": {a.alias: show(getattr(value, a.name)) for a in fields if a.name.startswith("_")},
            "raw canonical": {
                a.alias: show({k: canonical(v) for k, v in getattr(value, a.name).items()} if a.alias == "provides" else canonical(getattr(value, a.name)))
                for a in fields if a.name.startswith("_")
            },
        }
    if isinstance(value, Constraint):
        return {"message": value.message, "condition": show(value.condition), "raw": show(value._condition)}
    if attrs.has(type(value)):
        return {type(value).__name__: {a.name: show(getattr(value, a.name)) for a in attrs.fields(type(value)) if a.init}}
    if isinstance(value, sympy.Basic):
        return sympy.srepr(value)
    if isinstance(value, dict):
        return {str(k): show(v) for k, v in value.items()}
    if isinstance(value, (frozenset, set)):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [show(v) for v in value]
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    return value

if sys.argv[1] == "off":
    modules = builtin_plugins()
else:
    found = pkgutil.walk_packages(flopsreg.patterns.__path__, "flopsreg.patterns.")  # every folder, not BUILTIN
    names = sorted(m.name for m in found if not m.ispkg and not m.name.rpartition(".")[2].startswith("_"))
    modules = [importlib.import_module(name) for name in names]
hooks = sorted(name for name in dir(hookspecs) if name.startswith("flopsreg_register_"))
print(json.dumps({m.__name__: {h: show(getattr(m, h)()) for h in hooks if hasattr(m, h)} for m in modules}))
"""


def _declarations(evaluation: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", _DUMP, evaluation],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return json.loads(run.stdout)


@pytest.mark.slow
def test_builtins_imported_with_evaluation_off_declare_the_same_as_with_it_on():
    off, on = _declarations("off"), _declarations("on")
    assert off.keys() == on.keys() and len(on) > 90
    patterns = unevaluated = 0
    for module in on:
        for hook, declared in on[module].items():
            for lazy, eager in zip(off[module][hook], declared, strict=True):
                if "raw" in eager:  # a Pattern: what it reads, canonical, equals the eager build
                    patterns += 1
                    unevaluated += lazy["raw"] != eager["raw"]
                    assert lazy | {"raw": None, "raw canonical": None} == eager | {"raw": None, "raw canonical": None}, (module, eager["name"])
                    # canonical() leaves an expression built with evaluation on as it is
                    assert eager["raw canonical"] == eager["raw"], (module, eager["name"])
                else:
                    assert lazy == eager, (module, hook)
    assert patterns > 250  # 277 since the mixers no longer empty the attention slots with their own patterns
    assert unevaluated > 100  # the import with evaluation off did build most formulas unevaluated


def test_canonical_rebuilds_an_unevaluated_expression_as_sympy_builds_it():
    s, w = sympy.symbols("s w", integer=True, positive=True)
    with sympy.evaluate(False):
        lazy = sympy.Piecewise((s * (s + 1) / 2, s <= w), (w * (w + 1) / 2 + (s - w) * w, True)) + 2 * sympy.floor(4 * s / 2)
    eager = sympy.Piecewise((s * (s + 1) / 2, s <= w), (w * (w + 1) / 2 + (s - w) * w, True)) + 2 * sympy.floor(4 * s / 2)
    assert sympy.srepr(lazy) != sympy.srepr(eager)  # evaluation off did leave work undone
    assert sympy.srepr(canonical(lazy)) == sympy.srepr(eager)
    assert canonical(7) == 7 and canonical(None) is None


@pytest.mark.slow
def test_with_another_thread_running_the_builtins_are_imported_with_evaluation_on():
    """sympy's cache of built expressions is shared by threads: no unevaluated one may reach another."""
    code = r"""
import threading, sympy
from flopsreg.plugins.loader import builtin_plugins
stop = threading.Event()
worker = threading.Thread(target=stop.wait)
worker.start()
modules = builtin_plugins()
stop.set()
patterns = [p for m in modules if hasattr(m, "flopsreg_register_patterns") for p in m.flopsreg_register_patterns()]
print(len(patterns), sum(sympy.srepr(p._formula) != sympy.srepr(p.formula) for p in patterns))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    patterns, unevaluated = map(int, run.stdout.split())
    assert patterns > 250 and unevaluated == 0


def test_this_suite_runs_against_builtins_imported_as_registries_import_them(registry):
    """conftest imports the built-ins first, with evaluation off, as users' registries do."""
    builtin = [p for p in registry.patterns if registry.plugin_of(p).startswith("flopsreg.patterns.")]
    assert sum(sympy.srepr(p._formula) != sympy.srepr(p.formula) for p in builtin) > 100


def test_a_pattern_reads_canonical_where_sympy_evaluates_and_as_built_where_it_does_not():
    from flopsreg import Pattern
    from flopsreg.declarations.symbols import h, s

    with sympy.evaluate(False):
        built = 2 * s * h + 2 * s * h
        pattern = Pattern(name="p", slot="mlp", precedence=1, formula=built, weights=h * 2 * 2, summary="x", reference="y")
        assert sympy.srepr(pattern.formula) == sympy.srepr(built)  # a module importing builds on it as built
    assert sympy.srepr(pattern.formula) == sympy.srepr(4 * s * h) and sympy.srepr(pattern.weights) == sympy.srepr(4 * h)
    assert pattern.formula is pattern.formula  # made canonical once
