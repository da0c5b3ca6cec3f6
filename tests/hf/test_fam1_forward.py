"""The modern dense, MoE and MLA families of helper fam1 (issue 21) against real forward passes
and parameter counts, recorded in tests/data/hf_forward/forward_fam1.json.

tests/data/hf_forward/measure_fam1.py ran a tiny config of every type (odd widths: hidden 44,
head_dim 12, intermediate 58, vocabulary 97) through transformers 5.24 on the CPU (eager
attention, eager experts) under torch's FlopCounterMode at two sequence lengths, and recorded the
totals, the FLOPs of every module, the (query, key) pairs each attention call's mask let through
and ``sum(p.numel())``; and, per model type, the class-default config with the parameters of its
model built on the meta device, or the error when the class does not build from its defaults.
Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_fam1.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(t for t, entry in RECORD["defaults"].items() if "parameters" in entry)
# transformers 5.24 cannot build these from their class defaults (experts or head_dim left null):
# flopsreg refuses the same configs, naming the missing key.
NO_DEFAULT_BUILD = {"dots1": "n_shared_experts", "hunyuan_v1_moe": "head_dim"}


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def test_every_case_ran_and_the_defaults_that_fail_are_known():
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert {t for t, entry in RECORD["defaults"].items() if "error" in entry} == set(NO_DEFAULT_BUILD) == set(RECORD["built_defaults"])


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    """The MLP of each layer (dense, or router, experts and shared experts) alone."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, length)):
        at = f"model.layers.{layer.index}"
        recorded = sum(n for m, n in modules.items() if m in (f"{at}.mlp", f"{at}.block_sparse_moe"))
        assert ours == recorded, (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    entry = RECORD["defaults"][model_type]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


@pytest.mark.parametrize("model_type", sorted(RECORD["built_defaults"]))
def test_defaults_with_the_keys_they_lack_equal_the_meta_device_model(registry, model_type):
    """tests/data/hf/<type>-defaults.json: the class defaults plus what the class needs to build."""
    entry = RECORD["built_defaults"][model_type]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


@pytest.mark.parametrize(("model_type", "key"), sorted(NO_DEFAULT_BUILD.items()))
def test_class_defaults_transformers_cannot_build_are_refused_by_name(model_type, key):
    with pytest.raises(flopsreg.ModelError, match=rf"\b{key}\b"):
        flopsreg.Model.from_hf_config(RECORD["defaults"][model_type]["config"])


def test_dots1_layers_follow_first_k_dense_replace_and_max_window_layers(registry):
    model = _model("dots1")
    assert [("moe" in model.kinds[layer.kind].flags) for layer in model.layers] == [False, True, True, True]
    assert RECORD["models"]["dots1"]["pairs"][2] < RECORD["models"]["dots1"]["pairs"][1]  # layers 2, 3 slide in the record


def test_a_per_layer_expert_count_is_refused():
    config = {**RECORD["models"]["hunyuan_v1_moe"]["config"], "num_experts": [5, 5, 5]}
    with pytest.raises(flopsreg.ModelError, match=r"num_experts = \[5, 5, 5\]: expected an integer"):
        flopsreg.Model.from_hf_config(config)


def test_a_pruned_head_is_refused_a_full_one_read():
    config = RECORD["models"]["apertus1p5_text"]["config"]
    with pytest.raises(flopsreg.ModelError, match=r"output_vocab_size = 50: a head narrower than the embedding"):
        flopsreg.Model.from_hf_config({**config, "output_vocab_size": 50})
    full = flopsreg.Model.from_hf_config({**config, "output_vocab_size": config["vocab_size"]})
    assert full == _model("apertus1p5_text")
