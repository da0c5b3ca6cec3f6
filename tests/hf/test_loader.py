"""Hugging Face configs -> layer flags and parameters, for every supported model_type.

Each test loads a published config (tests/data/hf) or a dict written from it, and checks which
layers slide / are chunked / are MoE against the documented transformers rule, written out
here by index (never read back from the loader), and the parameters each layer gets.
"""

from __future__ import annotations

import attrs
import pytest
from hf_data import config, indices, path
from hypothesis import given, settings
from hypothesis import strategies as st

import flopsreg
from flopsreg.plugins.loader import default_plugins as default_registry
from flopsreg.readers.decoder import shortest_plan
from flopsreg.readers.hf import load_hf_config

GQA_DIMS = ("hidden", "heads", "kv_heads", "head_dim")


def dims(model) -> dict[str, int]:
    return {k: model.params[k] for k in GQA_DIMS}


# -- dense families ----------------------------------------------------------------------------


def test_llama_3_8b_every_layer_full_causal_gated_dense():
    """LlamaConfig: no window anywhere; head_dim = 4096 // 32 (no head_dim key)."""
    model = load_hf_config(path("llama-3-8b"))
    assert len(model.layers) == 32
    assert indices(model, "sliding_window") == indices(model, "chunked") == set()
    assert indices(model, "mlp") == set(range(32))
    assert dims(model) == {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128}
    assert model.params["vocab"] == 128256
    assert {"gated", "lm_head"} <= model.flags
    assert all(layer.params["ffn_hidden"] == 14336 for layer in model.layers)
    assert model.plan.cycle == ("dense",) and model.plan.first == ()


def test_llama_3_1_70b_dimensions():
    model = load_hf_config(path("llama-3.1-70b"))
    assert len(model.layers) == 80
    assert dims(model) == {"hidden": 8192, "heads": 64, "kv_heads": 8, "head_dim": 128}
    assert model.layers[79].params["ffn_hidden"] == 28672


def test_mistral_7b_every_layer_slides_over_4096_keys():
    """MistralConfig: sliding_window applies to every layer and counts the query itself."""
    model = load_hf_config(path("mistral-7b-v0.1"))
    assert indices(model, "sliding_window") == set(range(32))
    assert {layer.params["window"] for layer in model.layers} == {4096}
    assert dims(model) == {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128}


def test_mistral_null_sliding_window_means_no_window():
    cfg = config("mistral-7b-v0.1")
    cfg["sliding_window"] = None
    model = load_hf_config(cfg)
    assert indices(model, "sliding_window") == set()
    assert all("window" not in layer.params for layer in model.layers)


def test_qwen2_5_7b_use_sliding_window_false_means_all_full():
    """Qwen2Config: sliding_window 131072 and max_window_layers 28 are ignored when
    use_sliding_window is false."""
    model = load_hf_config(path("qwen2.5-7b"))
    assert indices(model, "sliding_window") == set()
    assert dims(model) == {"hidden": 3584, "heads": 28, "kv_heads": 4, "head_dim": 128}
    assert model.layers[0].params["ffn_hidden"] == 18944
    assert model.params["vocab"] == 152064


def test_qwen2_use_sliding_window_true_slides_layers_from_max_window_layers():
    """Layer i slides iff use_sliding_window and i >= max_window_layers."""
    cfg = config("qwen2.5-7b")
    cfg.update(use_sliding_window=True, max_window_layers=20, sliding_window=4096)
    model = load_hf_config(cfg)
    assert indices(model, "sliding_window") == {i for i in range(28) if i >= 20}
    assert model.layers[27].params["window"] == 4096


def test_qwen2_layer_types_win_over_max_window_layers():
    cfg = config("qwen2.5-7b")
    cfg["layer_types"] = ["sliding_attention" if i % 3 == 0 else "full_attention" for i in range(28)]
    cfg["use_sliding_window"] = True
    model = load_hf_config(cfg)
    assert indices(model, "sliding_window") == {i for i in range(28) if i % 3 == 0}


def test_qwen3_8b_uses_published_head_dim():
    model = load_hf_config(path("qwen3-8b"))
    assert indices(model, "sliding_window") == set()
    assert dims(model) == {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128}
    assert model.layers[0].params["ffn_hidden"] == 12288


def test_qwen3_head_dim_absent_is_the_class_default_128():
    """Qwen3Config.head_dim defaults to 128, not hidden // heads."""
    cfg = config("qwen3-8b")
    cfg.update(hidden_size=2048)
    del cfg["head_dim"]
    assert load_hf_config(cfg).params["head_dim"] == 128


def test_gemma2_9b_even_layers_slide():
    """Gemma2Config: layer i slides iff (i + 1) % 2 != 0; head_dim 256 (not 3584 // 16)."""
    model = load_hf_config(path("gemma-2-9b"))
    assert indices(model, "sliding_window") == {i for i in range(42) if (i + 1) % 2 != 0}
    assert {model.layers[i].params["window"] for i in range(0, 42, 2)} == {4096}
    assert dims(model) == {"hidden": 3584, "heads": 16, "kv_heads": 8, "head_dim": 256}
    assert model.params["vocab"] == 256000


def test_gemma3_4b_five_of_six_layers_slide_with_class_defaults():
    """Gemma3: layer i slides iff (i + 1) % 6 != 0 (the published text_config gives no pattern);
    heads, kv heads, head_dim and vocab are Gemma3TextConfig defaults."""
    model = load_hf_config(path("gemma-3-4b"))
    sliding = {i for i in range(34) if (i + 1) % 6 != 0}
    assert indices(model, "sliding_window") == sliding
    assert set(range(34)) - sliding == {5, 11, 17, 23, 29}
    assert {model.layers[i].params["window"] for i in sliding} == {1024}
    assert dims(model) == {"hidden": 2560, "heads": 8, "kv_heads": 4, "head_dim": 256}
    assert model.params["vocab"] == 262208
    assert model.layers[0].params["ffn_hidden"] == 10240


def test_gemma3_27b_published_dims():
    model = load_hf_config(path("gemma-3-27b"))
    assert indices(model, "sliding_window") == {i for i in range(62) if (i + 1) % 6 != 0}
    assert dims(model) == {"hidden": 5376, "heads": 32, "kv_heads": 16, "head_dim": 128}


def test_gemma3_text_config_alone_and_explicit_pattern():
    """model_type gemma3_text (the text_config by itself), with sliding_window_pattern 4."""
    text = config("gemma-3-4b")["text_config"]
    text["sliding_window_pattern"] = 4
    model = load_hf_config(text)
    assert indices(model, "sliding_window") == {i for i in range(34) if (i + 1) % 4 != 0}


def test_gemma3_layer_types_win():
    cfg = config("gemma-3-4b")
    cfg["text_config"]["layer_types"] = ["full_attention"] * 33 + ["sliding_attention"]
    assert indices(load_hf_config(cfg), "sliding_window") == {33}


# -- mixture of experts --------------------------------------------------------------------------


def test_mixtral_every_layer_routes_to_2_of_8():
    model = load_hf_config(path("mixtral-8x7b"))
    assert indices(model, "moe") == set(range(32))
    assert indices(model, "sliding_window") == set()  # sliding_window: null
    assert indices(model, "shared_experts") == set()
    layer = model.layers[17]
    assert (layer.params["experts"], layer.params["top_k"], layer.params["expert_hidden"]) == (8, 2, 14336)


def test_qwen2_moe_every_layer_sparse_with_gated_shared_expert():
    """Qwen2MoeConfig: sparse iff not in mlp_only_layers (absent -> []) and (i + 1) % 1 == 0."""
    model = load_hf_config(path("qwen2-moe"))
    assert indices(model, "moe") == {i for i in range(28) if (i + 1) % 1 == 0}
    assert indices(model, "shared_expert_gate") == indices(model, "shared_experts") == set(range(28))
    p = model.layers[0].params
    assert (p["experts"], p["top_k"], p["expert_hidden"], p["shared_hidden"]) == (64, 8, 2560, 20480)
    assert dims(model) == {"hidden": 3584, "heads": 28, "kv_heads": 4, "head_dim": 128}


def test_qwen_moe_decoder_sparse_step_and_mlp_only_layers():
    """(i + 1) % 2 == 0 and not in mlp_only_layers [3, 5] -> layers 1, 7, 9, ... are sparse."""
    cfg = config("qwen2-moe")
    cfg.update(decoder_sparse_step=2, mlp_only_layers=[3, 5])
    model = load_hf_config(cfg)
    sparse = {i for i in range(28) if i not in (3, 5) and (i + 1) % 2 == 0}
    assert indices(model, "moe") == sparse
    assert indices(model, "mlp") == set(range(28)) - sparse
    assert {model.layers[i].params["ffn_hidden"] for i in set(range(28)) - sparse} == {18944}


def test_qwen3_30b_a3b_every_layer_sparse_no_shared_expert():
    model = load_hf_config(path("qwen3-30b-a3b"))
    assert indices(model, "moe") == set(range(48))
    assert indices(model, "shared_experts") == set()
    assert dims(model) == {"hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128}
    p = model.layers[47].params
    assert (p["experts"], p["top_k"], p["expert_hidden"]) == (128, 8, 768)


def test_qwen3_moe_without_head_dim_uses_hidden_over_heads():
    """Qwen3MoeConfig declares no head_dim: the attention falls back to hidden // heads."""
    cfg = config("qwen3-30b-a3b")
    del cfg["head_dim"]
    assert load_hf_config(cfg).params["head_dim"] == 2048 // 32


def test_llama4_scout_rope_layers_chunked_nope_layers_full():
    """no_rope_layers[i] == 1 -> chunked over attention_chunk_size; 0 -> full causal (3, 7, ...)."""
    cfg = config("llama-4-scout")
    model = load_hf_config(cfg)
    rope = cfg["text_config"]["no_rope_layers"]
    assert indices(model, "chunked") == {i for i in range(48) if rope[i] == 1}
    assert set(range(48)) - indices(model, "chunked") == {i for i in range(48) if (i + 1) % 4 == 0}
    assert {model.layers[i].params["chunk"] for i in indices(model, "chunked")} == {8192}
    assert indices(model, "moe") == indices(model, "shared_experts") == set(range(48))
    p = model.layers[3].params
    assert (p["experts"], p["top_k"], p["expert_hidden"], p["shared_hidden"]) == (16, 1, 8192, 8192)
    assert dims(model) == {"hidden": 5120, "heads": 40, "kv_heads": 8, "head_dim": 128}


def test_llama4_text_interleaved_moe_and_rope_interval():
    """moe_layers = range(step - 1, L, step); no_rope_layers from no_rope_layer_interval;
    dense layers use intermediate_size_mlp."""
    text = config("llama-4-scout")["text_config"]
    del text["moe_layers"], text["no_rope_layers"]
    text.update(interleave_moe_layer_step=2, no_rope_layer_interval=3)
    model = load_hf_config(text)
    assert indices(model, "moe") == set(range(1, 48, 2))
    assert indices(model, "mlp") == set(range(0, 48, 2))
    assert {model.layers[i].params["ffn_hidden"] for i in range(0, 48, 2)} == {16384}
    assert indices(model, "chunked") == {i for i in range(48) if (i + 1) % 3 != 0}
    assert "chunked_moe" in model.kinds and "full_dense" in model.kinds


# -- spellings transformers 5 writes ----------------------------------------------------------


def test_qwen3_moe_saved_with_num_local_experts():
    """Qwen3MoeConfig.attribute_map {"num_experts": "num_local_experts"}: transformers 5 saves the latter."""
    cfg = config("qwen3-30b-a3b")
    cfg["num_local_experts"] = cfg.pop("num_experts")
    model = load_hf_config(cfg)
    assert indices(model, "moe") == set(range(48))
    p = model.layers[47].params
    assert (p["experts"], p["top_k"], p["expert_hidden"]) == (128, 8, 768)


def test_both_spellings_with_the_same_value_are_one_field():
    cfg = config("qwen3-30b-a3b")
    cfg["num_local_experts"] = 128
    assert load_hf_config(cfg).layers[0].params["experts"] == 128


@pytest.mark.parametrize(
    ("name", "field", "alias", "experts"),
    [
        ("qwen2-moe", "num_experts", "num_local_experts", 64),
        ("mixtral-8x7b", "num_local_experts", "num_experts", 8),
        ("gpt-oss-20b", "num_local_experts", "num_experts", 32),
        ("deepseek-v2-lite", "n_routed_experts", "num_experts", 64),
        ("deepseek-v3", "n_routed_experts", "num_local_experts", 256),
    ],
)
def test_attribute_map_aliases_of_the_expert_count(name, field, alias, experts):
    """Each config class's attribute_map: the alias is read as the field it names."""
    cfg = config(name)
    cfg[alias] = cfg.pop(field)
    model = load_hf_config(cfg)
    assert {layer.params["experts"] for layer in model.layers if "moe" in layer.flags} == {experts}


def test_qwen2_moe_as_transformers_5_writes_it():
    """use_sliding_window false -> sliding_window 0 (no window) and layer_types all full."""
    cfg = config("qwen2-moe")
    cfg.update(sliding_window=0, layer_types=["full_attention"] * 28)
    cfg["num_local_experts"] = cfg.pop("num_experts")
    model = load_hf_config(cfg)
    assert indices(model, "sliding_window") == set()
    assert indices(model, "moe") == set(range(28))
    assert all("window" not in layer.params for layer in model.layers)


def test_llama4_null_attention_chunk_size_chunks_no_layer(registry):
    """modeling_llama4: chunked only if the layer uses RoPE and a chunk size is set. With null every
    layer is full causal: s(s+1)/2 pairs on all 48 layers, no chunk parameter."""
    cfg = config("llama-4-scout")
    cfg["text_config"]["attention_chunk_size"] = None
    model = load_hf_config(cfg)
    assert indices(model, "chunked") == set()
    assert all("chunk" not in layer.params for layer in model.layers)
    s = 10_000
    core = registry.evaluate(model, seq_len=s).slot_flops["attention.core"]
    assert core == 48 * 2 * 40 * (128 + 128) * (s * (s + 1) // 2)


def test_llama4_null_attention_chunk_size_overrides_layer_types():
    text = config("llama-4-scout")["text_config"]
    text["layer_types"] = ["chunked_attention" if r else "full_attention" for r in text["no_rope_layers"]]
    text["attention_chunk_size"] = None
    assert indices(load_hf_config(text), "chunked") == set()


def test_gpt_oss_20b_alternating_windows_and_experts():
    model = load_hf_config(path("gpt-oss-20b"))
    assert indices(model, "sliding_window") == {i for i in range(24) if i % 2 == 0}
    assert {model.layers[i].params["window"] for i in range(0, 24, 2)} == {128}
    assert indices(model, "moe") == set(range(24))
    p = model.layers[0].params
    assert (p["experts"], p["top_k"], p["expert_hidden"]) == (32, 4, 2880)
    assert dims(model) == {"hidden": 2880, "heads": 64, "kv_heads": 8, "head_dim": 64}


def test_gpt_oss_without_layer_types_alternates_the_same_way():
    cfg = config("gpt-oss-120b")
    del cfg["layer_types"]
    model = load_hf_config(cfg)
    assert indices(model, "sliding_window") == {i for i in range(36) if (i + 1) % 2 != 0}
    assert model.layers[0].params["experts"] == 128


def test_deepseek_v3_three_dense_then_moe_mla_with_q_lora():
    model = load_hf_config(path("deepseek-v3"))
    assert indices(model, "mlp") == {i for i in range(61) if i < 3}
    assert indices(model, "moe") == {i for i in range(61) if i >= 3}
    assert {"mla", "q_lora", "gated", "lm_head"} <= model.flags
    assert "mtp" not in model.flags and model.plan.blocks.get("mtp", ()) == ()
    assert "head_dim" not in model.params and "kv_heads" not in model.params
    p = model.layers[60].params
    assert (p["experts"], p["top_k"], p["expert_hidden"], p["shared_hidden"]) == (256, 8, 2048, 1 * 2048)
    assert (p["q_lora_rank"], p["kv_lora_rank"], p["qk_nope_head_dim"], p["qk_rope_head_dim"], p["v_head_dim"]) == (
        1536, 512, 128, 64, 128,
    )


def test_deepseek_head_dim_field_is_ignored():
    """DeepseekV3Config sets head_dim = qk_rope_head_dim; it is not the attention head size."""
    cfg = config("deepseek-v3")
    cfg["head_dim"] = 64
    model = load_hf_config(cfg)
    assert model == load_hf_config(config("deepseek-v3"))
    assert "head_dim" not in model.params


def test_deepseek_v2_lite_direct_q_proj_two_shared_experts():
    model = load_hf_config(path("deepseek-v2-lite"))
    assert indices(model, "mlp") == {0}
    assert indices(model, "moe") == set(range(1, 27))
    assert "q_lora" not in model.flags and "q_lora_rank" not in model.params
    p = model.layers[1].params
    assert (p["experts"], p["top_k"], p["expert_hidden"], p["shared_hidden"]) == (64, 6, 1408, 2 * 1408)
    assert model.layers[0].params["ffn_hidden"] == 10944


# -- MTP, names, plans -----------------------------------------------------------------------------


def test_mtp_layers_only_when_asked():
    """num_nextn_predict_layers = 1: with blocks=("mtp",) one MTP layer of the last layer's kind."""
    assert load_hf_config(path("deepseek-v3")).plan.blocks.get("mtp", ()) == ()
    model = load_hf_config(path("deepseek-v3"), blocks=("mtp",))
    assert model.plan.blocks["mtp"] == ("moe",) and "mtp" in model.flags
    assert len(model.layers) == 61
    assert [(layer.index, layer.kind) for layer in model.block("mtp")] == [(61, "moe")]
    cfg = config("deepseek-v3")
    cfg["num_nextn_predict_layers"] = 0
    assert load_hf_config(cfg, blocks=["mtp"]).plan.blocks.get("mtp", ()) == ()
    assert load_hf_config(path("llama-3-8b"), blocks=("mtp",)).plan.blocks.get("mtp", ()) == ()


def test_model_from_hf_config_is_the_loader():
    a = flopsreg.Model.from_hf_config(path("gemma-3-4b"))
    assert a == load_hf_config(str(path("gemma-3-4b")))
    assert a.source == str(path("gemma-3-4b"))


def test_name_from_argument_name_or_path_or_model_type():
    cfg = config("llama-3-8b")
    assert load_hf_config(cfg).name == "llama"
    assert load_hf_config(cfg, name="mine").name == "mine"
    cfg["_name_or_path"] = "meta-llama/Meta-Llama-3-8B"
    assert load_hf_config(cfg).name == "meta-llama/Meta-Llama-3-8B"
    assert load_hf_config(cfg).source == ""


@pytest.mark.parametrize("name", sorted(p.stem for p in path("x").parent.glob("*.json")))
def test_every_published_config_round_trips_through_toml(registry, name):
    """to_toml() gives the same model back, and every parameter set is used (no warnings)."""
    model = load_hf_config(path(name), blocks=("mtp",))
    assert flopsreg.Model.from_toml_string(model.to_toml()) == model
    assert registry.select(model).warnings == ()


def test_every_supported_model_type_has_a_config_here():
    seen = set()
    for file in path("x").parent.glob("*.json"):
        cfg = config(file.stem)
        seen.add(cfg["model_type"])
        seen.add(cfg.get("text_config", {}).get("model_type"))
    assert set(default_registry().hf_readers) <= seen


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abc"), min_size=1, max_size=24))
def test_shortest_plan_expands_back_and_is_minimal(kinds):
    first, cycle = shortest_plan(kinds)
    plan = flopsreg.Plan(layers=len(kinds), first=first, cycle=cycle)
    assert [plan.kind_at(i) for i in range(plan.layers)] == kinds
    n = len(kinds)
    shortest = min(
        p + c
        for p in range(n)
        for c in range(1, n - p + 1)
        if all(kinds[i] == kinds[p + (i - p) % c] for i in range(p, n))
    )
    assert len(first) + len(cycle) == shortest


@pytest.mark.parametrize(
    ("name", "swiglu"),
    [("llama-3-8b", True), ("qwen3-30b-a3b", True), ("deepseek-v3", True), ("llama-4-scout", True),
     ("gemma-3-4b", False), ("gemma-2-9b", False), ("gpt-oss-20b", False)],
)
def test_swiglu_flag_follows_the_gate_activation(name, swiglu):
    """SiLU gates are SwiGLU; Gemma's GELU gates and GPT-OSS's clamped gate are not."""
    model = flopsreg.Model.from_hf_config(path(name))
    assert ("swiglu" in model.flags) is swiglu
    assert "gated" in model.flags


def test_a_hf_llama_under_the_megatron_convention_matches_megatron():
    """Llama-3-8B from its config.json, counted as Megatron-LM counts it (anchors 10.1)."""
    model = flopsreg.Model.from_hf_config(path("llama-3-8b"))
    model = attrs.evolve(model, params={**model.params, "padded_vocab": 128256})
    reg = flopsreg.Registry(load_entry_points=False)
    per_token = 6 * 4096 * (3 * 14336) * 32 + 6 * 32 * (4096 * (4096 + 1024 + 1024) + 4096 * 4096) + 6 * 4096 * 128256
    expected = 4096 * per_token + 4096**2 * 6 * 32 * 128 * 32
    assert reg.evaluate(model, seq_len=4096, convention="megatron").training == expected == 197_628_625_158_144
