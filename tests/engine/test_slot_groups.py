"""Slot groups (issue 20, point 3): a layer chooses its token mixer once, by flag, and the slots of
the other token mixers do not exist on it: no ``*_no_*`` patterns, and a plugin's new attention
slot needs no mixer to opt out of it.

Expected numbers are hand arithmetic written here, or the same model's other layers.
"""

from __future__ import annotations

import types

import attrs
import hf_data
import pytest

import flopsreg
from flopsreg.cli import main
from flopsreg.declarations.symbols import h, s

WIDTH = flopsreg.Param(name="rwkv_width", latex="R", meaning="a test mixer's width")


def hooks(**functions) -> types.SimpleNamespace:
    """An in-process plugin whose attributes are the given hook functions, each marked as a hookimpl."""
    return types.SimpleNamespace(**{name: flopsreg.hookimpl(function) for name, function in functions.items()})


def loaded(*plugins: object) -> flopsreg.Registry:
    """The built-ins and *plugins*, every one checked at load (as a third party's is)."""
    return flopsreg.Registry(plugins, load_entry_points=False, trust_builtins=False)


def model(**kinds: tuple[set[str], dict[str, int]]) -> flopsreg.Model:
    """One layer per kind, in the order given, on small GQA widths."""
    return flopsreg.Model(
        name="groups",
        params={"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16},
        kinds={name: flopsreg.LayerKind(flags=flags, params=params) for name, (flags, params) in kinds.items()},
        plan=flopsreg.Plan(layers=len(kinds), cycle=list(kinds)),
    )


GDN = {"linear_key_heads": 2, "linear_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 16, "conv_kernel": 4}
TWO_LAYERS = model(attention=(set(), {}), gdn=({"gated_deltanet"}, GDN))

# A plugin's new attention slot, filled on every attention layer by a flagless pattern: s h FLOPs.
ATTENTION_EXTRA = hooks(
    flopsreg_register_slots=lambda: [flopsreg.Slot(name="attention.extra", scope="layer", summary="a test slot")],
    flopsreg_register_patterns=lambda: [
        flopsreg.Pattern(name="extra", slot="attention.extra", precedence=10, formula=s * h, summary="t", reference="tests")
    ],
)


def test_a_plugins_new_attention_slot_is_not_on_a_gated_deltanet_layer():
    plain = flopsreg.Registry(load_entry_points=False).evaluate(TWO_LAYERS, seq_len=5)
    reg = loaded(ATTENTION_EXTRA)
    assert reg.errors == ()
    selection = reg.select(TWO_LAYERS)
    assert selection.kind("attention").patterns["attention.extra"] == "extra"
    assert not [slot for slot in selection.kind("gdn").patterns if slot.startswith("attention")]
    result = reg.evaluate(TWO_LAYERS, seq_len=5)
    attention, gdn = result.layers
    assert attention.flops == plain.layers[0].flops + 5 * 64
    assert gdn.flops == plain.layers[1].flops


# A plugin's own token mixer: its group, its slots, the flag that selects it and its patterns;
# flagless, since the group exists only where the flag selects it. Nothing of anyone else's.
RWKV = hooks(
    flopsreg_register_slot_groups=lambda: [flopsreg.SlotGroup(name="rwkv", summary="a test token mixer")],
    flopsreg_register_group_selectors=lambda: [flopsreg.GroupSelector(group="rwkv", flags={"rwkv"}, summary="t")],
    flopsreg_register_slots=lambda: [
        flopsreg.Slot(name="rwkv.mix", scope="layer", summary="t"),
        flopsreg.Slot(name="rwkv.out", scope="layer", summary="t"),
    ],
    flopsreg_register_patterns=lambda: [
        flopsreg.Pattern(name="rwkv_mix", slot="rwkv.mix", precedence=10, params=(WIDTH,), formula=2 * s * h * WIDTH.symbol,
                         weights=h * WIDTH.symbol, summary="t", reference="tests"),
        flopsreg.Pattern(name="rwkv_out", slot="rwkv.out", precedence=10, params=(WIDTH,), formula=2 * s * WIDTH.symbol * h,
                         summary="t", reference="tests"),
    ],
)


def test_a_plugins_new_token_mixer_needs_only_its_own_slots_and_patterns():
    reg = loaded(RWKV)
    assert reg.errors == ()
    m = model(attention=({"mlp"}, {"ffn_hidden": 32}), rwkv=({"rwkv", "mlp"}, {"ffn_hidden": 32, "rwkv_width": 8}))
    selection = reg.select(m)
    assert set(selection.kind("rwkv").patterns) == {"rwkv.mix", "rwkv.out", "mlp", "mlp.activation"}
    assert not [slot for slot in selection.kind("attention").patterns if slot.startswith("rwkv")]
    attention, rwkv = reg.evaluate(m, seq_len=3).layers
    mlp = 2 * 3 * 64 * 32 * 2  # up and down, plain
    assert rwkv.flops == 2 * 3 * 64 * 8 * 2 + mlp
    assert attention.flops > mlp
    rwkv_weights = {share.slot: share.weights for share in reg.parameters(m).shares if share.where == "rwkv"}
    assert rwkv_weights["rwkv.mix"] == 64 * 8
    assert not [slot for slot in rwkv_weights if slot.startswith("attention")]


def test_explain_qwen3_5_has_no_zero_attention_rows(capsys):
    assert main(["explain", "qwen3.5-9b"]) == 0
    out = capsys.readouterr().out
    linear = out.split("(kind 'linear')")[1].split("\nlayers ")[0]
    assert "mixer.core: gated_deltanet_core" in linear
    assert not [line for line in linear.splitlines() if line.strip().startswith("attention")]
    assert "_no_" not in out


def test_falcon_h1_counts_attention_and_mamba2_on_one_layer(registry):
    hybrid = flopsreg.Model.from_hf_config(hf_data.config("falcon-h1-defaults"))
    (kind,) = hybrid.kinds
    flags = hybrid.kinds[kind].flags
    assert {"mamba2", "parallel_attention"} <= flags
    # The same layer with one token mixer each: its slots are the union of theirs.
    alone = {
        name: attrs.evolve(hybrid, kinds={kind: flopsreg.LayerKind(flags=flags - drop, params=hybrid.kinds[kind].params)})
        for name, drop in (("mamba", {"parallel_attention"}), ("attention", {"mamba2", "parallel_attention"}))
    }
    both = registry.select(hybrid).kind(kind)
    each = {name: registry.select(m).kind(kind) for name, m in alone.items()}
    assert {slot for slot in both.patterns if slot.startswith("attention")} == {slot for slot in each["attention"].patterns if slot.startswith("attention")}
    assert {slot for slot in both.patterns if slot.startswith("mixer")} == {"mixer.projection", "mixer.conv", "mixer.core", "mixer.output"}
    assert not [slot for slot in each["mamba"].patterns if slot.startswith("attention")]
    flops = {name: sel.flops(4096) for name, sel in (("both", both), *each.items())}
    for slot, value in flops["both"].items():
        source = "attention" if slot.startswith("attention") else "mamba"
        assert value == flops[source][slot], slot
    assert both.patterns["attention.core"] == "attention_core"  # the default attention, no re-declared copy


def test_two_token_mixers_not_declared_compatible_are_one_error(registry):
    m = model(odd=({"no_attention", "mamba2"}, {"mamba_heads": 2, "mamba_head_dim": 4, "mamba_state": 4, "mamba_groups": 1, "conv_kernel": 4}))
    with pytest.raises(flopsreg.SelectionError) as error:
        registry.evaluate(m, seq_len=2)
    message = str(error.value)
    assert "\n" not in message
    assert "kind 'odd'" in message
    assert "flags mamba2 select token mixer 'mixer' and flags no_attention select token mixer 'no_mixer'" in message


def test_a_plugins_mixer_beside_attention_needs_a_declaration():
    reg = loaded(RWKV)
    with pytest.raises(flopsreg.SelectionError, match="flags parallel_attention select token mixer 'attention' and flags rwkv select token mixer 'rwkv'"):
        reg.select(model(both=({"rwkv", "parallel_attention"}, {"rwkv_width": 8})))


def test_group_declarations_are_checked_at_load():
    second_default = hooks(flopsreg_register_slot_groups=lambda: [flopsreg.SlotGroup(name="other", summary="t", default=True)])
    unknown = hooks(flopsreg_register_group_selectors=lambda: [flopsreg.GroupSelector(group="rwvk", flags={"x"}, summary="t")])
    with pytest.warns(flopsreg.PluginWarning):
        reg = loaded(second_default, unknown)
    first, second = map(str, reg.errors)
    assert "slot groups 'attention' and 'other' are both the default token mixer" in first
    assert "group selector 'rwvk:x' names slot group 'rwvk', which no plugin declares" in second
    with pytest.raises(flopsreg.PatternError, match="groupselector: flags = frozenset"):
        flopsreg.GroupSelector(group="mixer", flags=(), summary="t")


def test_no_builtin_pattern_empties_a_slot_of_another_token_mixer(registry):
    assert not [p.name for p in registry.patterns if "_no_" in p.name and p.formula == 0 and p.refusal is None and p.slot.startswith("attention")]
    assert "no_attention" in registry.flags and "parallel_attention" in registry.flags  # group selectors' flags are known flags
