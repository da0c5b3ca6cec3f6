"""Inkling's text decoder (``inkling_text``, patterns/hf/inkling.py) against real forward passes
and parameter counts, recorded in tests/data/hf_forward/forward_inkling.json.

tests/data/hf_forward/measure_inkling.py ran two tiny configs (odd widths: hidden 44, head_dim 12,
sliding head_dim 10, vocabulary 97) through transformers 5.24 on the CPU (eager attention, eager
experts) under torch's FlopCounterMode at two lengths, and recorded the totals, the FLOPs of every
module, the (query, key) pairs each attention call's mask let through and ``sum(p.numel())``; and
the class-default config (also saved as tests/data/hf/inkling-text-defaults.json) with the
parameters of its model built on the meta device. Those numbers come from torch and transformers.

Inkling's short convs run as torch's conv1d fallback computes them (s + K - 1 outputs, then
sliced): the record is compared with the ``padded_conv`` variants.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from recorded_forward import forward_at, pairs_per_layer

import flopsreg
from flopsreg.formula.exact import compile_exact

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_inkling.json").read_text())
MODELS = sorted(RECORD["models"])


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _as_recorded(name: str) -> flopsreg.Model:
    """The model with its convs as torch's conv1d fallback ran them (padded by K - 1)."""
    model = _model(name)
    return attrs.evolve(model, kinds={k: attrs.evolve(v, flags=v.flags | {"padded_conv"}) for k, v in model.kinds.items()})


def test_every_case_ran_and_the_defaults_built():
    assert {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(RECORD["defaults"]) == {"inkling_text"}
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert all("parameters" in entry for entry in RECORD["defaults"].values()), "the class-default model failed to build"


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _as_recorded(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    """Which layers slide (layer_types, or the class's rule: every sixth layer full) and the window."""
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_attention_convs_and_mlp_equal_their_modules(eager_registry, name):
    """Per layer: the attention (q/k/v/r/o projections, k/v convs, relative bias, core), the two
    sublayer convs, and the MLP (dense, or router with the shared experts' rows, experts, shared experts)."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _as_recorded(name)
    units = {unit.name: unit for unit in eager_registry.select(model, convention="eager").kinds}
    for layer in model.layers:
        ours = units[layer.kind].flops(length)
        at = f"model.layers.{layer.index}"

        def part(prefix: str, ours=ours) -> int:
            return sum(n for slot, n in ours.items() if slot.startswith(prefix))

        assert part("attention") == modules[f"{at}.self_attn"], (name, layer.index)
        assert part("sublayer_conv") == modules[f"{at}.attn_sconv"] + modules[f"{at}.mlp_sconv"], (name, layer.index)
        assert part("mlp") == modules[f"{at}.mlp"], (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


def test_class_default_parameters_equal_the_meta_device_model(registry):
    """The saved tests/data/hf/inkling-text-defaults.json is the recorded class-default config."""
    path = DATA / "hf" / "inkling-text-defaults.json"
    entry = RECORD["defaults"]["inkling_text"]
    assert json.loads(path.read_text()) == entry["config"]
    assert registry.parameters(flopsreg.Model.from_hf_config(path)).total == entry["parameters"]


def test_a_config_without_the_inkling_fields_takes_the_class_defaults(registry):
    """InklingTextConfig's defaults fill what a config leaves out: the saved defaults minus the
    widths only Inkling has count the same."""
    full = json.loads((DATA / "hf" / "inkling-text-defaults.json").read_text())
    trimmed = {k: v for k, v in full.items() if not k.startswith(("swa_", "d_rel", "rel_extent", "conv_kernel", "n_shared", "layer_types", "mlp_layer_types"))}
    assert registry.parameters(flopsreg.Model.from_hf_config(trimmed)).total == RECORD["defaults"]["inkling_text"]["parameters"]


@pytest.mark.parametrize(("seq_len", "hidden", "heads", "rel_dim", "extent"), [(1, 1, 1, 1, 1), (5, 3, 2, 2, 4), (7, 4, 3, 2, 9)])
def test_the_relative_bias_is_the_multiply_adds_of_its_literal_loops(registry, seq_len, hidden, heads, rel_dim, extent):
    """r_proj (one multiply-add per token, head, d_rel state and input feature), then the states
    times the bank (per token, head, distance and state), every distance whatever the length."""
    r_proj = sum(1 for _ in range(seq_len) for _ in range(heads) for _ in range(rel_dim) for _ in range(hidden))
    bank = sum(1 for _ in range(seq_len) for _ in range(heads) for _ in range(extent) for _ in range(rel_dim))
    pattern = registry.pattern("relative_logits")
    values = {"seq_len": seq_len, "hidden": hidden, "heads": heads, "rel_dim": rel_dim, "rel_extent": extent}
    assert compile_exact(pattern.formula)(values) == 2 * (r_proj + bank)
    assert compile_exact(pattern.weights)(values) == hidden * heads * rel_dim + rel_dim * extent


@pytest.mark.parametrize(("seq_len", "kv_heads", "head_dim", "kernel"), [(1, 1, 1, 1), (4, 2, 3, 3), (6, 1, 5, 4)])
def test_the_kv_convs_are_the_taps_of_their_literal_loops(registry, seq_len, kv_heads, head_dim, kernel):
    """k_sconv and v_sconv: per channel and output position, one multiply-add per tap (K taps of
    each of the s outputs a causal kernel gives), or per tap over the s + K - 1 outputs of conv1d(padding=K - 1)."""
    channels = 2 * kv_heads * head_dim
    causal = sum(1 for _ in range(channels) for _ in range(seq_len) for _ in range(kernel))
    padded = sum(1 for _ in range(channels) for _ in range(seq_len + kernel - 1) for _ in range(kernel))
    values = {"seq_len": seq_len, "kv_heads": kv_heads, "head_dim": head_dim, "conv_kernel": kernel}
    assert compile_exact(registry.pattern("kv_sconv_conv").formula)(values) == 2 * causal
    assert compile_exact(registry.pattern("kv_sconv_padded_conv").formula)(values) == 2 * padded
    assert compile_exact(registry.pattern("kv_sconv_conv").weights)(values) == channels * kernel


@pytest.mark.parametrize(("seq_len", "hidden", "shared"), [(1, 1, 1), (5, 3, 2), (7, 4, 3)])
def test_the_routers_shared_rows_are_the_multiply_adds_of_their_literal_loop(registry, seq_len, hidden, shared):
    multiply_adds = sum(1 for _ in range(seq_len) for _ in range(shared) for _ in range(hidden))
    pattern = registry.pattern("shared_expert_sink")
    values = {"seq_len": seq_len, "hidden": hidden, "shared_count": shared}
    assert compile_exact(pattern.formula)(values) == 2 * multiply_adds
    assert compile_exact(pattern.weights)(values) == hidden * shared


def test_heads_that_are_not_a_multiple_of_the_kv_heads_are_refused():
    config = {**RECORD["models"]["inkling_text"]["config"], "swa_num_key_value_heads": 4}
    with pytest.raises(flopsreg.ModelError, match=r"swa_num_attention_heads = 6: expected a multiple of its key/value heads \(4\)"):
        flopsreg.Model.from_hf_config(config)


def test_an_unknown_layer_type_is_refused_with_the_closest_name():
    config = {**RECORD["models"]["inkling_text"]["config"], "layer_types": ["hybrid", "hybrid_slidng", "hybrid"]}
    with pytest.raises(flopsreg.ModelError, match=r"layer_types\[1\] = 'hybrid_slidng'.*hybrid_sliding"):
        flopsreg.Model.from_hf_config(config)


def test_local_layer_ids_choose_the_sliding_layers(registry):
    """InklingTextConfig: without layer_types, the layers local_layer_ids lists slide."""
    config = {k: v for k, v in RECORD["models"]["inkling_text"]["config"].items() if k != "layer_types"}
    model = flopsreg.Model.from_hf_config({**config, "local_layer_ids": [1]})
    assert model == _model("inkling_text")


def test_moe_without_shared_experts_is_refused():
    """InklingTopkRouter slices the routed scores as [..., :-n_shared_experts]: with 0 none are left."""
    config = {**RECORD["models"]["inkling_text"]["config"], "n_shared_experts": 0}
    with pytest.raises(flopsreg.ModelError, match=r"n_shared_experts = 0: expected an integer >= 1"):
        flopsreg.Model.from_hf_config(config)
