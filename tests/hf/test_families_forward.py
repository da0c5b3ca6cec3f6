"""The Llama-like families read from traits (patterns/hf/llama_like.py) against real forward
passes and parameter counts, recorded in tests/data/hf_forward/forward_families.json.

tests/data/hf_forward/measure_families.py ran a tiny config of every family (odd widths: hidden
44, head_dim 12, intermediate 58, vocabulary 97) through transformers 5.24 on the CPU (eager
attention, eager experts) under torch's FlopCounterMode at two sequence lengths, and recorded
the totals, the FLOPs of every module, the (query, key) pairs each attention call's mask let
through and ``sum(p.numel())``; and, per model type, the class-default config with the
parameters of its model built on the meta device. Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg
from flopsreg.patterns.hf.llama_like import FAMILIES

RECORD = json.loads((Path(__file__).parents[1] / "data" / "hf_forward" / "forward_families.json").read_text())
MODELS = sorted(name for name, entry in RECORD["models"].items() if entry["config"]["model_type"] in {f.name for f in FAMILIES})
DEFAULTS = sorted(t for t, entry in RECORD["defaults"].items() if "parameters" in entry and t in {f.name for f in FAMILIES})
# transformers 5.24 cannot build these from their class defaults (rope_parameters or
# num_key_value_heads left None): recorded with the error, read here from their tiny configs only.
NO_DEFAULT_BUILD = {"hunyuan_v1_dense", "ministral", "nemotron"}


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def test_every_family_was_recorded_and_ran():
    # records of the families added later are the helpers' own (forward_<name>.json, tests/hf/test_<name>_forward.py)
    records = [json.loads(path.read_text()) for path in sorted((Path(__file__).parents[1] / "data" / "hf_forward").glob("forward_*.json"))]
    recorded = {entry["config"]["model_type"] for record in records for entry in record["models"].values()}
    recorded |= {entry["config"].get("text_config", {}).get("model_type") for record in records for entry in record["models"].values()}  # emu3's text model
    assert {f.name for f in FAMILIES} <= recorded
    assert all("totals" in RECORD["models"][name] for name in MODELS), "a model failed to run when recorded"
    assert {t for t, entry in RECORD["defaults"].items() if "error" in entry} & {f.name for f in FAMILIES} == NO_DEFAULT_BUILD


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", MODELS)
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    """Which layers slide (the class's default layer rules) and the window's off-by-one."""
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    """The MLP of each layer (gated 3 matmuls, plain 2, or router and experts) alone."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, length)):
        at = f"model.layers.{layer.index}"
        recorded = sum(n for m, n in modules.items() if m in (f"{at}.mlp", f"{at}.block_sparse_moe", f"{at}.shared_mlp"))
        assert ours == recorded, (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    entry = RECORD["defaults"][model_type]
    assert registry.parameters(flopsreg.Model.from_hf_config(entry["config"])).total == entry["parameters"]


def test_a_switch_that_needs_another_is_refused_alone():
    config = {**RECORD["models"]["seed_oss"]["config"], "attention_bias": False, "attention_out_bias": True}
    with pytest.raises(flopsreg.ModelError, match=r"attention_out_bias = true with attention_bias false"):
        flopsreg.Model.from_hf_config(config)


def test_a_null_window_without_layer_types_is_refused_where_the_class_cannot_build_them():
    config = {**RECORD["models"]["exaone4"]["config"], "sliding_window": None}
    with pytest.raises(flopsreg.ModelError, match=r"sliding_window = null and no layer_types"):
        flopsreg.Model.from_hf_config(config)
    given = flopsreg.Model.from_hf_config({**config, "layer_types": ["full_attention"] * config["num_hidden_layers"]})
    assert given.plan.layers == config["num_hidden_layers"]


def test_a_refused_trait_is_refused_by_name():
    config = {**RECORD["models"]["ernie4_5_moe"]["config"], "use_bias": True}
    with pytest.raises(flopsreg.ModelError, match=r"use_bias = true: the shared experts' biases are in no pattern"):
        flopsreg.Model.from_hf_config(config)


def test_ernie_moe_layers_follow_start_end_and_interval():
    """Layers 1 and 2 of 4 route to experts in the record; with an interval of 2 only layer 1 (i + 1 even)."""
    config = RECORD["models"]["ernie4_5_moe"]["config"]

    def moe_layers(model: flopsreg.Model) -> list[int]:
        return [layer.index for layer in model.layers if "moe" in model.kinds[layer.kind].flags]

    assert moe_layers(flopsreg.Model.from_hf_config(config)) == [1, 2]
    assert moe_layers(flopsreg.Model.from_hf_config({**config, "moe_layer_interval": 2})) == [1]
