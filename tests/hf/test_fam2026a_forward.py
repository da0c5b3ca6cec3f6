"""2026 model types of transformers 5.24 read from traits (patterns/hf/llama_like.py,
``FAMILIES_2026``) and A.X K1 (patterns/hf/axk1.py) against real forward passes and parameter counts, recorded in
tests/data/hf_forward/forward_fam2026a.json.

tests/data/hf_forward/measure_fam2026a.py ran a tiny config of every type (odd widths: hidden 44,
head_dim 12, intermediate 58, vocabulary 97) through transformers 5.24 on the CPU (eager attention,
eager experts) under torch's FlopCounterMode at two lengths, and recorded the totals, the FLOPs of
every module, the (query, key) pairs each attention call's mask let through and
``sum(p.numel())``; and, per type, the class-default config with the parameters of its model built
on the meta device (the config saved as tests/data/hf/<type>-defaults.json). Those numbers come
from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg
from flopsreg.patterns.hf.llama_like import FAMILIES_2026

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_fam2026a.json").read_text())
TYPES = {family.name for family in FAMILIES_2026} | {"axk1"}  # axk1: patterns/hf/axk1.py
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def test_every_type_was_recorded_and_ran_and_built_from_its_defaults():
    assert TYPES == {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(DEFAULTS)
    assert RECORD["transformers"] == "5.24.0" and RECORD["torch"].startswith("2.13")
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert all("parameters" in entry for entry in RECORD["defaults"].values()), "a class-default model failed to build"


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    """Which layers slide (each class's default layer rule) and the window's off-by-one."""
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    """The MLP of each layer (dense, or router, experts and shared experts) alone."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, length)):
        recorded = modules[f"model.layers.{layer.index}.mlp"]
        assert ours == recorded, (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    """The saved tests/data/hf/<type>-defaults.json is the recorded class-default config."""
    path = DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json"
    entry = RECORD["defaults"][model_type]
    assert json.loads(path.read_text()) == entry["config"]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


def test_the_post_norms_of_hyperclovax_are_switched_by_use_post_norm(registry):
    """use_post_norm false (recorded) drops two RMSNorms of 44 in each of 3 layers from what true counts."""
    config = RECORD["models"]["hyperclovax_no_post_norm"]["config"]
    on, off = (registry.parameters(flopsreg.Model.from_hf_config({**config, "use_post_norm": flag})).total for flag in (True, False))
    assert (on - off, off) == (3 * 2 * 44, RECORD["models"]["hyperclovax_no_post_norm"]["parameters"])


def test_a_bias_no_pattern_holds_is_refused_by_name():
    config = {**RECORD["models"]["hy_v3"]["config"], "mlp_bias": True}
    with pytest.raises(flopsreg.ModelError, match=r"mlp_bias = true: the shared experts' biases are in no pattern"):
        flopsreg.Model.from_hf_config(config)


def test_hy_v3_and_flint_dense_layers_follow_their_lists():
    """hy_v3: mlp_layer_types (default: layer 0 dense); flint: mlp_only_layers (default [0, 1])."""

    def dense_layers(config: dict) -> list[int]:
        model = flopsreg.Model.from_hf_config(config)
        return [layer.index for layer in model.layers if "moe" not in model.kinds[layer.kind].flags]

    hy_v3, flint = RECORD["models"]["hy_v3"]["config"], RECORD["models"]["flint"]["config"]
    assert dense_layers(hy_v3) == [0]
    assert dense_layers({**hy_v3, "mlp_layer_types": ["sparse", "dense", "sparse"]}) == [1]
    assert dense_layers(flint) == [0, 1]
    assert dense_layers({**flint, "mlp_only_layers": [3]}) == [3]
    with pytest.raises(flopsreg.ModelError, match=r"mlp_layer_types\[1\] = 'moe'"):
        flopsreg.Model.from_hf_config({**hy_v3, "mlp_layer_types": ["dense", "moe", "sparse"]})


def _weights(registry, name: str, **changes) -> dict[str, int]:
    config = {**RECORD["models"][name]["config"], **changes}
    return registry.parameters(flopsreg.Model.from_hf_config(config)).by_slot()


def _recorded(name: str, *suffixes: str) -> int:
    return sum(n for module, n in RECORD["models"][name]["module_parameters"].items() if module.endswith(suffixes))


def test_axk1_moe_layers_and_their_output_norm(registry):
    """first_k_dense_replace 1 and moe_layer_freq 2 make layer 2 alone MoE (i >= 1, i % 2 == 0), the one
    layer with post_mlp_layernorm: its h weights are the third norm moe_output_norms holds there."""
    model = flopsreg.Model.from_hf_config(RECORD["models"]["axk1_freq"]["config"])
    assert [layer.index for layer in model.layers if "moe" in model.kinds[layer.kind].flags] == [2]
    norms = _weights(registry, "axk1_freq")["norms"]
    recorded = _recorded("axk1_freq", "input_layernorm", "post_attention_layernorm", "post_mlp_layernorm")
    assert norms == recorded == 4 * 2 * 44 + 44
    layers = RECORD["models"]["axk1"]["config"]["num_hidden_layers"]
    explicit = {"mlp_layer_types": ["dense", "sparse", "sparse", "sparse"][:layers]}
    assert _weights(registry, "axk1", **explicit) == _weights(registry, "axk1")


def test_beam_gate_holds_its_projection_and_a_bias_per_head(registry):
    """gate_proj (44 -> 4 x 12) and gate_bias (4) of every layer: the recorded modules, and flopsreg's attention.gate."""
    layers = RECORD["models"]["beam"]["config"]["num_hidden_layers"]
    recorded = _recorded("beam", "self_attn.gate_proj") + sum(
        n for module, n in RECORD["models"]["beam"]["module_parameters"].items() if module.endswith("self_attn")
    )
    assert _weights(registry, "beam")["attention.gate"] == recorded == layers * (44 * 4 * 12 + 4)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"q_lora_rank": None}, r"q_lora_rank = null: AXK1Attention always builds q_a_proj"),
        ({"attention_bias": True}, r"attention_bias = true: the biases it adds to A.X K1's MLA are not counted"),
        ({"mlp_layer_types": ["dense", "moe", "sparse", "sparse"]}, r"mlp_layer_types\[1\] = 'moe'"),
    ],
)
def test_axk1_refuses_what_transformers_cannot_build_or_flopsreg_does_not_count(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config({**RECORD["models"]["axk1"]["config"], **changes})
