"""The text models of multimodal wrappers read from traits (patterns/hf/llama_like.py: Aria's
text model) against real forward passes and parameter counts, recorded by
tests/data/hf_forward/measure_mm.py in forward_mm.json (tiny odd-width configs under torch's
FlopCounterMode at two lengths; the class-default config's parameters on the meta device).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_mm.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def test_every_case_ran_and_every_default_built():
    assert RECORD["transformers"] == "5.24.0" and MODELS
    assert all("totals" in RECORD["models"][name] for name in MODELS)
    assert all("parameters" in RECORD["defaults"][t] for t in DEFAULTS)


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    """Router, routed experts and shared experts of each layer against the recorded mlp module."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, length)):
        assert ours == modules[f"model.layers.{layer.index}.mlp"], (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    entry = RECORD["defaults"][model_type]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


def test_arias_shared_expert_bias_is_refused_by_name():
    with pytest.raises(flopsreg.ModelError, match=r"mlp_bias = true: the shared experts' biases are in no pattern"):
        flopsreg.Model.from_hf_config({**RECORD["models"]["aria_text"]["config"], "mlp_bias": True})
