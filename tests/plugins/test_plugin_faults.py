"""A plugin cannot stop or silence flopsreg (issue 19): whatever it raises, at import, in a hook,
while pluggy reads its attributes or while its patterns are checked, skips that plugin by name
(Ctrl-C excepted); a formula nested too deep and a parameter that cannot be a symbol are refused
at load, by name.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import types
import warnings

import pytest
import sympy
from plugins_for_tests import sink_window

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.plugins.checks import MAX_DEPTH, nesting_depth

BUILTIN_PATTERNS = {"full_causal", "sliding_window", "attention_core", "gqa_projection"}
W = flopsreg.Param(name="w", latex="w", meaning="a test width")
SLOT = "extra.deep"


def hooks(**functions) -> types.SimpleNamespace:
    """An in-process plugin object whose attributes are the given hook functions, each marked as a hookimpl."""
    return types.SimpleNamespace(**{name: flopsreg.hookimpl(function) for name, function in functions.items()})


def extra_plugin(pattern: flopsreg.Pattern) -> types.SimpleNamespace:
    """A plugin declaring the slot extra.deep and registering *pattern* in it."""
    return hooks(
        flopsreg_register_slots=lambda: [flopsreg.Slot(name=SLOT, scope="layer", summary="a test slot")],
        flopsreg_register_patterns=lambda: [pattern],
    )


def extra_pattern(formula: sympy.Expr, params: tuple[flopsreg.Param, ...] = (W,), **fields) -> flopsreg.Pattern:
    return flopsreg.Pattern(
        name="deep", slot=SLOT, flags={"deep"}, precedence=10, formula=formula, params=params, summary="t", reference="tests", **fields
    )


def two_layer_model(**params: int) -> flopsreg.Model:
    """One plain layer, then one flagged ``deep`` with *params*: their difference is the extra slot's FLOPs."""
    return flopsreg.Model(
        name="two",
        params={"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 8},
        kinds={"plain": flopsreg.LayerKind(), "deep": flopsreg.LayerKind(flags={"deep"}, params=params)},
        plan=flopsreg.Plan(layers=2, cycle=["plain", "deep"]),
    )


def extra_flops(reg: flopsreg.Registry, model: flopsreg.Model, seq_len: int) -> int:
    plain, deep = reg.evaluate(model, seq_len=seq_len).layers
    return deep.flops - plain.flops


def skipped(*plugins: object) -> tuple[flopsreg.Registry, flopsreg.PluginError]:
    """Built-ins, sink_window and *plugins*, of which exactly one is skipped; sink_window and the built-ins load."""
    with pytest.warns(flopsreg.PluginWarning) as record:
        reg = flopsreg.Registry(plugins=[*plugins, sink_window], load_entry_points=False)
    (error,) = reg.errors
    assert [str(w.message) for w in record] == [str(error)]
    assert BUILTIN_PATTERNS | {"sink_window"} <= {p.name for p in reg.patterns}
    return reg, error


def nested(depth: int) -> sympy.Expr:
    """``(...((s + 1) w + 1) w ...)``: each ``(f + 1) w`` nests two levels; an odd depth adds ``+ 1``."""
    formula = s
    for _ in range(depth // 2):
        formula = (formula + 1) * W.symbol
    return formula + 1 if depth % 2 else formula


def nested_value(depth: int, seq_len: int, w: int) -> int:
    """The value of :func:`nested` by hand: f -> (f + 1) w, depth // 2 times."""
    value = seq_len
    for _ in range(depth // 2):
        value = (value + 1) * w
    return value + 1 if depth % 2 else value


# -- import-time faults ---------------------------------------------------------------------------


class FakeEntryPoint:
    """What importlib.metadata.entry_points() yields, loading a real module file."""

    def __init__(self, name: str, module: str):
        self.name, self.value = name, module
        self.dist = types.SimpleNamespace(name=f"{name}-dist")

    def load(self):
        return importlib.import_module(self.value)


@pytest.mark.parametrize(
    ("name", "body", "raised"),
    [
        ("exits_3", "import sys\nsys.exit(3)", "SystemExit: 3"),
        ("exits_0", "raise SystemExit(0)", "SystemExit: 0"),
        ("recurses", "raise RecursionError", "RecursionError"),
        ("out_of_memory", "raise MemoryError('no room')", "MemoryError: no room"),
    ],
)
def test_a_plugin_failing_at_import_is_skipped_by_name_and_the_next_one_loads(tmp_path, monkeypatch, name, body, raised):
    (tmp_path / f"{name}.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [FakeEntryPoint("quitter", name), FakeEntryPoint("sinks", "plugins_for_tests.sink_window")])
    monkeypatch.setattr("flopsreg.plugins.loader.may_declare_entry_points", lambda group: True)
    with pytest.warns(flopsreg.PluginWarning) as record:
        reg = flopsreg.Registry()
    (error,) = reg.errors
    assert str(error) == f"plugin 'quitter (quitter-dist)': importing {name!r} raised {raised}"
    assert [str(w.message) for w in record] == [str(error)]
    assert reg.plugin_of("sink_window") == "sinks (sinks-dist)"
    assert BUILTIN_PATTERNS <= {p.name for p in reg.patterns}


# -- hooks and attributes -------------------------------------------------------------------------


def _exit_zero():
    raise SystemExit(0)


@pytest.mark.parametrize("hook", ["flopsreg_register_slots", "flopsreg_register_patterns"])
def test_a_hook_raising_system_exit_skips_its_plugin(hook):
    """In the declarations' pass or the patterns' pass: SystemExit(0) would otherwise end every command silently."""
    _, error = skipped(hooks(**{hook: _exit_zero}))
    assert str(error) == f"plugin 'SimpleNamespace': {hook} raised SystemExit: 0"


def test_a_hook_raising_keyboard_interrupt_stops_loading():
    """Ctrl-C during loading must still stop the program."""

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        flopsreg.Registry(plugins=[hooks(flopsreg_register_patterns=interrupted)], load_entry_points=False)


class Unreadable:
    """Every attribute access raises: dir() and pluggy's look for hook markers fail."""

    def __getattribute__(self, name):
        raise RuntimeError(f"no attribute {name} for you")


class RaisingProperty:
    """A property named like a hook, whose read raises (flopsreg reads it to check it is decorated;
    pluggy 1.7 and later look at attributes statically and never run a property)."""

    @property
    def flopsreg_register_patterns(self):
        raise LookupError("boom")


def test_a_plugin_whose_attribute_access_raises_is_skipped():
    _, error = skipped(Unreadable())
    assert str(error) == "plugin 'Unreadable': reading its attributes raised RuntimeError: no attribute __dict__ for you"
    _, error = skipped(RaisingProperty())
    assert str(error) == "plugin 'RaisingProperty': reading its attributes raised LookupError: boom"


class FailsOnSecondListing:
    """Its hook reads fine; listing its attributes raises the second time: flopsreg's check lists
    them first, pluggy lists them again while it registers the plugin (every pluggy version does)."""

    listings = 0

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [sink_window.SINK_WINDOW]

    def __dir__(self):
        FailsOnSecondListing.listings += 1
        if FailsOnSecondListing.listings > 1:
            raise LookupError("changed my mind")
        return [*super().__dir__()]


def test_a_plugin_failing_while_pluggy_registers_it_leaves_no_hook_behind():
    reg, error = skipped(FailsOnSecondListing())
    assert str(error) == "plugin 'FailsOnSecondListing': registering its hooks raised LookupError: changed my mind"
    assert reg.plugin_of("sink_window") == "plugins_for_tests.sink_window"  # not the half-registered plugin's
    assert not reg._pm.has_plugin("FailsOnSecondListing")


def test_a_fault_in_the_load_time_checks_skips_the_plugin():
    """A formula whose reading raises (a sympy function of the plugin's own) fails the load-time checks."""

    class exploding(sympy.Function):  # noqa: N801 - sympy's naming
        @property
        def is_Float(self):  # asked when the formula is checked for floats and compiled
            raise SystemExit(4)

    _, error = skipped(extra_plugin(extra_pattern(s * exploding(W.symbol))))
    assert str(error) == "plugin 'SimpleNamespace': checking its patterns raised SystemExit: 4"


# -- formula depth --------------------------------------------------------------------------------


def test_nesting_depth_of_a_deep_formula_is_measured_without_recursion():
    assert nesting_depth(s) == 0
    assert nesting_depth(s + 1) == 1
    assert nesting_depth((s + 1) * W.symbol) == 2
    assert nesting_depth(nested(3000)) == 3000  # RecursionError for a recursive walk


def test_a_formula_nested_3000_deep_is_refused_naming_plugin_pattern_depth_and_cap():
    _, error = skipped(extra_plugin(extra_pattern(nested(3000))))
    assert str(error) == (
        f"plugin 'SimpleNamespace': pattern 'deep': formula nests 3000 levels deep, more than the {MAX_DEPTH} flopsreg "
        "accepts; write it flatter (name repeated parts as quantities, or sum terms)"
    )


def test_deep_weights_and_constraints_are_refused_too():
    deep = nested(MAX_DEPTH + 1)
    _, error = skipped(extra_plugin(extra_pattern(s * W.symbol, weights=deep)))
    assert f"pattern 'deep': weights nests {MAX_DEPTH + 1} levels deep" in str(error)
    condition = flopsreg.Constraint(message="deep enough", condition=W.symbol <= deep)  # the comparison adds a level
    _, error = skipped(extra_plugin(extra_pattern(s * W.symbol, constraints=(condition,))))
    assert f"pattern 'deep': constraint 'deep enough' nests {MAX_DEPTH + 2} levels deep" in str(error)


def test_a_formula_at_exactly_the_cap_loads_compiles_and_evaluates():
    formula = nested(MAX_DEPTH)
    assert nesting_depth(formula) == MAX_DEPTH
    reg = flopsreg.Registry(plugins=[extra_plugin(extra_pattern(formula))], load_entry_points=False)
    assert reg.errors == ()
    seq_len, w = 10, 2
    assert extra_flops(reg, two_layer_model(w=w), seq_len) == 2 ** (MAX_DEPTH // 2) * (seq_len + 2) - 2
    assert nested_value(MAX_DEPTH, seq_len, w) == 2 ** (MAX_DEPTH // 2) * (seq_len + 2) - 2  # the test's own oracle


def test_the_cap_leaves_head_room_over_the_deepest_builtin():
    reg = flopsreg.Registry(load_entry_points=False)
    deepest = max(nesting_depth(e) for p in reg.patterns for e in (p.formula, p.weights, *p.provides.values()))
    assert 4 * deepest <= MAX_DEPTH


# -- parameter names ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["1x", "a b", "", "_exdiv", "Width"])
def test_a_parameter_name_that_cannot_be_a_symbol_is_refused_by_name(name):
    """Param refuses it where the plugin builds it: the hook's PatternError names the parameter.

    ``_exdiv`` is refused too: names start with a letter, so none can be a helper of the generated code.
    """

    def build():
        return [extra_pattern(s, params=(flopsreg.Param(name=name, latex="x", meaning="t"),))]

    _, error = skipped(hooks(flopsreg_register_patterns=build))
    assert f"flopsreg_register_patterns raised PatternError: param: name = {name!r}: expected a lower_snake_case name" in str(error)


@pytest.mark.parametrize("name", ["1x", "a b"])
def test_a_parameter_name_forced_past_param_is_refused_naming_plugin_pattern_and_parameter(name):
    param = flopsreg.Param(name="x", latex="x", meaning="t")
    pattern = extra_pattern(s * param.symbol, params=(param,))
    object.__setattr__(param, "name", name)  # as a plugin could, past the frozen class's validators
    _, error = skipped(extra_plugin(pattern))
    assert str(error) == (
        f"plugin 'SimpleNamespace': pattern 'deep' declares an invalid parameter: "
        f"param: name = {name!r}: expected a lower_snake_case name"
    )


@pytest.mark.parametrize("name", ["lambda", "min", "math", "class"])
def test_a_parameter_named_like_a_keyword_or_builtin_loads_and_evaluates(name):
    """(p + s) * min(p, s) + p // 3: uses Python's min, // and the parameter by its name."""
    param = flopsreg.Param(name=name, latex="p", meaning="a parameter named like Python's own")
    p = param.symbol
    pattern = extra_pattern((p + s) * sympy.Min(p, s) + sympy.floor(p / 3), params=(param,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", flopsreg.PluginWarning)
        reg = flopsreg.Registry(plugins=[extra_plugin(pattern)], load_entry_points=False)
    assert reg.errors == ()
    assert extra_flops(reg, two_layer_model(**{name: 7}), 5) == (7 + 5) * 5 + 2


# -- the command line -----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_cli_with_a_plugin_calling_sys_exit_at_import_prints_the_total_and_one_warning(tmp_path):
    """An installed plugin (a dist-info declaring the flopsreg entry point group) that exits at import."""
    (tmp_path / "exiting_plugin.py").write_text("import sys\nsys.exit(3)\n")
    info = tmp_path / "exiting_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [flopsreg]
        exiting = exiting_plugin
        """))
    env = {key: value for key, value in os.environ.items() if key != "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *filter(None, [env.get("PYTHONPATH")])])
    argv = [sys.executable, "-m", "flopsreg", "eval", "llama-3-8b", "--seq-len", "4096", "--no-cache"]
    broken = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    clean = subprocess.run(argv, capture_output=True, text=True, env={**env, "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD": "1"}, timeout=120)
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr
    assert broken.returncode == 0, broken.stderr
    assert broken.stdout == clean.stdout
    assert broken.stderr == "flopsreg: warning: plugin 'exiting (exiting-plugin)': importing 'exiting_plugin' raised SystemExit: 3\n"
