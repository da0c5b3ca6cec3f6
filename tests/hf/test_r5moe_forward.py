"""Mixture-of-experts types read this session (patterns/hf/moe_families.py, dbrx.py,
mimo_v2_flash.py, jetmoe.py, doge.py, longcat_flash.py)
against real forward passes and parameter counts, recorded in tests/data/hf_forward/forward_r5moe.json.

tests/data/hf_forward/measure_r5moe.py ran a tiny config of every type (odd widths: hidden 44,
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

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_r5moe.json").read_text())
TYPES = {"cohere2_moe", "dbrx", "afmoe", "mimo_v2_flash", "jetmoe", "doge", "longcat_flash"}
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])


def _config(name: str, **changes) -> dict:
    return {**RECORD["models"][name]["config"], **changes}


def _model(name: str, **changes) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(_config(name, **changes))


def _recorded_mlp(name: str, layer: int) -> int:
    """The recorded FLOPs of a layer's MLP: DBRX keeps it in ``transformer.blocks.<i>.ffn``;
    LongCat-Flash's layer i is sublayer i % 2 of its decoder layer i // 2 (``mlps.<i % 2>``, and on
    the first sublayer the shortcut MoE ``mlp``)."""
    modules, model_type = RECORD["models"][name]["modules"], _config(name)["model_type"]
    if model_type == "dbrx":
        return modules[f"transformer.blocks.{layer}.ffn"]
    if model_type == "longcat_flash":
        block = f"model.layers.{layer // 2}"
        return modules[f"{block}.mlps.{layer % 2}"] + (0 if layer % 2 else modules[f"{block}.mlp"])
    return modules[f"model.layers.{layer}.mlp"]


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
    model = _model(name)
    # DogeCDMoE holds its product-key experts (mlp.parallel_experts) inside the mlp module
    slots = ("mlp", "mlp.shared", "mlp.parallel_experts")
    for layer, ours in zip(model.layers, mlp_per_layer(eager_registry, model, RECORD["seq_lens"][-1], slots)):
        assert ours == _recorded_mlp(name, layer.index), (name, layer.index)


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


def test_longcat_flash_zero_computation_experts_are_refused_by_name():
    """A token routed to an identity expert runs no matmul there: the FLOPs follow the router, not the config."""
    with pytest.raises(flopsreg.ModelError, match=r"zero_expert_num = 256: a token the router sends to a zero-computation"):
        _model("longcat_flash", zero_expert_num=256)
    assert _model("longcat_flash", zero_expert_num=None) == _model("longcat_flash")


def test_longcat_flash_layers_are_two_sublayers_each():
    """num_layers 2 is 4 layers, MoE on the first sublayer of each; a config giving num_hidden_layers (its setter halves it) reads the same."""
    model = _model("longcat_flash")
    assert [("moe" in model.kinds[layer.kind].flags) for layer in model.layers] == [True, False, True, False]
    config = {key: value for key, value in _config("longcat_flash").items() if key != "num_layers"}
    given = flopsreg.Model.from_hf_config({**config, "num_hidden_layers": 4})
    assert ([layer.kind for layer in given.layers], given.kinds) == ([layer.kind for layer in model.layers], model.kinds)


def test_cohere2_moe_dense_prefix_follows_first_k_dense_replace():
    """The popped first_k_dense_replace makes layers 0 and 1 dense (prefix_dense_intermediate_size) and full."""
    model = _model("cohere2_moe")
    assert [model.kinds[layer.kind].flags >= {"moe"} for layer in model.layers] == [False, False, True, True, True]
    explicit = _model("cohere2_moe", mlp_layer_types=["dense", "dense", "sparse", "sparse", "sparse"],
                      layer_types=["full_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention"])
    assert explicit == model


def test_dbrx_refuses_a_tied_head_as_its_config_class_does():
    with pytest.raises(flopsreg.ModelError, match=r"tie_word_embeddings = true: DbrxConfig refuses it"):
        _model("dbrx", tie_word_embeddings=True)
