"""The last GPT-2 era families of issue 21 (OpenAI GPT, GPT-Neo, BLOOM, MPT, Falcon, GPT-NeoX-Japanese,
ModernBERT-decoder)
against real forward passes and parameter counts, recorded in tests/data/hf_forward/forward_r5classic.json.

tests/data/hf_forward/measure_r5classic.py ran a tiny config of every family (hidden 44 over 4 heads
of 11, or 48 over 4 of 12 where the config validates an even rotary head; Falcon in its four
attention layouts; GPT-Neo and ModernBERT-decoder with global and local layers) through transformers 5.24 on the CPU
(eager attention) under torch's FlopCounterMode at two sequence lengths, and recorded the totals,
the FLOPs of every module, GPT-Neo's pairs from each layer's own mask buffer and ``sum(p.numel())``;
and, per model type, the class-default config with the parameters of its model built on the meta
device. Those numbers come from torch and transformers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_forward import forward_at, mlp_per_layer, pairs_per_layer

import flopsreg

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "hf_forward" / "forward_r5classic.json").read_text())
MODELS = sorted(RECORD["models"])
DEFAULTS = sorted(RECORD["defaults"])
# Each layer's MLP module, by the name FlopCounterMode gives it: GPT-2-like "mlp", MPT's "ffn".
MLP_MODULES = ("mlp", "ffn")


def _config(name: str) -> dict:
    return RECORD["models"][name]["config"]


def _model(name: str) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(_config(name))


def _defaults(model_type: str) -> dict:
    return json.loads((DATA / "hf" / f"{model_type.replace('_', '-')}-defaults.json").read_text())


def test_every_case_ran_and_every_default_built():
    assert all("totals" in entry for entry in RECORD["models"].values()), "a model failed to run when recorded"
    assert all("parameters" in entry for entry in RECORD["defaults"].values()), "a class-default model failed to build"
    assert {entry["config"]["model_type"] for entry in RECORD["models"].values()} == set(DEFAULTS) == {
        "openai-gpt", "gpt_neo", "bloom", "mpt", "falcon", "gpt_neox_japanese", "modernbert-decoder",
    }


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
    recorded = [sum(n for m, n in modules.items() if m.endswith(tuple(f".{layer.index}.{part}" for part in MLP_MODULES))) for layer in model.layers]
    assert mlp_per_layer(eager_registry, model, length) == recorded


@pytest.mark.parametrize("name", MODELS)
def test_parameters_equal_what_transformers_allocates(registry, name):
    assert registry.parameters(_model(name)).total == RECORD["models"][name]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_class_default_parameters_equal_the_meta_device_model(registry, model_type):
    assert registry.parameters(flopsreg.Model.from_hf_config(_defaults(model_type))).total == RECORD["defaults"][model_type]["parameters"]


@pytest.mark.parametrize("model_type", DEFAULTS)
def test_the_published_class_default_is_the_recorded_one(model_type):
    assert _defaults(model_type) == {**RECORD["defaults"][model_type]["config"], "model_type": model_type}


def test_gpt_neo_local_layers_slide_over_window_size_keys():
    model = _model("gpt_neo")
    assert [layer.params.get("window") for layer in model.layers] == [None, 5, 5]


def test_falcon_key_value_heads_follow_its_attention_layout():
    heads = _config("falcon")["num_attention_heads"]
    assert _model("falcon").params["kv_heads"] == 1
    assert _model("falcon-new").params["kv_heads"] == _config("falcon-new")["num_kv_heads"]
    assert _model("falcon-mha-sequential-alibi").params["kv_heads"] == heads


def test_gpt_neox_japanese_holds_its_output_bias_in_the_last_layer_alone(registry):
    """dense_bias (hidden_size) exists in the last layer only: one layer fewer gives one bias fewer."""
    config = _config("gpt_neox_japanese")
    fewer = {**config, "num_hidden_layers": config["num_hidden_layers"] - 1}
    per_layer = RECORD["models"]["gpt_neox_japanese"]["module_parameters"]
    layer = sum(n for m, n in per_layer.items() if ".layers.0." in m)  # a layer without the bias
    total = registry.parameters(flopsreg.Model.from_hf_config(fewer)).total
    assert total == RECORD["models"]["gpt_neox_japanese"]["parameters"] - layer


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("gpt_neo", {"attention_types": [[["global", "local"], 2]]}, r"attention_types expands to 4 layers but num_layers = 3"),
        ("gpt_neo", {"attention_types": [[["global", "sparse"], 1], [["local"], 1]]}, r"attention_types\[0\]: 'sparse' is not a GPT-Neo attention type"),
        ("mpt", {"expansion_ratio": 6}, r"expansion_ratio = 6: transformers' MptModel builds an MLP of 4 x d_model"),
        ("mpt", {"no_bias": False}, r"no_bias = false: transformers' MptModel builds no bias at all"),
        ("mpt", {"attn_config": {"attn_type": "multiquery_attention"}}, r"attn_config.attn_type = 'multiquery_attention': transformers' MptModel builds multi-head"),
        ("mpt", {"attn_config": {"qk_ln": True}}, r"attn_config.qk_ln = true: transformers' MptModel builds no query/key LayerNorms"),
        ("mpt", {"attn_config": {"alibi": False}}, r"attn_config.alibi = false: transformers' MptModel builds ALiBi and no position table"),
        ("falcon-new", {"parallel_attn": False}, r"parallel_attn = false with new_decoder_architecture true"),
        ("falcon", {"num_ln_in_parallel_attn": 2}, r"num_ln_in_parallel_attn = 2 with new_decoder_architecture false"),
        ("falcon-mha-sequential-alibi", {"num_kv_heads": 2}, r"num_kv_heads = 2 with multi_query false"),
        ("modernbert-decoder", {"local_attention": None}, r"local_attention = null: sliding_attention layers then have sliding_window -1"),
        ("modernbert-decoder", {"local_attention": 1}, r"local_attention = 1: sliding_attention layers then have sliding_window 0,"),
    ],
)
def test_configurations_transformers_does_not_build_are_refused_by_name(name, change, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config({**_config(name), **change})


def test_modernbert_decoder_local_layers_slide_over_half_local_attention():
    """__post_init__ sets sliding_window = local_attention // 2, whatever the config says; layer 0 holds no attn_norm."""
    model = flopsreg.Model.from_hf_config({**_config("modernbert-decoder"), "sliding_window": 3})
    assert [layer.params.get("window") for layer in model.layers] == [None, 5, 5, None, 5]
    assert [("single_norm" in layer.flags) for layer in model.layers] == [True, False, False, False, False]


def test_modernbert_decoder_head_transform_is_the_recorded_lm_head_module(eager_registry):
    """lm_head (dense, act, norm) runs one hidden x hidden matmul per position: its recorded FLOPs."""
    for name in ("modernbert-decoder", "modernbert-decoder-biased"):
        length = RECORD["seq_lens"][-1]
        slots = eager_registry.evaluate(_model(name), seq_len=length, convention="eager").slot_flops
        assert slots["head.transform"] == RECORD["models"][name]["modules"]["lm_head"]
        assert slots["head"] == RECORD["models"][name]["modules"]["decoder"]
