"""Loading and validating pattern plugins: built-ins, third-party plugins, broken plugins.

A registry must list every built-in pattern with the slot, flags and precedence the docs give;
accept a well-formed third-party plugin (object or module) and let it take effect only where
its flags are set; and skip a broken plugin as a whole, naming it in ``reg.errors`` and in a
``PluginWarning``, while everything else still loads.
"""

from __future__ import annotations

import re
import types
import warnings

import pytest
import sympy
from oracles import attention_layer_flops, causal_mask, pairs, sliding_window_mask
from plugins_for_tests import sink_window

import flopsreg
from flopsreg.declarations.symbols import h, integer_symbol, s
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.sliding_window import WINDOW

# (name, slot, flags, precedence, plugin module) as documented in the brief and docs.
BUILTINS = [
    ("full_causal", "attention.mask", set(), 10),
    ("sliding_window", "attention.mask", {"sliding_window"}, 20),
    ("chunked", "attention.mask", {"chunked"}, 30),
    ("query_projection", "attention.query", set(), 10),
    ("low_rank_query", "attention.query", {"q_lora"}, 20),
    ("gqa_projection", "attention.projection", set(), 10),
    ("mla_projection", "attention.projection", {"mla"}, 20),
    ("attention_core", "attention.core", set(), 10),
    ("output_projection", "attention.output", set(), 10),
]
BUILTIN_NAMES = {name for name, *_ in BUILTINS}


def sink_mask(s: int, window: int, sinks: int) -> list[list[bool]]:
    """Causal; key k visible to query q iff it is in q's window or among the first *sinks*."""
    return [[k <= q and (q - k < window or k < sinks) for k in range(s)] for q in range(s)]


def module_plugin(name: str, **attributes: object) -> types.ModuleType:
    """A plugin module built in memory, as an installed package would provide it."""
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def hook_returning(*patterns: flopsreg.Pattern):
    @flopsreg.hookimpl
    def flopsreg_register_patterns():
        return list(patterns)

    return flopsreg_register_patterns


def slots_for(*patterns: flopsreg.Pattern):
    """A flopsreg_register_slots hook declaring the slot of each of *patterns*."""

    @flopsreg.hookimpl
    def flopsreg_register_slots():
        return [flopsreg.Slot(name=p.slot, scope=p.scope, summary="t") for p in patterns]

    return flopsreg_register_slots


def mask_pattern(name: str, **overrides: object) -> flopsreg.Pattern:
    """A small valid attention.mask pattern; *overrides* change any field."""
    fields = dict(
        name=name,
        slot="attention.mask",
        flags={name},
        precedence=40,
        produces="pairs",
        formula=s * (s + 1) / 2,
        summary="a test pattern",
        reference="tests",
    )
    fields.update(overrides)
    return flopsreg.Pattern(**fields)


def load_quietly(*plugins: object) -> flopsreg.Registry:
    """A registry of built-ins and *plugins* that must load without any PluginWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", flopsreg.PluginWarning)
        return flopsreg.Registry(plugins=plugins, load_entry_points=False)


def gqa_params() -> dict[str, int]:
    return {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 8}


# -- built-ins -----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [flopsreg.Registry.default, lambda: flopsreg.Registry(load_entry_points=False)])
@pytest.mark.parametrize(("name", "slot", "flags", "precedence"), BUILTINS)
def test_builtin_pattern_has_documented_slot_flags_precedence_and_module(make, name, slot, flags, precedence):
    """Every documented built-in is registered, as documented, by its own module in flopsreg.patterns."""
    reg = make()
    pattern = reg.pattern(name)
    assert (pattern.slot, set(pattern.flags), pattern.precedence) == (slot, flags, precedence)
    assert reg.plugin_of(pattern) == f"flopsreg.patterns.{name}"
    assert reg.plugin_of(name) == f"flopsreg.patterns.{name}"


def test_builtins_load_without_errors_and_are_ordered_by_slot_then_precedence(registry):
    """reg.patterns is sorted by slot, highest precedence first, so explanations read top-down."""
    assert registry.errors == ()
    names = [p.name for p in registry.patterns]
    assert BUILTIN_NAMES <= set(names)
    assert names.index("chunked") < names.index("sliding_window") < names.index("full_causal")
    assert names.index("mla_projection") < names.index("gqa_projection")
    assert names.index("low_rank_query") < names.index("query_projection")
    keys = [(p.slot, -p.precedence, p.name) for p in registry.patterns]
    assert keys == sorted(keys)


def test_builtin_params_and_flags_are_declared(registry):
    """Parameters are declared once with their minimum; the flag set is the union of pattern flags."""
    for name in ("window", "chunk", "kv_heads", "head_dim", "q_lora_rank", "kv_lora_rank", "v_head_dim"):
        assert registry.params[name].minimum == 1
    assert {"sliding_window", "chunked", "mla", "q_lora"} <= registry.flags
    assert registry.params["window"] is WINDOW


def test_unknown_pattern_lookup_suggests_closest_name(registry):
    with pytest.raises(KeyError, match="did you mean 'sliding_window'"):
        registry.pattern("sliding_windows")


# -- a third-party plugin: sliding window with attention sinks ----------------------------------


@pytest.mark.parametrize("seq_len", range(1, 41))
def test_sink_window_closed_form_matches_brute_force_mask(seq_len):
    """The plugin's Piecewise, compiled exactly as the engine does, equals the counted mask."""
    formula = compile_exact(sink_window.SINK_WINDOW.formula)
    for window in range(1, seq_len + 3):
        for sinks in range(0, 6):
            expected = pairs(sink_mask(seq_len, window, sinks))
            got = formula({"seq_len": seq_len, "window": window, "sinks": sinks})
            assert got == expected, (seq_len, window, sinks)


def test_sink_mask_oracle_reduces_to_sliding_window_without_sinks():
    """Sanity of the test's own oracle: zero sinks is the plain sliding window."""
    for s_ in range(1, 15):
        for w in range(1, s_ + 2):
            assert sink_mask(s_, w, 0) == sliding_window_mask(s_, w)


def sink_model() -> flopsreg.Model:
    return flopsreg.Model(
        name="sinky",
        params=gqa_params(),
        kinds={
            "sink": flopsreg.LayerKind(flags={"sliding_window", "sinks"}, params={"window": 4, "sinks": 2}),
            "local": flopsreg.LayerKind(flags={"sliding_window"}, params={"window": 4}),
            "global": flopsreg.LayerKind(),
        },
        plan=flopsreg.Plan(layers=6, cycle=["sink", "local", "global"]),
    )


@pytest.mark.parametrize("plugin", [sink_window, types.SimpleNamespace(flopsreg_register_patterns=sink_window.flopsreg_register_patterns)], ids=["module", "object"])
def test_sink_window_plugin_applies_only_where_both_flags_are_set(plugin):
    """sink_window (25) beats sliding_window (20) only on layers flagged sliding_window and sinks."""
    reg = load_quietly(plugin)
    assert reg.errors == ()
    assert reg.pattern("sink_window").precedence == 25
    assert "sinks" in reg.flags and reg.params["sinks"].minimum == 0
    plan = reg.select(sink_model())
    assert plan.kind("sink").patterns["attention.mask"] == "sink_window"
    assert plan.kind("local").patterns["attention.mask"] == "sliding_window"
    assert plan.kind("global").patterns["attention.mask"] == "full_causal"
    assert "sink_window 25 > sliding_window 20 > full_causal 10" in plan.explain()
    assert "sliding_window 20 > full_causal 10" in plan.explain().split("(kind 'local')")[1]
    assert plan.warnings == ()


def test_sink_window_plugin_flops_match_hand_arithmetic():
    """Each layer's FLOPs use its own mask: sinks, plain window or full causal."""
    reg = load_quietly(sink_window)
    seq = 20
    dims = dict(s=seq, hidden=64, heads=4, kv_heads=2, head_dim=8)
    sink = attention_layer_flops(**dims, attended_pairs=pairs(sink_mask(seq, 4, 2)))
    local = attention_layer_flops(**dims, attended_pairs=pairs(sliding_window_mask(seq, 4)))
    full = attention_layer_flops(**dims, attended_pairs=pairs(causal_mask(seq)))
    result = reg.evaluate(sink_model(), seq_len=seq)
    assert [layer.flops for layer in result.layers] == [sink, local, full] * 2
    assert result.forward == 2 * (sink + local + full)


def test_sinks_flag_alone_keeps_full_causal_and_warns_about_the_unused_sinks_param():
    """Selection needs all of a pattern's flags; a sinks value without the window flag is unused."""
    reg = load_quietly(sink_window)
    model = flopsreg.Model(
        name="half-flagged",
        params=gqa_params(),
        kinds={"k": flopsreg.LayerKind(flags={"sinks"}, params={"sinks": 3})},
        plan=flopsreg.Plan.uniform("k", 2),
    )
    plan = reg.select(model)
    assert plan.kind("k").patterns["attention.mask"] == "full_causal"
    (warning,) = plan.warnings
    assert "kinds.k.params.sinks = 3" in warning
    assert "sink_window (flags: sinks, sliding_window)" in warning


def test_sink_window_with_zero_sinks_equals_sliding_window():
    """Param(minimum=0) admits sinks = 0 even though Param symbols are positive integers."""
    reg = load_quietly(sink_window)
    model = flopsreg.Model.uniform("z", layers=1, flags={"sliding_window", "sinks"}, window=5, sinks=0, **gqa_params())
    dims = dict(s=17, hidden=64, heads=4, kv_heads=2, head_dim=8)
    assert reg.evaluate(model, seq_len=17).forward == attention_layer_flops(
        **dims, attended_pairs=pairs(sliding_window_mask(17, 5))
    )


def test_sinks_below_minimum_is_a_model_error():
    reg = load_quietly(sink_window)
    model = flopsreg.Model.uniform("neg", layers=1, flags={"sliding_window", "sinks"}, window=5, sinks=-1, **gqa_params())
    with pytest.raises(flopsreg.ModelError, match=r"params\.sinks = -1: expected an integer >= 0"):
        reg.select(model)


# -- broken plugins -------------------------------------------------------------------------------


class _DefaultArgPlugin:
    @flopsreg.hookimpl
    def flopsreg_register_patterns(self, verbose=False):
        return [mask_pattern("default_arg")]


def _raise():
    raise RuntimeError("boom while building patterns")


def _hook(function):
    return flopsreg.hookimpl(function)


BROKEN = [
    pytest.param(
        lambda: module_plugin("dup_builtin", flopsreg_register_patterns=hook_returning(mask_pattern("full_causal"))),
        "dup_builtin",
        r"pattern name 'full_causal' is already registered by plugin 'flopsreg\.patterns\.full_causal'",
        id="duplicates-builtin-name",
    ),
    pytest.param(
        lambda: module_plugin("copycat", flopsreg_register_patterns=hook_returning(mask_pattern("sink_window"))),
        "copycat",
        r"plugin 'copycat'.*'sink_window' is already registered by plugin 'plugins_for_tests\.sink_window'",
        id="duplicates-third-party-name",
    ),
    pytest.param(
        lambda: module_plugin(
            "typo_symbol",
            flopsreg_register_patterns=hook_returning(
                mask_pattern("typo_symbol", params=(WINDOW,), formula=s * integer_symbol("windw"))
            ),
        ),
        "typo_symbol",
        r"symbol 'windw' is neither a declared symbol .* nor a parameter of the pattern \(window\); did you mean 'window'\?",
        id="undeclared-symbol",
    ),
    pytest.param(
        lambda: module_plugin(
            "plain_symbol",
            flopsreg_register_patterns=hook_returning(
                mask_pattern("plain_symbol", params=(WINDOW,), formula=s * sympy.Symbol("window"))
            ),
        ),
        "plain_symbol",
        r"symbol 'window' was created with other assumptions",
        id="symbol-without-assumptions",
    ),
    pytest.param(_DefaultArgPlugin, "_DefaultArgPlugin", r"default-valued parameters \['verbose'\]", id="default-arg"),
    pytest.param(
        lambda: module_plugin("misspelt", flopsreg_register_pattern=hook_returning(mask_pattern("misspelt"))),
        "misspelt",
        r"unknown hook 'flopsreg_register_pattern'; did you mean 'flopsreg_register_patterns'\?",
        id="misspelt-hook",
    ),
    pytest.param(
        lambda: module_plugin("undecorated", flopsreg_register_patterns=lambda: [mask_pattern("undecorated")]),
        "undecorated",
        r"'flopsreg_register_patterns' is not decorated with @flopsreg\.hookimpl",
        id="undecorated-hook",
    ),
    pytest.param(
        lambda: module_plugin("raising", flopsreg_register_patterns=_hook(_raise)),
        "raising",
        r"flopsreg_register_patterns raised RuntimeError: boom while building patterns",
        id="hook-raises",
    ),
    pytest.param(
        lambda: module_plugin("not_a_list", flopsreg_register_patterns=_hook(lambda: mask_pattern("bare"))),
        "not_a_list",
        r"must return a list of Pattern, got Pattern",
        id="returns-non-list",
    ),
    pytest.param(
        lambda: module_plugin("returns_none", flopsreg_register_patterns=_hook(lambda: None)),
        "returns_none",
        r"must return a list of Pattern, got NoneType",
        id="returns-none",
    ),
    pytest.param(
        lambda: module_plugin("string_items", flopsreg_register_patterns=_hook(lambda: ["full_causal"])),
        "string_items",
        r"returned 'full_causal', which is not a flopsreg\.Pattern",
        id="returns-non-pattern-items",
    ),
    pytest.param(
        lambda: module_plugin(
            "other_window",
            flopsreg_register_patterns=hook_returning(
                mask_pattern(
                    "other_window",
                    params=(flopsreg.Param(name="window", latex="w", meaning="half the window"),),
                    formula=s * flopsreg.Param(name="window", latex="w", meaning="half the window").symbol,
                )
            ),
        ),
        "other_window",
        r"declares parameter 'window' differently from pattern '(sliding_window|sink_window|megatron_bridge_sliding)'",
        id="param-declared-differently",
    ),
]


@pytest.mark.parametrize(("make_plugin", "plugin_name", "message"), BROKEN)
def test_broken_plugin_is_skipped_by_name_while_others_load(make_plugin, plugin_name, message):
    """The broken plugin is named in reg.errors and a PluginWarning; built-ins and sink_window load."""
    plugin = make_plugin()
    with pytest.warns(flopsreg.PluginWarning) as record:
        reg = flopsreg.Registry(plugins=[sink_window, plugin], load_entry_points=False)
    (error,) = reg.errors
    assert isinstance(error, flopsreg.PluginError)
    assert error.plugin == plugin_name
    assert str(error).startswith(f"plugin {plugin_name!r}: ")
    assert [str(w.message) for w in record] == [str(error)]
    assert re.search(message, str(error)), str(error)
    names = {p.name for p in reg.patterns}
    assert BUILTIN_NAMES | {"sink_window"} <= names
    assert reg.plugin_of("sink_window") == "plugins_for_tests.sink_window"
    assert reg.plugin_of("full_causal") == "flopsreg.patterns.full_causal"
    own = {p.name for p in reg.patterns if reg.plugin_of(p) == plugin_name}
    assert own == set(), "nothing of a skipped plugin may stay registered"


def test_plugin_duplicating_its_own_pattern_name_is_skipped():
    plugin = module_plugin("twice", flopsreg_register_patterns=hook_returning(mask_pattern("twice"), mask_pattern("twice")))
    with pytest.warns(flopsreg.PluginWarning, match="'twice' is already registered"):
        reg = flopsreg.Registry(plugins=[plugin], load_entry_points=False)
    assert [e.plugin for e in reg.errors] == ["twice"]
    assert "twice" not in {p.name for p in reg.patterns}


def test_skipped_plugin_leaves_no_params_behind():
    """A plugin rejected after its params were staged must not leave them declared."""
    param = flopsreg.Param(name="ghost", latex="G", meaning="never registered")
    bad = mask_pattern("full_causal", params=(param,), formula=s * param.symbol)
    with pytest.warns(flopsreg.PluginWarning):
        reg = flopsreg.Registry(plugins=[module_plugin("ghostly", flopsreg_register_patterns=hook_returning(bad))], load_entry_points=False)
    assert "ghost" not in reg.params


# -- entry points -------------------------------------------------------------------------------


class FakeEntryPoint:
    """What importlib.metadata.entry_points() yields: .name, .value, .dist.name and .load()."""

    def __init__(self, name: str, value: str, dist: str, load):
        self.name, self.value, self._load = name, value, load
        self.dist = types.SimpleNamespace(name=dist)

    def load(self):
        return self._load()


def _failing_import():
    raise ImportError("No module named 'sinkz'")


def _fake_entry_points(monkeypatch, *entry_points, calls=None):
    def entry_points_(**kwargs):
        if calls is not None:
            calls.append(kwargs)
        assert kwargs == {"group": "flopsreg"}
        return list(entry_points)

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points_)
    monkeypatch.setattr("flopsreg.plugins.loader.may_declare_entry_points", lambda group: True)  # as if installed


def test_entry_point_failing_to_import_is_reported_and_the_next_one_loads(monkeypatch):
    monkeypatch.delenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    _fake_entry_points(
        monkeypatch,
        FakeEntryPoint("broken", "sinkz:plugin", "broken-dist", _failing_import),
        FakeEntryPoint("sinks", "plugins_for_tests.sink_window", "flopsreg-sinks", lambda: sink_window),
    )
    with pytest.warns(flopsreg.PluginWarning, match="broken") as record:
        reg = flopsreg.Registry.default()
    (error,) = reg.errors
    assert error.plugin == "broken (broken-dist)"
    assert "importing 'sinkz:plugin' raised ImportError: No module named 'sinkz'" in str(error)
    assert len(record) == 1
    assert reg.plugin_of("sink_window") == "sinks (flopsreg-sinks)"
    assert BUILTIN_NAMES <= {p.name for p in reg.patterns}


def test_entry_point_plugin_that_fails_validation_is_named_by_entry_point(monkeypatch):
    monkeypatch.delenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    bad = module_plugin("bad_ep", flopsreg_register_patterns=_hook(_raise))
    _fake_entry_points(monkeypatch, FakeEntryPoint("bad", "bad_ep", "bad-dist", lambda: bad))
    with pytest.warns(flopsreg.PluginWarning, match=r"plugin 'bad \(bad-dist\)'.*RuntimeError"):
        reg = flopsreg.Registry()
    assert [e.plugin for e in reg.errors] == ["bad (bad-dist)"]


def test_autoload_env_var_skips_entry_points(monkeypatch):
    calls: list[dict] = []
    _fake_entry_points(
        monkeypatch, FakeEntryPoint("broken", "sinkz:plugin", "broken-dist", _failing_import), calls=calls
    )
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = load_quietly()
    reg_default = flopsreg.Registry.default()
    assert calls == []
    assert reg.errors == () and reg_default.errors == ()
    assert "sink_window" not in {p.name for p in reg_default.patterns}


def test_load_entry_points_false_skips_entry_points(monkeypatch):
    monkeypatch.delenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    calls: list[dict] = []
    _fake_entry_points(monkeypatch, calls=calls)
    flopsreg.Registry(load_entry_points=False)
    assert calls == []
    flopsreg.Registry()
    assert calls == [{"group": "flopsreg"}]


# -- selection errors that come from plugins ------------------------------------------------------


def _tie_plugin(module_name: str, pattern_name: str, flag: str) -> types.ModuleType:
    return module_plugin(module_name, flopsreg_register_patterns=hook_returning(mask_pattern(pattern_name, flags={flag}, precedence=40)))


def load_skipping(*plugins: object) -> tuple[flopsreg.Registry, flopsreg.PluginError]:
    """A registry of built-ins and *plugins* in which exactly one plugin is skipped, with its error."""
    with pytest.warns(flopsreg.PluginWarning) as record:
        reg = flopsreg.Registry(plugins=plugins, load_entry_points=False)
    (error,) = reg.errors
    assert [str(w.message) for w in record] == [str(error)]
    return reg, error


def test_precedence_tie_skips_the_later_plugin_naming_both_patterns_and_plugins():
    """mask_a and mask_b (both 40) would both apply where flag_a and flag_b are set: caught at load."""
    reg, error = load_skipping(_tie_plugin("plugin_a", "mask_a", "flag_a"), _tie_plugin("plugin_b", "mask_b", "flag_b"))
    assert error.plugin == "plugin_b"
    assert str(error) == (
        "plugin 'plugin_b': pattern 'mask_b' ties with pattern 'mask_a' (plugin 'plugin_a') in slot attention.mask: "
        "both have precedence 40 and both apply where flags flag_a, flag_b are set; give 'mask_b' a precedence no "
        "other pattern of attention.mask has (taken: 10, 13, 14, 15, 16, 20, 30, 35, 36, 37, 38, 40, 55, 56, 100, 101, 110, 111, 112, 117, 118, 120, 132, 133, 134)"
    )
    assert "flag_b" not in reg.flags
    model = flopsreg.Model.uniform("m", layers=1, flags={"flag_a"}, **gqa_params())
    assert reg.select(model).kind("layer").patterns["attention.mask"] == "mask_a"


def test_tie_with_a_builtin_default_skips_the_plugin_and_builtins_win():
    """A flagless plugin pattern at precedence 10 ties with full_causal on every layer."""
    rival = module_plugin("rival", flopsreg_register_patterns=hook_returning(mask_pattern("rival_causal", flags=(), precedence=10)))
    reg, error = load_skipping(rival)
    assert re.search(r"^plugin 'rival': pattern 'rival_causal' ties with pattern 'full_causal' \(plugin "
                     r"'flopsreg\.patterns\.full_causal'\) .*both apply everywhere \(neither has flags\)", str(error))
    assert reg.select(flopsreg.Model.uniform("m", layers=2, **gqa_params())).kind("layer").patterns["attention.mask"] == "full_causal"


def test_tie_between_two_patterns_of_one_plugin_skips_it():
    twins = module_plugin("twins", flopsreg_register_patterns=hook_returning(mask_pattern("one", flags={"x"}), mask_pattern("two", flags={"y"})))
    _, error = load_skipping(twins)
    assert "pattern 'two' ties with pattern 'one' (plugin 'twins')" in str(error)


def test_equal_precedence_under_two_different_conventions_is_not_a_tie():
    """Conventions are exclusive (one per evaluation): megatron_causal and slime_causal share 100 legally,
    and so may a third convention's mask; a pattern needing megatron and another flag does tie."""
    convention = flopsreg.Convention(name="thirdparty", summary="x", reference="y")
    mine = module_plugin(
        "third",
        flopsreg_register_conventions=_hook(lambda: [convention]),
        flopsreg_register_patterns=hook_returning(mask_pattern("third_causal", flags={"thirdparty"}, precedence=100)),
    )
    reg = load_quietly(mine)
    assert {"megatron_causal", "slime_causal", "third_causal"} <= {p.name for p in reg.patterns}
    clash = module_plugin("clash", flopsreg_register_patterns=hook_returning(mask_pattern("clash", flags={"megatron", "clash"}, precedence=100)))
    _, error = load_skipping(clash)
    assert "pattern 'clash' ties with pattern 'megatron_causal'" in str(error)


def test_engine_tie_check_stays_as_a_backstop(monkeypatch):
    """With the load-time check switched off, evaluation still refuses a tie, naming both plugins."""
    monkeypatch.setattr(flopsreg.plugins.loader, "check_ties", lambda *args: None)
    reg = load_quietly(_tie_plugin("plugin_a", "mask_a", "flag_a"), _tie_plugin("plugin_b", "mask_b", "flag_b"))
    model = flopsreg.Model(
        name="tied",
        params=gqa_params(),
        kinds={"plain": flopsreg.LayerKind(flags={"flag_a"}), "tied": flopsreg.LayerKind(flags={"flag_a", "flag_b"})},
        plan=flopsreg.Plan(layers=4, cycle=["plain", "tied"]),
    )
    with pytest.raises(flopsreg.SelectionError) as info:
        reg.select(model)
    message = str(info.value)
    for part in ("layers 1, 3 (kind 'tied')", "attention.mask", "'mask_a' (plugin 'plugin_a')", "'mask_b' (plugin 'plugin_b')", "precedence 40"):
        assert part in message, message


# -- flagless patterns apply to every model ------------------------------------------------------


def _flops_pattern(name: str, formula, **fields) -> flopsreg.Pattern:
    return flopsreg.Pattern(name=name, slot=f"extra.{name}", precedence=10, formula=formula, summary="t", reference="t", **fields)


def test_flagless_pattern_needing_a_parameter_not_every_model_sets_is_skipped():
    from flopsreg.patterns.sliding_window import WINDOW

    pattern = _flops_pattern("windowed", 2 * s * WINDOW.symbol, params=(WINDOW,))
    _, error = load_skipping(module_plugin("windowed", flopsreg_register_patterns=hook_returning(pattern), flopsreg_register_slots=slots_for(pattern)))
    assert str(error) == (
        "plugin 'windowed': pattern 'windowed' has no flags, so it would apply to every model, but it needs "
        "parameter 'window' that not every model sets; give it a flag"
    )


def test_flagless_pattern_may_use_what_the_default_patterns_require():
    """kv_heads and head_dim (the default projection's), shared dimensions and flagless quantities."""
    from flopsreg.declarations.symbols import n_h
    from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS
    from flopsreg.patterns.quantities import d_v, pairs

    pattern = _flops_pattern("kv_norm", 2 * s * KV_HEADS.symbol * HEAD_DIM.symbol + 2 * n_h * d_v * pairs, params=(KV_HEADS, HEAD_DIM))
    reg = load_quietly(module_plugin("kv_norm", flopsreg_register_patterns=hook_returning(pattern), flopsreg_register_slots=slots_for(pattern)))
    model = flopsreg.Model.uniform("m", layers=1, **gqa_params())
    # kv_heads 2, head_dim 8, heads 4, v_dim = head_dim 8, pairs = 5 * 6 / 2 = 15 at seq_len 5
    assert reg.evaluate(model, seq_len=5).selection.kind("layer").flops(5)["extra.kv_norm"] == 2 * 5 * 2 * 8 + 2 * 4 * 8 * 15


def test_flagless_model_pattern_using_a_layer_quantity_is_skipped():
    from flopsreg.patterns.quantities import pairs

    pattern = _flops_pattern("model_pairs", 2 * pairs, scope="model")
    _, error = load_skipping(module_plugin("model_pairs", flopsreg_register_patterns=hook_returning(pattern), flopsreg_register_slots=slots_for(pattern)))
    assert "pattern 'model_pairs' has no flags, so it applies to every model, but it uses quantity 'pairs', which no flagless pattern of scope 'model' produces" in str(error)


def test_registry_without_a_mask_pattern_refuses_the_core_at_load():
    """With built-ins off, the core needs pairs that nothing produces: caught at load, not at evaluation."""
    from flopsreg.patterns import attention_core, gqa_projection, quantities, slots

    with pytest.warns(flopsreg.PluginWarning):
        reg = flopsreg.Registry(
            plugins=[slots, quantities, attention_core, gqa_projection], builtins=False, load_entry_points=False, trust_builtins=False
        )
    assert [e.plugin for e in reg.errors] == ["flopsreg.patterns.attention_core"]
    assert "uses quantity 'pairs', which no flagless pattern of scope 'layer' produces" in str(reg.errors[0])


# -- formulas are exact: trial evaluation at load -------------------------------------------------


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        (sympy.Float(0.5) * s**2, r"formula contains 0\.5.*, which has no exact rational value"),
        (sympy.pi * s, r"formula contains pi, which has no exact rational value"),
        (sympy.E * s, r"formula contains E, which has no exact rational value"),
        (sympy.sqrt(s), r"formula contains sqrt\(seq_len\), which has no exact rational value"),
        (sympy.sqrt(2) * s, r"formula contains sqrt\(2\), which has no exact rational value"),
        (sympy.oo * s, r"formula contains oo, which has no exact rational value"),
        (s / (s - 1), r"formula is not a finite rational number at seq_len=1: undefined \(ZeroDivisionError\)"),
        (sympy.log(s + 1) * s, r"formula: cannot evaluate log\(seq_len \+ 1\) exactly: log has no exact integer form"),
    ],
    ids=["float", "pi", "e", "sqrt-symbol", "sqrt-2", "infinity", "pole", "log"],
)
def test_inexact_formula_is_refused_at_load(formula, message):
    pattern = mask_pattern("inexact", formula=formula)
    _, error = load_skipping(module_plugin("inexact", flopsreg_register_patterns=hook_returning(pattern)))
    assert re.search(r"^plugin 'inexact': pattern 'inexact': " + message, str(error)), str(error)


def test_non_integer_flops_formula_is_refused_with_the_grid_point():
    """s h / 2 at seq_len = hidden = 1 is 1/2 FLOPs."""
    pattern = _flops_pattern("halved", s * h / 2, flags={"halved"})
    _, error = load_skipping(module_plugin("halved", flopsreg_register_patterns=hook_returning(pattern), flopsreg_register_slots=slots_for(pattern)))
    assert str(error).startswith("plugin 'halved': pattern 'halved' (plugin 'halved') gives 1/2 FLOPs at hidden=1, seq_len=1; FLOPs must be whole numbers")


def _convention_plugin(name: str, *patterns: flopsreg.Pattern) -> types.ModuleType:
    convention = flopsreg.Convention(name=name, summary="t", reference="t")
    return module_plugin(name, flopsreg_register_conventions=_hook(lambda: [convention]), flopsreg_register_patterns=hook_returning(*patterns))


def test_fractional_pairs_that_make_the_core_non_integer_are_refused_naming_the_composition():
    """pairs = s/3 under a convention of its own: the core gives 2 heads (d_qk + d_v) s / 3, which is
    2 * 1 * (1 + 1) * 1 / 3 = 4/3 with the default projection (qk = v = head_dim) at all ones."""
    thirds = _convention_plugin("thirds", mask_pattern("thirds_mask", flags={"thirds"}, precedence=100, formula=s / 3))
    _, error = load_skipping(thirds)
    assert str(error).startswith(
        "plugin 'thirds': pattern 'attention_core' (plugin 'flopsreg.patterns.attention_core') gives 4/3 FLOPs at "
        "head_dim=1, heads=1, hidden=1, kv_heads=1, seq_len=1 with pairs from 'thirds_mask' (plugin 'thirds'); "
        "qk_dim, v_dim from 'gqa_projection' (plugin 'flopsreg.patterns.gqa_projection'); FLOPs must be whole numbers"
    )


def test_half_pairs_are_fine_when_every_consumer_makes_them_whole():
    """pairs = s/2 (a fraction at odd s) times the core's 2 n_h (d_qk + d_v) is whole: accepted."""
    halves = _convention_plugin("halves", mask_pattern("halves_mask", flags={"halves"}, precedence=100, formula=s / 2))
    reg = load_quietly(halves)
    model = flopsreg.Model.uniform("m", layers=1, **gqa_params())
    # core at seq_len 3: 2 * 4 heads * (8 + 8) * 3/2 = 192
    assert reg.evaluate(model, seq_len=3, convention="halves").selection.kind("layer").flops(3)["attention.core"] == 192


def test_a_provider_that_breaks_an_earlier_plugins_formula_is_the_one_skipped():
    """'uses_pairs' (pairs x 1, under its own convention) loads; a later mask with pairs = s/2 would
    make it 1/2 at seq_len = 1, so the later mask's plugin is skipped and the earlier one stays."""
    from flopsreg.patterns.quantities import pairs

    uses = _flops_pattern("uses_pairs", pairs, flags={"mine"})
    first = _convention_plugin("mine", uses)
    first.flopsreg_register_slots = slots_for(uses)
    later = module_plugin("later", flopsreg_register_patterns=hook_returning(mask_pattern("half_mask", flags={"half"}, precedence=50, formula=s / 2)))
    reg, error = load_skipping(first, later)
    assert error.plugin == "later"
    assert "pattern 'uses_pairs' (plugin 'mine') gives 1/2 FLOPs at seq_len=1 with pairs from 'half_mask' (plugin 'later')" in str(error)
    assert "uses_pairs" in {p.name for p in reg.patterns}


def test_builtins_pass_the_hook_name_check_the_registry_skips_for_them(registry):
    """Every built-in hook is spelt as a hookspec and decorated, as a third-party plugin's must be."""
    import pluggy

    for module in flopsreg.plugins.loader.builtin_plugins():
        registry._check_hook_names(module.__name__, module)
        marked = [a for a in dir(module) if pluggy.PluginManager.parse_hookimpl_opts(registry._pm, module, a) is not None]
        assert all(a.startswith("flopsreg_") for a in marked), (module.__name__, marked)  # the manager looks only there
    misspelt = types.ModuleType("flopsreg.patterns.misspelt")
    misspelt.flopsreg_register_pattern = flopsreg.hookimpl(lambda: [])
    with pytest.raises(flopsreg.PluginError, match="unknown hook 'flopsreg_register_pattern'.*flopsreg_register_patterns"):
        registry._check_hook_names(misspelt.__name__, misspelt)


def test_a_built_in_style_fault_is_still_caught_for_a_third_party_plugin():
    """The trust is for flopsreg.patterns only: the same inexact formula from a plugin is refused."""
    pattern = mask_pattern("float_mask", formula=sympy.Float(0.5) * s**2)
    _, error = load_skipping(module_plugin("floaty", flopsreg_register_patterns=hook_returning(pattern)))
    assert "formula contains 0.5" in str(error)


def test_builtins_pass_every_load_time_check(registry):
    """No built-in is skipped when checked as strictly as a third-party plugin (a start trusts
    them): no tie, no clash of declarations, no flagless pattern needing more than every model
    has, every symbol declared, every formula and composition exact."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a skipped plugin warns
        checked = flopsreg.Registry(load_entry_points=False, trust_builtins=False)
    assert checked.errors == ()
    assert [p.name for p in checked.patterns] == [p.name for p in registry.patterns]
    declaring_only = {"flopsreg.patterns.quantities", "flopsreg.patterns.slots", "flopsreg.patterns.token_mixers"}  # declarations, no patterns
    declaring_only |= {r.read.__module__ for r in registry.megatron_readers.values()}  # Megatron-LM readers only
    declaring_only |= {m.__name__ for m in flopsreg.plugins.loader.builtin_plugins() if m.__name__.startswith("flopsreg.patterns.hf.")}  # HF readers only
    assert {registry.plugin_of(p) for p in registry.patterns} == {m.__name__ for m in flopsreg.plugins.loader.builtin_plugins()} - declaring_only


def test_every_module_of_patterns_is_listed_once_in_builtin_and_nothing_else_is():
    """Built-ins are listed, not discovered: a module left out of flopsreg.patterns.BUILTIN would
    never load, and one listed twice would load twice. Helpers (``_*``) and packages are not listed."""
    import pkgutil

    import flopsreg.patterns

    found = pkgutil.walk_packages(flopsreg.patterns.__path__, "flopsreg.patterns.")
    modules = sorted(m.name.removeprefix("flopsreg.patterns.") for m in found if not m.ispkg and not m.name.rpartition(".")[2].startswith("_"))
    listed = flopsreg.patterns.BUILTIN
    assert len(listed) == len(set(listed)), [name for name in listed if listed.count(name) > 1]
    assert sorted(listed) == modules
    assert {"hf.llama", "megatron.mlp", "conventions.megatron", "slots"} <= set(listed)  # subpackages walked too
    assert [m.__name__ for m in flopsreg.plugins.loader.builtin_plugins()] == [f"flopsreg.patterns.{name}" for name in listed]


def test_slots_are_listed_in_forward_pass_order_declared_in_one_place(registry):
    """Registry.slots follows patterns/slots.py's declaration, whatever the modules are called."""
    from flopsreg.patterns.slots import SLOTS

    assert list(registry.slots) == [slot.name for slot in SLOTS]
    declaring = {registry._declared["slots"][name][1] for name in registry.slots}
    assert declaring == {"flopsreg.patterns.slots"}
    order = list(registry.slots)
    forward = ["embedding", "norms", "attention.query", "attention.projection", "attention.core", "attention.output",
               "mixer.projection", "mixer.core", "mixer.output", "mlp", "final_norm", "head"]
    assert sorted(forward, key=order.index) == forward


def test_pattern_needing_a_quantity_nobody_provides_is_a_selection_error():
    """A projection that provides no head widths leaves the core's qk_dim and v_dim unresolved."""
    bare = flopsreg.Pattern(
        name="bare_projection",
        slot="attention.projection",
        flags={"bare_projection"},
        precedence=30,
        formula=2 * s * h,
        summary="projection without head widths",
        reference="tests",
    )
    reg = load_quietly(module_plugin("bare", flopsreg_register_patterns=hook_returning(bare)))
    model = flopsreg.Model.uniform("m", layers=3, flags={"bare_projection"}, hidden=64, heads=4)
    with pytest.raises(flopsreg.SelectionError, match=r"layers 0-2 \(kind 'layer'\).*'qk_dim', 'v_dim'.*no selected pattern"):
        reg.select(model)


def test_two_patterns_producing_the_same_quantity_is_a_selection_error():
    """A second pairs producer in another slot must be an error, not silently replace the mask's pairs."""
    extra = mask_pattern("side_pairs", slot="attention.side", flags={"side"}, precedence=10, formula=s)
    reg = load_quietly(module_plugin("side", flopsreg_register_patterns=hook_returning(extra), flopsreg_register_slots=slots_for(extra)))
    with pytest.raises(flopsreg.SelectionError, match="'pairs' is produced by both"):
        reg.select(flopsreg.Model.uniform("m", layers=1, flags={"side"}, **gqa_params()))


def test_hookimpl_with_specname_is_accepted():
    """pluggy's documented ``specname=`` lets a hookimpl carry another function name."""

    @flopsreg.hookimpl(specname="flopsreg_register_patterns")
    def sink_patterns():
        return [sink_window.SINK_WINDOW]

    reg = load_quietly(module_plugin("specnamed", sink_patterns=sink_patterns))
    assert reg.errors == ()
    assert reg.plugin_of("sink_window") == "specnamed"


# -- field validation of Pattern, Param, Constraint, Convention ------------------------------------

BAD_FIELDS = [
    (dict(name="Bad Name"), r"^pattern: name = 'Bad Name': expected a lower_snake_case name$"),
    (dict(precedence="10"), r"^pattern 'p': precedence = '10': expected an integer"),
    (dict(precedence=True), r"^pattern 'p': precedence = True: expected an integer"),
    (dict(formula="s**2"), r"^pattern 'p': formula = 's\*\*2': expected a sympy expression"),
    (dict(formula=s > 2), r"^pattern 'p': formula = seq_len > 2: expected a sympy expression"),
    (dict(produces="Bogus Name"), r"^pattern 'p': produces = 'Bogus Name': expected 'flops' or the name of a registered quantity"),
    (dict(scope="global"), r"^pattern 'p': scope = 'global': expected 'layer' or 'model'$"),
    (dict(slot="Attention"), r"^pattern 'p': slot = 'Attention': expected dotted lower_snake_case"),
    (dict(flags="sliding_window"), r"^pattern 'p': flags = 'sliding_window': expected a collection of flag names"),
    (dict(flags={"Mla"}), r"^pattern 'p': flags = 'Mla': expected a lower_snake_case flag name$"),
    (dict(provides={"flops": s}), r"^pattern 'p': provides = 'flops': expected the name of a registered quantity$"),
    (dict(provides={"qk_dim": "s"}), r"^pattern 'p': provides\['qk_dim'\] = 's': expected a sympy expression"),
    (dict(params=["window"]), r"^pattern 'p': params = \('window',\): expected a tuple of flopsreg\.Param$"),
    (dict(constraints=[s < 3]), r"^pattern 'p': constraints = \(seq_len < 3,\): expected a tuple of flopsreg\.Constraint$"),
    (dict(summary=""), r"^pattern 'p': summary = '': expected one line"),
]


@pytest.mark.parametrize(("override", "message"), BAD_FIELDS, ids=[next(iter(o)) + f"-{i}" for i, (o, _) in enumerate(BAD_FIELDS)])
def test_bad_pattern_field_is_one_line_naming_pattern_field_value_and_expectation(override, message):
    """A malformed Pattern is a PatternError (a FlopsregError), never a raw attrs TypeError."""
    with pytest.raises(flopsreg.errors.PatternError, match=message) as info:
        mask_pattern(**{"name": "p", **override})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: flopsreg.Param(name="w", latex="W", meaning="m", minimum=1.5), r"^param 'w': minimum = 1\.5: expected an integer >= 0"),
        (lambda: flopsreg.Param(name="w", latex="W", meaning="m", minimum=-1), r"^param 'w': minimum = -1: expected an integer >= 0"),
        (lambda: flopsreg.Param(name="Window", latex="W", meaning="m"), r"^param: name = 'Window': expected a lower_snake_case name$"),
        (lambda: flopsreg.Param(name="w", latex="", meaning="m"), r"^param 'w': latex = '': expected"),
        (lambda: flopsreg.Constraint(condition=s + 1, message="m"), r"^constraint 'm': condition = seq_len \+ 1: expected a sympy condition"),
        (lambda: flopsreg.Constraint(condition=True, message="m"), r"^constraint 'm' is always True for positive integers"),
        (lambda: flopsreg.Convention(name="Mine", summary="x", reference="y"), r"^convention: name = 'Mine': expected a lower_snake_case name$"),
    ],
    ids=["minimum-float", "minimum-negative", "param-name", "latex-empty", "condition-not-boolean", "condition-constant", "convention-name"],
)
def test_bad_param_constraint_convention_field_is_a_pattern_error(make, message):
    with pytest.raises(flopsreg.errors.PatternError, match=message):
        make()


def test_plugin_building_a_malformed_pattern_in_its_hook_is_skipped_and_named():
    """The PatternError raised inside the hook names the plugin, the pattern and the field."""
    plugin = module_plugin("sloppy", flopsreg_register_patterns=_hook(lambda: [mask_pattern("sloppy", precedence="40")]))
    with pytest.warns(flopsreg.PluginWarning):
        reg = flopsreg.Registry(plugins=[plugin], load_entry_points=False)
    (error,) = reg.errors
    assert str(error) == (
        "plugin 'sloppy': flopsreg_register_patterns raised PatternError: pattern 'sloppy': precedence = '40': "
        "expected an integer (the highest applicable one wins its slot)"
    )


@pytest.mark.slow
def test_session_ignores_installed_plugins_unless_the_variable_is_unset(tmp_path):
    """A fake distribution with a flopsreg entry point on sys.path: the root conftest's environment
    (FLOPSREG_DISABLE_PLUGIN_AUTOLOAD=1) keeps Registry.default() from loading it; without it, it loads."""
    import os
    import subprocess
    import sys

    (tmp_path / "fake_flopsreg_plugin.py").write_text(
        "import flopsreg\nfrom flopsreg.declarations.symbols import s\n"
        "@flopsreg.hookimpl\ndef flopsreg_register_patterns():\n"
        "    return [flopsreg.Pattern(name='fake_mask', slot='attention.mask', flags={'fake'}, precedence=77,\n"
        "        produces='pairs', formula=s, summary='t', reference='t')]\n"
    )
    dist = tmp_path / "fake_flopsreg_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-flopsreg-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[flopsreg]\nfake = fake_flopsreg_plugin\n")
    code = "import flopsreg; print(sorted(p.name for p in flopsreg.Registry.default().patterns if p.name == 'fake_mask'))"

    def names(env: dict[str, str]) -> str:
        env = {**env, "PYTHONPATH": os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])}
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()

    assert os.environ["FLOPSREG_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert names(dict(os.environ)) == "[]"
    without = {k: v for k, v in os.environ.items() if k != "FLOPSREG_DISABLE_PLUGIN_AUTOLOAD"}
    assert names(without) == "['fake_mask']"


def test_the_entry_point_pre_scan_skips_importlib_metadata_only_when_no_distribution_declares_the_group(tmp_path, monkeypatch):
    """A start imports importlib.metadata only where a distribution may declare flopsreg plugins:
    a dist-info with a [flopsreg] section, anything on sys.path it cannot list, or another finder."""
    import sys

    from flopsreg.plugins.loader import may_declare_entry_points

    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path)])
    monkeypatch.setattr(sys, "meta_path", [m for m in sys.meta_path if not hasattr(m, "find_distributions") or m.__name__ == "PathFinder"])
    other = tmp_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n# [flopsreg] in a comment\n")
    assert not may_declare_entry_points("flopsreg")
    assert may_declare_entry_points("console_scripts")
    mine = tmp_path / "mine-2.0.egg-info"
    mine.mkdir()
    (mine / "entry_points.txt").write_text("[ flopsreg ]\nmine = mine\n")
    assert may_declare_entry_points("flopsreg")
    (mine / "entry_points.txt").unlink()
    assert not may_declare_entry_points("flopsreg")
    (tmp_path / "plugins.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "plugins.zip")])
    assert may_declare_entry_points("flopsreg")  # a zip on the path: importlib.metadata decides

    class Finder:
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert may_declare_entry_points("flopsreg")
