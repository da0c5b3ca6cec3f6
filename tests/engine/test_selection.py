"""The engine's choices and explanations: selection by flags only, and clear input errors.

A pattern applies only where all its flags are set; a parameter value never switches anything
on, and a parameter no selected pattern uses is reported as a warning. Missing or invalid
inputs are ModelErrors naming the field, the value and the closest valid name.
"""

from __future__ import annotations

import pytest
from helpers_models import gemma_like
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import (
    attention_layer_flops,
    causal_mask,
    chunked_mask,
    pairs,
    sliding_window_mask,
)

import flopsreg
from flopsreg.plugin import s

GQA = {"hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 8}


def mla_model(*, flags, **extra) -> flopsreg.Model:
    return flopsreg.Model.uniform(
        "mla",
        layers=2,
        flags=flags,
        hidden=64,
        heads=4,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=4,
        v_head_dim=6,
        **extra,
    )


# -- explanations -------------------------------------------------------------------------------


def test_explain_gemma_like_names_each_kind_its_layers_flags_and_reasons(registry):
    lines = registry.select(gemma_like()).explain().splitlines()
    assert lines[0] == "gemma-like: 34 layers, 2 kinds"
    local = lines.index("layers 0-4, 6-10, 12-16, 18-22, 24-28, 30-33 (kind 'local'): flags sliding_window")
    glob = lines.index("layers 5, 11, 17, 23, 29 (kind 'global'): flags none")
    assert "  attention.mask: sliding_window (flag sliding_window set; sliding_window 20 > full_causal 10)" in lines[local:glob]
    assert "  attention.mask: full_causal (slot default, no flag needed)" in lines[glob:]
    assert "  attention.projection: gqa_projection (slot default, no flag needed)" in lines[glob:]
    assert not any(line.startswith("warning:") for line in lines)


def test_result_explain_equals_plan_explain(registry):
    model = gemma_like()
    assert registry.evaluate(model, seq_len=8).explain() == registry.select(model).explain()


def test_chunked_beats_sliding_window_when_both_flags_are_set(registry):
    """chunked (30) > sliding_window (20) > full_causal (10); the reason lists every flag used."""
    model = flopsreg.Model.uniform("both", layers=2, flags={"chunked", "sliding_window"}, chunk=8, **GQA)
    plan = registry.select(model)
    assert plan.kinds[0].patterns["attention.mask"] == "chunked"
    text = plan.explain()
    assert "  attention.mask: chunked (flags chunked, sliding_window set; chunked 30 > sliding_window 20 > full_causal 10)" in text
    assert plan.warnings == ()
    seq = 21
    expected = attention_layer_flops(s=seq, **GQA, attended_pairs=pairs(chunked_mask(seq, 8)))
    assert registry.evaluate(model, seq_len=seq).forward == 2 * expected


def test_window_on_a_chunked_layer_is_reported_unused(registry):
    model = flopsreg.Model.uniform("both", layers=1, flags={"chunked", "sliding_window"}, chunk=8, window=4, **GQA)
    (warning,) = registry.select(model).warnings
    assert "params.window = 4" in warning and "sliding_window (flags: sliding_window)" in warning


# -- selection is by flags only -----------------------------------------------------------------


def test_window_without_flag_selects_full_causal_and_warns(registry):
    """The Megatron/slime failure mode made visible: a window value alone switches nothing on."""
    model = flopsreg.Model.uniform("noflag", layers=3, window=1024, **GQA)
    result = registry.evaluate(model, seq_len=30)
    assert {layer.patterns["attention.mask"] for layer in result.layers} == {"full_causal"}
    (warning,) = result.warnings
    assert warning.startswith("params.window = 1024 is set but no selected pattern uses it")
    assert "it is used by sliding_window (flags: sliding_window)" in warning
    assert f"warning: {warning}" in result.explain()
    per_layer = attention_layer_flops(s=30, **GQA, attended_pairs=pairs(causal_mask(30)))
    assert result.forward == 3 * per_layer


def test_kind_level_unused_param_warning_names_the_kind_and_layers(registry):
    model = flopsreg.Model(
        name="m",
        params=GQA,
        kinds={"a": flopsreg.LayerKind(params={"window": 7}), "b": flopsreg.LayerKind(flags={"sliding_window"}, params={"window": 7})},
        plan=flopsreg.Plan(layers=4, cycle=["a", "b"]),
    )
    (warning,) = registry.select(model).warnings
    assert "kinds.a.params.window = 7" in warning and "layers 0, 2 (kind 'a')" in warning


def test_mla_without_q_lora_flag_uses_query_projection_and_warns_about_q_lora_rank(registry):
    seq = 12
    model = mla_model(flags={"mla"}, q_lora_rank=24)
    result = registry.evaluate(model, seq_len=seq)
    assert result.layers[0].patterns["attention.query"] == "query_projection"
    assert result.layers[0].patterns["attention.projection"] == "mla_projection"
    (warning,) = result.warnings
    assert "params.q_lora_rank = 24" in warning and "low_rank_query (flags: q_lora)" in warning
    h, n_h, r_kv, nope, rope, v = 64, 4, 16, 8, 4, 6
    q = 2 * seq * h * n_h * (nope + rope)  # q_proj straight to heads x (nope + rope)
    kv_down = 2 * seq * h * (r_kv + rope)  # hidden -> latent + shared rope key
    kv_up = 2 * seq * r_kv * n_h * (nope + v)  # latent -> heads x (nope key + value)
    core = 2 * n_h * (nope + rope + v) * pairs(causal_mask(seq))
    out = 2 * seq * n_h * v * h
    assert result.forward == 2 * (q + kv_down + kv_up + core + out)


def test_mla_with_q_lora_flag_uses_low_rank_query_without_warning(registry):
    seq = 12
    result = registry.evaluate(mla_model(flags={"mla", "q_lora"}, q_lora_rank=24), seq_len=seq)
    assert result.layers[1].patterns["attention.query"] == "low_rank_query"
    assert result.warnings == ()
    h, n_h, r_q, r_kv, nope, rope, v = 64, 4, 24, 16, 8, 4, 6
    q = 2 * seq * h * r_q + 2 * seq * r_q * n_h * (nope + rope)
    kv = 2 * seq * h * (r_kv + rope) + 2 * seq * r_kv * n_h * (nope + v)
    core = 2 * n_h * (nope + rope + v) * pairs(causal_mask(seq))
    out = 2 * seq * n_h * v * h
    assert result.forward == 2 * (q + kv + core + out)


def test_gqa_params_on_an_mla_model_are_reported_unused(registry):
    """slime's bug inverted: GQA parameters on an MLA layer are not silently mixed in."""
    warnings = registry.select(mla_model(flags={"mla"}, kv_heads=4, head_dim=16)).warnings
    assert any("params.kv_heads = 4" in w and "gqa_projection" in w for w in warnings)
    assert any("params.head_dim = 16" in w for w in warnings)


@settings(max_examples=60, deadline=None)
@given(
    flags=st.sets(st.sampled_from(["sliding_window", "chunked"])),
    with_window=st.booleans(),
    with_chunk=st.booleans(),
)
def test_mask_selection_depends_on_flags_only(registry, flags, with_window, with_chunk):
    """Whatever parameters are set, the mask is chunked if flagged, else sliding_window, else full."""
    params = dict(GQA)
    if with_window or "sliding_window" in flags:
        params["window"] = 5
    if with_chunk or "chunked" in flags:
        params["chunk"] = 3
    model = flopsreg.Model.uniform("m", layers=1, flags=flags, **params)
    expected = "chunked" if "chunked" in flags else "sliding_window" if "sliding_window" in flags else "full_causal"
    assert registry.select(model).kinds[0].patterns["attention.mask"] == expected
    oracle = {"chunked": chunked_mask(11, 3), "sliding_window": sliding_window_mask(11, 5), "full_causal": causal_mask(11)}
    assert registry.evaluate(model, seq_len=11).forward == attention_layer_flops(
        s=11, **GQA, attended_pairs=pairs(oracle[expected])
    )


# -- model errors ---------------------------------------------------------------------------------


def test_flagged_pattern_missing_its_parameter_is_a_model_error(registry):
    model = flopsreg.Model.uniform("m", layers=2, flags={"sliding_window"}, **GQA)
    with pytest.raises(flopsreg.ModelError, match=r"layers 0-1 \(kind 'layer'\): parameter 'window' .* needed by sliding_window but not set"):
        registry.select(model)


def test_missing_shared_dimension_is_a_model_error(registry):
    model = flopsreg.Model.uniform("m", layers=1, heads=4, kv_heads=2, head_dim=8)
    with pytest.raises(flopsreg.ModelError, match=r"parameter 'hidden' .* not set"):
        registry.select(model)


def test_heads_not_multiple_of_kv_heads_names_both_values(registry):
    model = flopsreg.Model.uniform("m", layers=1, hidden=64, heads=8, kv_heads=3, head_dim=8)
    with pytest.raises(flopsreg.ModelError, match=r"heads = 8, kv_heads = 3: heads must be a multiple of kv_heads \(pattern gqa_projection\)"):
        registry.select(model)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            flopsreg.Model(
                name="m",
                params={**GQA, "window": 4},
                flags={"sliding_windw"},
                kinds={"layer": flopsreg.LayerKind()},
                plan=flopsreg.Plan.uniform("layer", 1),
            ),
            r"m: flags: unknown flag 'sliding_windw'; did you mean 'sliding_window'\?",
        ),
        (
            flopsreg.Model(
                name="m",
                params=GQA,
                kinds={"local": flopsreg.LayerKind(flags={"chunkd"}, params={"chunk": 4})},
                plan=flopsreg.Plan.uniform("local", 1),
            ),
            r"kinds\.local\.flags: unknown flag 'chunkd'; did you mean 'chunked'\?",
        ),
        (
            flopsreg.Model.uniform("m", layers=1, windw=4, **GQA),
            r"params\.windw: unknown parameter; did you mean 'window'\?",
        ),
        (
            flopsreg.Model(
                name="m",
                params=GQA,
                kinds={"local": flopsreg.LayerKind(flags={"sliding_window"}, params={"window_size": 4})},
                plan=flopsreg.Plan.uniform("local", 1),
            ),
            r"kinds\.local\.params\.window_size: unknown parameter; did you mean 'window'\?",
        ),
        (
            flopsreg.Model.uniform("m", layers=1, hidden=64, heads=4, kv_heads=2, head_dims=8),
            r"params\.head_dims: unknown parameter; did you mean 'head_dim'\?",
        ),
    ],
    ids=["model-flag", "kind-flag", "model-param", "kind-param", "head-dims"],
)
def test_unknown_names_suggest_the_closest_known_name(registry, model, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        registry.select(model)


@pytest.mark.parametrize("value", [0, -1])
def test_window_below_minimum_names_field_and_value(registry, value):
    model = flopsreg.Model(
        name="m",
        params=GQA,
        kinds={"local": flopsreg.LayerKind(flags={"sliding_window"}, params={"window": value})},
        plan=flopsreg.Plan.uniform("local", 1),
    )
    with pytest.raises(flopsreg.ModelError, match=rf"kinds\.local\.params\.window = {value}: expected an integer >= 1"):
        registry.select(model)


@pytest.mark.parametrize("name", ["hidden", "heads", "kv_heads", "head_dim"])
def test_dimension_zero_names_field(registry, name):
    model = flopsreg.Model.uniform("m", layers=1, **{**GQA, name: 0})
    with pytest.raises(flopsreg.ModelError, match=rf"params\.{name} = 0: expected an integer >= 1"):
        registry.select(model)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seq_len": 0}, r"seq_len: 0 is not a sequence length: expected an integer >= 1"),
        ({"seq_len": -5}, r"seq_len: -5 "),
        ({"seq_len": True}, r"seq_len: True "),
        ({"seq_len": 8.0}, r"seq_len: 8\.0 "),
        ({"seq_len": 8, "seqlens": [8]}, r"exactly one of seq_len .* or seqlens"),
        ({}, r"exactly one of seq_len .* or seqlens"),
        ({"seqlens": []}, r"seqlens: empty"),
        ({"seqlens": [4, 0]}, r"seqlens: 0 is not a sequence length"),
        ({"seqlens": [4, False]}, r"seqlens: False "),
        ({"seq_len": 8, "batch": 0}, r"batch: 0 is not a batch size: expected an integer >= 1"),
        ({"seq_len": 8, "batch": -2}, r"batch: -2 "),
        ({"seq_len": 8, "batch": True}, r"batch: True "),
    ],
)
def test_sequence_and_batch_validation_names_the_field(registry, kwargs, message):
    model = flopsreg.Model.uniform("m", layers=1, **GQA)
    with pytest.raises(flopsreg.ModelError, match=message):
        registry.evaluate(model, **kwargs)


def test_errors_are_value_errors_of_the_flopsreg_family():
    """Callers can catch everything bad-input with FlopsregError (or ValueError)."""
    for cls in (flopsreg.ModelError, flopsreg.SelectionError, flopsreg.PluginError):
        assert issubclass(cls, flopsreg.FlopsregError) and issubclass(cls, ValueError)


class Refuses:
    """A plugin whose pattern refuses the plan where its flag is set (how a convention says 'not counted')."""

    @flopsreg.hookimpl
    def flopsreg_register_patterns():
        return [
            flopsreg.Pattern(
                name="no_odd_mlp", slot="mlp", flags={"mlp", "odd"}, precedence=99, formula=0,
                summary="odd MLPs are refused", reference="a test", refusal="odd MLPs cannot be counted here",
            )
        ]


def test_a_selected_refusal_pattern_refuses_the_plan_in_one_line():
    reg = flopsreg.Registry(plugins=[Refuses], load_entry_points=False)
    plain = flopsreg.Model.uniform("plain", layers=2, flags={"mlp"}, ffn_hidden=32, **GQA)
    assert reg.evaluate(plain, seq_len=8).forward > 0  # not selected: no effect
    odd = flopsreg.Model.uniform("odd", layers=2, flags={"mlp", "odd"}, ffn_hidden=32, **GQA)
    with pytest.raises(flopsreg.ModelError) as error:
        reg.evaluate(odd, seq_len=8)
    assert str(error.value) == "layers 0-1 (kind 'layer'), slot mlp: odd MLPs cannot be counted here (pattern 'no_odd_mlp')"


def test_a_refusal_must_be_a_line_of_text():
    with pytest.raises(flopsreg.PatternError, match=r"refusal = '  ': expected None or the one line"):
        flopsreg.Pattern(name="p", slot="mlp", precedence=1, formula=0, summary="s", reference="r", refusal="  ")


def test_patterns_json_shows_the_refusal():
    from flopsreg.render import patterns_json

    rows = {row["name"]: row for row in patterns_json(flopsreg.Registry(plugins=[Refuses], load_entry_points=False))}
    assert rows["no_odd_mlp"]["refusal"] == "odd MLPs cannot be counted here" and rows["full_causal"]["refusal"] is None


# -- a quantity that replaces seq_len in its layer ----------------------------------------------------

_DOUBLED = flopsreg.Quantity(name="doubled_positions", latex="2s", meaning="a layer over twice the input", replaces_seq_len=True)


class _Doubling:
    @flopsreg.hookimpl
    def flopsreg_register_quantities(self):
        return [_DOUBLED]

    @flopsreg.hookimpl
    def flopsreg_register_slots(self):
        return [flopsreg.Slot(name="doubling", scope="layer", summary="a layer over twice the input")]

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return [flopsreg.Pattern(name="doubling", slot="doubling", flags={"doubling"}, precedence=10, produces=_DOUBLED.name,
                                 formula=2 * s, summary="twice the input", reference="a test")]


def test_a_plugins_replaces_seq_len_quantity_counts_its_layers_over_it_and_the_head_over_s():
    reg = flopsreg.Registry(plugins=[_Doubling()], load_entry_points=False)
    dims = dict(layers=2, hidden=8, heads=2, kv_heads=2, head_dim=4, vocab=11)
    plain = flopsreg.Model.uniform("plain", flags={"lm_head"}, **dims)
    doubled = flopsreg.Model.uniform("doubled", flags={"lm_head", "doubling"}, **dims)
    assert reg.evaluate(doubled, seq_len=5).layers[0].flops == reg.evaluate(plain, seq_len=10).layers[0].flops
    assert reg.evaluate(doubled, seq_len=5).slot_flops["head"] == reg.evaluate(plain, seq_len=5).slot_flops["head"] == 2 * 5 * 8 * 11
    both = flopsreg.Model.uniform("both", flags={"lm_head", "doubling", "prompt_prefix"}, prompt_length=3, **dims)
    with pytest.raises(flopsreg.SelectionError, match=r"'doubled_positions', 'layer_positions' both replace seq_len"):
        reg.select(both)
