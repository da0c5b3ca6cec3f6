"""Megatron-LM argument readers as plugins: claims, precedence, order, and faults named by plugin.

A reader claims argument names; each argument goes to the highest precedence claiming it, and
two claims at equal precedence are a fault. Readers run from the lowest precedence to the
highest. The built-in readers claim at 10, the built-in refusals at 0.
"""

import types
from types import SimpleNamespace

import attrs
import pytest

import flopsreg
from flopsreg import Param, Pattern
from flopsreg.declarations.readers import MegatronReader
from flopsreg.declarations.symbols import h, s
from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, TOP_K
from flopsreg.patterns.quantities import f
from flopsreg.readers.megatron import Arguments, claims


def args(**overrides):
    """MHA (GQA off): h = 64, 4 heads of 16, 2 layers, a plain MLP of 128, vocabulary 100."""
    base = dict(
        hidden_size=64, num_layers=2, num_attention_heads=4, group_query_attention=False, num_query_groups=None,
        kv_channels=None, ffn_hidden_size=128, swiglu=False, vocab_size=100, padded_vocab_size=None,
        multi_latent_attention=False, num_experts=None,
    )
    return SimpleNamespace(**{**base, **overrides})


def plugin(name, *readers, patterns=()):
    """A plugin module declaring *readers* (and *patterns*), as an installed package provides it."""
    module = types.ModuleType(name)

    @flopsreg.hookimpl
    def flopsreg_register_megatron_readers():
        return list(readers)

    module.flopsreg_register_megatron_readers = flopsreg_register_megatron_readers
    if patterns:

        @flopsreg.hookimpl
        def flopsreg_register_patterns():
            return list(patterns)

        module.flopsreg_register_patterns = flopsreg_register_patterns
    return module


def registry_with(*plugins):
    reg = flopsreg.Registry(plugins=plugins, load_entry_points=False)
    assert reg.errors == ()
    return reg


def reader(name, arguments, read=lambda args, decoder: decoder, precedence=5):
    return MegatronReader(name=name, arguments=arguments, read=read, precedence=precedence, summary=f"test reader {name}")


# -- a new argument ----------------------------------------------------------------------------


def _parallel(args, decoder):
    if not args.get("parallel_attention_mlp"):
        return decoder
    return attrs.evolve(decoder, flags=decoder.flags | {"parallel_attention_mlp"})


PARALLEL = reader("parallel_attention_mlp", "parallel_attention_mlp", _parallel)


def test_a_plugin_reads_a_new_argument_into_a_flag():
    reg = registry_with(plugin("parallel", PARALLEL))
    on = flopsreg.Model.from_megatron_args(args(parallel_attention_mlp=True), registry=reg)
    off = flopsreg.Model.from_megatron_args(args(parallel_attention_mlp=False), registry=reg)
    assert "parallel_attention_mlp" in on.flags and "parallel_attention_mlp" not in off.flags
    assert on.flags - off.flags == {"parallel_attention_mlp"}


def test_without_the_plugin_the_argument_is_not_read():
    """A namespace holds hundreds of arguments no reader claims: they are not flopsreg's business."""
    assert "parallel_attention_mlp" not in flopsreg.Model.from_megatron_args(args(parallel_attention_mlp=True)).flags


def test_a_single_argument_name_is_one_argument_not_its_letters():
    assert PARALLEL.arguments == ("parallel_attention_mlp",)


# -- displacing a built-in reader or refusal -------------------------------------------------------------

LATENT = Param(name="moe_latent", latex=r"\ell", meaning="latent width the routed experts run in (Megatron moe_latent_size)")
LATENT_MOE = Pattern(
    name="latent_moe",
    slot="mlp",
    flags={"moe", "latent_moe"},
    precedence=30,
    params=(EXPERTS, TOP_K, EXPERT_HIDDEN, LATENT),
    # router h -> E; each token h -> l and back l -> h; k experts of width F_e in the latent space
    formula=2 * s * h * EXPERTS.symbol + 2 * 2 * s * h * LATENT.symbol + 2 * s * TOP_K.symbol * LATENT.symbol * EXPERT_HIDDEN.symbol * f,
    summary="router, h -> latent -> h, and k routed experts of width F_e on the latent width",
    reference="Megatron-LM moe_latent_size (test plugin)",
)


def _latent(args, decoder):
    latent = args.optional_int("moe_latent_size")
    if latent is None:
        return decoder
    if "moe" not in decoder.mlp_kinds:
        raise flopsreg.ModelError(f"args.moe_latent_size = {latent}: needs num_experts")
    flags, params = decoder.mlp_kinds["moe"]
    kinds = {**decoder.mlp_kinds, "moe": (flags | {"latent_moe"}, {**params, "moe_latent": latent})}
    return attrs.evolve(decoder, mlp_kinds=kinds)


# Precedence 30: above the built-in latent MoE reader (20) to win moe_latent_size, and run after the MLP reader (10).
LATENT_READER = reader("test_latent", "moe_latent_size", _latent, precedence=30)


def moe_args(**overrides):
    return args(num_experts=4, moe_router_topk=2, moe_ffn_hidden_size=32, **overrides)


def test_a_plugin_displaces_the_built_in_reader_of_moe_latent_size(registry):
    reg = registry_with(plugin("latent", LATENT_READER, patterns=[LATENT_MOE]))
    model = flopsreg.Model.from_megatron_args(moe_args(moe_latent_size=16), registry=reg)
    assert {"moe", "latent_moe"} <= model.layers[0].flags and model.layers[0].params["moe_latent"] == 16
    res = reg.evaluate(model, seq_len=8)
    assert res.layers[0].patterns["mlp"] == "latent_moe"
    s_, h_, pairs = 8, 64, 8 * 9 // 2
    attention = 4 * 2 * s_ * h_ * 64 + 2 * 4 * (16 + 16) * pairs  # q, k, v, o of 64 x 64 (MHA); QK^T and PV
    latent_mlp = 2 * s_ * h_ * 4 + 2 * 2 * s_ * h_ * 16 + 2 * s_ * 2 * 16 * 32 * 2  # router; down + up; 2 experts
    assert res.forward == 2 * (attention + latent_mlp) + 2 * s_ * h_ * 100
    # the built-in reader still reads the rest of the run: without moe_latent_size it is plain MoE
    plain = reg.evaluate(flopsreg.Model.from_megatron_args(moe_args(), registry=reg), seq_len=8)
    assert plain.forward == res.forward - 2 * (latent_mlp - (2 * s_ * h_ * 4 + 2 * s_ * 2 * h_ * 32 * 2))


def test_the_other_refusals_stay(registry):
    reg = registry_with(plugin("latent", LATENT_READER, patterns=[LATENT_MOE]))
    with pytest.raises(flopsreg.ModelError, match=r"^args\.mtp_hybrid_override_pattern = '\*E': the legacy MTP pattern"):
        flopsreg.Model.from_megatron_args(moe_args(mtp_hybrid_override_pattern="*E"), registry=reg)


def test_the_refusal_names_the_argument_and_its_value():
    with pytest.raises(flopsreg.ModelError, match=r"^args\.mtp_hybrid_override_pattern = 'M\*': the legacy MTP pattern .* is not supported"):
        flopsreg.Model.from_megatron_args(args(mtp_hybrid_override_pattern="M*"))


@pytest.mark.parametrize("value", [None, ""])
def test_unset_refused_arguments_are_not_refused(value):
    assert flopsreg.Model.from_megatron_args(args(mtp_hybrid_override_pattern=value)).layers


def test_a_higher_precedence_reader_runs_after_the_built_ins_and_sees_what_they_read():
    seen = {}

    def look(args, decoder):
        seen.update(params=dict(decoder.params), flags=set(decoder.flags))
        return decoder

    flopsreg.Model.from_megatron_args(args(), registry=registry_with(plugin("late", reader("late", "late_arg", look, 20))))
    assert seen["params"] == {"hidden": 64, "heads": 4, "head_dim": 16, "kv_heads": 4, "vocab": 100}
    assert {"lm_head", "megatron_mha"} <= seen["flags"]


def test_a_lower_precedence_reader_runs_first():
    seen = {}

    def look(args, decoder):
        seen.update(params=dict(decoder.params), flags=set(decoder.flags))
        return decoder

    flopsreg.Model.from_megatron_args(args(), registry=registry_with(plugin("early", reader("early", "early_arg", look, 1))))
    assert seen == {"params": {"hidden": 64, "heads": 4}, "flags": set()}


def test_a_displaced_argument_reads_as_unset_for_the_built_in():
    """A plugin that claims swiglu at 20 reads it; the MLP reader (10) no longer sees it."""

    def glu(args, decoder):
        return attrs.evolve(decoder, flags=decoder.flags | ({"gated"} if args.get("swiglu") else set()))

    reg = registry_with(plugin("glu", reader("my_glu", "swiglu", glu, 20)))
    flags = flopsreg.Model.from_megatron_args(args(swiglu=True), registry=reg).flags
    assert "gated" in flags and "swiglu" not in flags


# -- faults ------------------------------------------------------------------------------------


def test_two_readers_claiming_one_argument_at_equal_precedence_skip_the_later_plugin_at_load():
    with pytest.warns(flopsreg.PluginWarning) as record:
        reg = flopsreg.Registry(
            plugins=[plugin("plugin_a", reader("reader_a", ("x", "shared_arg"))), plugin("plugin_b", reader("reader_b", "shared_arg"))],
            load_entry_points=False,
        )
    (error,) = reg.errors
    assert [str(w.message) for w in record] == [str(error)] and error.plugin == "plugin_b"
    assert "reader 'reader_b' claims args.shared_arg at precedence 5, as does reader 'reader_a' of plugin 'plugin_a'" in str(error)
    assert "reader_a" in reg.megatron_readers and "reader_b" not in reg.megatron_readers


def test_a_tie_is_a_fault_even_when_a_third_reader_outranks_it():
    readers = [reader("a", "arg"), reader("b", "arg"), reader("c", "arg", precedence=9)]
    with pytest.raises(flopsreg.PluginError, match=r"'a' .* and 'b' both claim args\.arg at precedence 5"):
        claims(readers)


def test_a_tie_with_a_built_in_reader_skips_the_plugin_at_load():
    with pytest.warns(flopsreg.PluginWarning, match=r"plugin 'mine': Megatron-LM reader 'my_swiglu' claims args\.swiglu at precedence 10, as does reader 'mlp' of plugin 'flopsreg\.patterns\.megatron\.mlp'"):
        reg = flopsreg.Registry(plugins=[plugin("mine", reader("my_swiglu", "swiglu", precedence=10))], load_entry_points=False)
    assert "my_swiglu" not in reg.megatron_readers
    flopsreg.Model.from_megatron_args(args(), registry=reg)  # the built-in reader still reads every run


def test_claims_give_each_argument_to_its_highest_precedence():
    low, high = reader("low", ("a", "b"), precedence=1), reader("high", "b", precedence=2)
    assert claims([high, low]) == {"a": low, "b": high}


def test_the_built_in_readers_do_not_tie(registry):
    winners = claims(registry.megatron_readers.values())
    assert set(registry.megatron_readers) == {
        "attention", "gated_delta_net", "hybrid", "latent_moe", "mlp", "mtp", "unsupported", "vocabulary", "weights", "window",
    }
    assert winners["moe_latent_size"].precedence == 20 and winners["swiglu"].precedence == 10
    assert winners["mtp_hybrid_override_pattern"].precedence == 0


def test_reading_an_unclaimed_argument_is_a_fault_of_the_reader():
    def sneaky(args, decoder):
        args.get("swiglu")
        return decoder

    reg = registry_with(plugin("sneaky_plugin", reader("sneaky", "own_arg", sneaky)))
    with pytest.raises(flopsreg.PluginError, match=r"Megatron-LM reader 'sneaky' reads args\.swiglu, which it does not claim"):
        flopsreg.Model.from_megatron_args(args(), registry=reg)


def test_a_reader_that_crashes_is_named():
    def broken(args, decoder):
        return decoder.nonexistent

    reg = registry_with(plugin("broken_plugin", reader("broken", "own_arg", broken)))
    with pytest.raises(flopsreg.PluginError, match=r"Megatron-LM reader 'broken' raised AttributeError"):
        flopsreg.Model.from_megatron_args(args(), registry=reg)


def test_a_reader_that_returns_something_else_is_named():
    reg = registry_with(plugin("lazy_plugin", reader("lazy", "own_arg", lambda args, decoder: None)))
    with pytest.raises(flopsreg.PluginError, match=r"Megatron-LM reader 'lazy' returned NoneType"):
        flopsreg.Model.from_megatron_args(args(), registry=reg)


@pytest.mark.parametrize(
    "fields, problem",
    [
        (dict(arguments=("--moe-latent-size",)), "expected distinct argparse destinations"),
        (dict(arguments=()), "expected distinct argparse destinations"),
        (dict(arguments=("a", "a")), "expected distinct argparse destinations"),
        (dict(precedence=True), "precedence = True: expected an integer"),
        (dict(read="not a function"), "expected a function"),
    ],
)
def test_a_malformed_reader_skips_its_plugin_at_load(fields, problem):
    @flopsreg.hookimpl
    def flopsreg_register_megatron_readers():
        return [MegatronReader(**{"name": "bad", "arguments": "x", "read": _parallel, "summary": "bad", **fields})]

    bad = types.ModuleType("bad_plugin")
    bad.flopsreg_register_megatron_readers = flopsreg_register_megatron_readers
    with pytest.warns(flopsreg.PluginWarning):
        reg = flopsreg.Registry(plugins=[bad], load_entry_points=False)
    (error,) = reg.errors
    assert error.plugin == "bad_plugin" and problem in str(error)
    assert "bad" not in reg.megatron_readers


def test_a_reader_name_taken_by_a_built_in_skips_the_plugin():
    with pytest.warns(flopsreg.PluginWarning):
        reg = flopsreg.Registry(plugins=[plugin("copycat", reader("mlp", "own_arg"))], load_entry_points=False)
    (error,) = reg.errors
    assert error.plugin == "copycat" and "'mlp' is already declared by plugin 'flopsreg.patterns.megatron.mlp'" in str(error)


# -- the argument accessor ---------------------------------------------------------------------


def test_arguments_reads_only_what_was_won():
    claimant = reader("r", ("a", "b"))
    view = Arguments(SimpleNamespace(a=1, b=2), ["a"], claimant)
    assert (view.get("a"), view.get("b")) == (1, None)
    assert view.optional_int("b") is None and view.int("a") == 1


def test_arguments_int_errors_name_the_argument():
    view = Arguments(SimpleNamespace(a="7", b=None), ["a", "b"], reader("r", ("a", "b")))
    with pytest.raises(flopsreg.ModelError, match=r"^args\.a = '7': expected an integer$"):
        view.int("a")
    with pytest.raises(flopsreg.ModelError, match=r"^args\.b: missing \(needed with a\)$"):
        view.int("b", " (needed with a)")
