"""The GPT-2 era families (GPT-2, GPT-J, CodeGen, GPT-NeoX, GPT-BigCode, StableLM, Persimmon, BioGPT,
XGLM, CTRL) against real forward passes and parameter counts, recorded in
tests/data/hf_forward/forward_classic.json.

tests/data/hf_forward/measure_classic.py ran a tiny config of every family (odd widths: hidden 44
over 4 heads of 11, or 48 over 4 of 12 where partial rotary needs an even head; MLP 58 or 4 x 44;
vocabulary 97) through transformers 5.24 on the CPU (eager
attention) under torch's FlopCounterMode at two sequence lengths, and recorded the totals, the FLOPs
of every module, the (query, key) pairs each attention call's mask let through and
``sum(p.numel())``; and, per model type, the class-default config with the parameters of its model
built on the meta device. Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, pairs_per_layer

import flopsreg
from flopsreg.patterns.hf.classic import CLASSIC
from flopsreg.patterns.hf.opt import OPT

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_classic.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(RECORD["models"][name]["config"])


def _defaults(model_type: str) -> dict:
    """The class-default config of tests/data/hf (gpt-sw3's written under gpt-sw3: its class saves ``gpt2``)."""
    return json.loads((DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json").read_text())


def test_every_case_ran_and_every_default_built():
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert all("parameters" in entry for entry in RECORD["defaults"].values()), "a class-default model failed to build"
    # OpenAI GPT and BLOOM, records of classic.py too, are recorded by measure_r5classic.py (tests/hf/test_r5classic_forward.py).
    later = {"openai-gpt", "bloom"}
    assert {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(DEFAULTS) == {f.name for f in (*CLASSIC, OPT)} - later


@pytest.mark.parametrize("name", MODELS)
def test_the_whole_forward_equals_flop_counter_mode_at_both_lengths(eager_registry, name):
    totals = RECORD["models"][name]["totals"]
    assert forward_at(eager_registry, _model(name), totals) == totals


@pytest.mark.parametrize("name", [name for name in MODELS if RECORD["models"][name]["pairs"]])
def test_pairs_per_layer_equal_what_the_masks_let_through(registry, name):
    assert pairs_per_layer(registry, _model(name), RECORD["seq_lens"][-1]) == RECORD["models"][name]["pairs"]


@pytest.mark.parametrize("name", MODELS)
def test_every_layers_mlp_equals_its_module(eager_registry, name):
    """The plain MLP of each layer (2 matmuls of hidden x width) alone."""
    modules, length = RECORD["models"][name]["modules"], RECORD["seq_lens"][-1]
    model = _model(name)
    units = {unit.name: unit for unit in eager_registry.select(model, convention="eager").kinds}
    for layer in model.layers:
        # the MLP module (GPT-2, GPT-J, GPT-NeoX, StableLM, Persimmon), CTRL's ffn, or BioGPT's and XGLM's fc1 and fc2
        recorded = sum(n for m, n in modules.items() if m.endswith(tuple(f".{layer.index}.{part}" for part in ("mlp", "ffn", "fc1", "fc2"))))
        assert units[layer.kind].flops(length)["mlp"] == recorded, (name, layer.index)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    assert registry.parameters(flopsreg.Model.from_hf_config(_defaults(model_type))).total == RECORD["defaults"][model_type]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_the_published_class_default_is_the_recorded_one(model_type):
    recorded = RECORD["defaults"][model_type]["config"]
    assert _defaults(model_type) == {**recorded, "model_type": model_type}


def test_published_gpt2_small_has_its_published_size(registry):
    """GPT-2 small: 124,439,808 parameters (openai-community/gpt2, tied head), whatever n_inner says when null."""
    assert registry.parameters(flopsreg.Model.from_hf_config(_defaults("gpt2"))).total == 124_439_808


def test_cross_attention_is_refused_by_name():
    config = {**RECORD["models"]["gpt2"]["config"], "add_cross_attention": True}
    with pytest.raises(flopsreg.ModelError, match=r"add_cross_attention = true: cross-attention blocks"):
        flopsreg.Model.from_hf_config(config)


def test_multi_query_gives_one_key_value_head_whatever_num_key_value_heads_says():
    config = RECORD["models"]["gpt_bigcode"]["config"]
    assert flopsreg.Model.from_hf_config(config).params["kv_heads"] == 1
    assert flopsreg.Model.from_hf_config({**config, "multi_query": False}).params["kv_heads"] == config["n_head"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"word_embed_proj_dim": 32}, r"word_embed_proj_dim = 32: the embedding and head of that width with project_in/project_out"),
        ({"do_layer_norm_before": False}, r"do_layer_norm_before = false: OPTDecoder then has no final LayerNorm"),
        ({"_remove_final_layer_norm": True}, r"_remove_final_layer_norm = true: OPTDecoder then has no final LayerNorm"),
    ],
)
def test_opt_configurations_no_pattern_holds_are_refused_by_name(change, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config({**RECORD["models"]["opt"]["config"], **change})


def test_opt_word_embed_proj_dim_null_is_hidden_size(registry):
    config = {**RECORD["models"]["opt"]["config"], "word_embed_proj_dim": None}
    assert registry.parameters(flopsreg.Model.from_hf_config(config)).total == RECORD["models"]["opt"]["parameters"]
