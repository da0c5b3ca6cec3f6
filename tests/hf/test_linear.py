"""The Hugging Face readers of the linear-attention / SSM hybrids: layouts, traps, refusals.

Expected numbers are hand arithmetic written here from the published configs in tests/data/hf;
what transformers 5.24 builds from each key is cited from its configuration/modeling code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flopsreg
from flopsreg import ModelError

HF = Path(__file__).parents[1] / "data" / "hf"


def config(name: str) -> dict:
    return json.loads((HF / f"{name}.json").read_text())


def load(cfg: dict) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(cfg)


def kinds_of(model: flopsreg.Model) -> list[str]:
    return [model.plan.kind_at(i) for i in range(model.plan.layers)]


def layer_flops(registry, model: flopsreg.Model, kind: str, s: int) -> dict[str, int]:
    return registry.select(model).kind(kind).flops(s)


# -- Qwen3-Next-80B-A3B: one Gated DeltaNet layer and one gated attention layer by hand ----------


def test_qwen3_next_layout_and_one_token_by_hand(registry):
    model = load(config("qwen3-next-80b-a3b"))
    # layer_types: linear_attention unless (i + 1) % 4 == 0; every layer MoE (decoder_sparse_step 1)
    assert kinds_of(model) == (["gated_deltanet"] * 3 + ["full"]) * 12
    h, hk, hv, dk, dv = 2048, 16, 32, 128, 128
    gdn = layer_flops(registry, model, "gated_deltanet", 1)
    assert gdn["mixer.projection"] == 2 * h * (2 * hk * dk + 2 * hv * dv + 2 * hv)  # in_proj_qkvz + in_proj_ba
    assert gdn["mixer.conv"] == 2 * (2 * hk * dk + hv * dv) * 4
    assert gdn["mixer.core"] == 6 * hv * dk * dv
    assert gdn["mixer.output"] == 2 * hv * dv * h
    assert not [slot for slot in gdn if slot.startswith("attention")]  # no attention slots on a GDN layer
    # MoE: router 2048 -> 512, 10 experts of 512 (SwiGLU), shared expert 512 and its gate 2048 -> 1
    assert gdn["mlp"] == 2 * h * 512 + 2 * 10 * h * 512 * 3
    assert gdn["mlp.shared"] + gdn["mlp.shared_gate"] == 2 * h * 512 * 3 + 2 * h
    full = layer_flops(registry, model, "full", 1)
    # q 16 x 256, its gate 16 x 256, k and v 2 x 256 each, one pair, o 16 x 256 -> 2048
    assert full["attention.query"] + full["attention.gate"] == 2 * 2 * h * 16 * 256
    assert full["attention.projection"] == 2 * h * 2 * 2 * 256
    assert full["attention.core"] == 2 * 16 * (256 + 256) * 1
    assert full["attention.output"] == 2 * 16 * 256 * h


def test_qwen3_next_intermediate_size_is_unused_when_every_layer_is_moe(registry):
    model = load(config("qwen3-next-80b-a3b"))
    assert "ffn_hidden" not in model.params and registry.select(model).warnings == ()


def test_qwen3_next_reads_full_attention_interval_when_layer_types_is_absent():
    cfg = config("qwen3-next-80b-a3b")
    del cfg["layer_types"]
    cfg["full_attention_interval"] = 2
    assert kinds_of(load(cfg))[:4] == ["gated_deltanet", "full", "gated_deltanet", "full"]


def test_legacy_layer_type_names_are_remapped():
    cfg = config("qwen3-next-80b-a3b")
    cfg["layer_types"] = ["mamba" if t == "linear_attention" else "attention" for t in cfg["layer_types"]]
    assert load(cfg) == load(config("qwen3-next-80b-a3b"))


def test_an_unknown_layer_type_is_refused_by_index():
    cfg = config("qwen3-next-80b-a3b")
    cfg["layer_types"][5] = "linear_atention"
    with pytest.raises(ModelError, match=r"layer_types\[5\] = 'linear_atention': unsupported for model_type qwen3_next; did you mean 'linear_attention'"):
        load(cfg)


# -- Qwen3.5: nested text_config, dense and MoE --------------------------------------------------


def test_qwen3_5_dense_reads_its_text_config(registry):
    model = load(config("qwen3.5-9b"))
    assert kinds_of(model) == (["gated_deltanet"] * 3 + ["full"]) * 8
    gdn = layer_flops(registry, model, "gated_deltanet", 1)
    # in_proj_qkv 4096 x (2 x 16 x 128 + 32 x 128), in_proj_z 4096 x 4096, in_proj_b and _a 4096 x 32
    assert gdn["mixer.projection"] == 2 * 4096 * (8192 + 4096 + 32 + 32)
    assert gdn["mlp"] == 2 * 4096 * 12288 * 3


def test_qwen3_5_moe_has_moe_on_every_layer(registry):
    model = load(config("qwen3.5-35b-a3b"))
    assert kinds_of(model) == (["gated_deltanet"] * 3 + ["full"]) * 10
    full = layer_flops(registry, model, "full", 1)
    assert full["mlp"] == 2 * 2048 * 256 + 2 * 8 * 2048 * 512 * 3


def test_a_text_config_of_another_type_is_refused():
    cfg = config("qwen3.5-9b")
    cfg["text_config"]["model_type"] = "qwen3_5_moe_text"
    with pytest.raises(ModelError, match="text_config.model_type = 'qwen3_5_moe_text': unsupported for model_type qwen3_5"):
        load(cfg)


# -- OLMo-Hybrid: widths derived as __post_init__ derives them ---------------------------------


def test_olmo_hybrid_derives_its_linear_widths(registry):
    cfg = {"model_type": "olmo_hybrid", "hidden_size": 3840, "num_attention_heads": 30, "num_hidden_layers": 6,
           "intermediate_size": 11008, "vocab_size": 100352}
    model = load(cfg)
    # key heads = value heads = 30; d_k = int(0.75 x 3840 / 30) = 96; d_v = 2 d_k = 192
    assert {k: model.params[k] for k in ("linear_key_heads", "linear_value_heads", "linear_key_head_dim", "linear_value_head_dim")} == {
        "linear_key_heads": 30, "linear_value_heads": 30, "linear_key_head_dim": 96, "linear_value_head_dim": 192,
    }
    # i % 4 == 3 is full: layers 3; 6 layers have one
    assert kinds_of(model) == ["gated_deltanet"] * 3 + ["full"] + ["gated_deltanet"] * 2
    cfg["num_hidden_layers"] = 3  # no i % 4 == 3: the last layer becomes full
    assert kinds_of(load(cfg)) == ["gated_deltanet", "gated_deltanet", "full"]


# -- Kimi Linear: layer types from the checkpoint's 1-indexed lists ------------------------------


def test_kimi_linear_reads_the_one_indexed_lists(registry):
    model = load(config("kimi-linear-48b-a3b"))
    kinds = kinds_of(model)
    # full_attn_layers [4, 8, ..., 24, 27] (1-indexed): 0-indexed 3, 7, ..., 23, 26; layer 0 dense
    assert [i for i, k in enumerate(kinds) if k == "full_moe"] == [3, 7, 11, 15, 19, 23, 26]
    assert kinds[0] == "kda_dense" and kinds.count("kda_moe") == 19
    kda = layer_flops(registry, model, "kda_moe", 1)
    h, heads, d = 2304, 32, 128
    # q, k, v; f_a 2304 -> 128, f_b 128 -> 4096; b_proj 2304 -> 32; g_a, g_b as f
    assert kda["mixer.projection"] == 2 * (3 * h * heads * d + 2 * h * d + 2 * d * heads * d + h * heads)
    assert kda["mixer.core"] == 6 * heads * d * d
    full = layer_flops(registry, model, "full_moe", 1)
    # MLA without q_lora: q 2304 -> 32 x (128 + 64); kv_a 2304 -> 512 + 64; kv_b 512 -> 32 x (128 + 128)
    assert full["attention.query"] == 2 * h * 32 * 192
    assert full["attention.projection"] == 2 * h * (512 + 64) + 2 * 512 * 32 * 256


def test_kimi_linear_layer_types_beat_the_checkpoint_lists_and_the_default_rule_applies_last():
    cfg = config("kimi-linear-48b-a3b")
    cfg["layer_types"] = ["linear_attention"] * 26 + ["full_attention"]
    assert kinds_of(load(cfg)).count("full_moe") == 1
    del cfg["layer_types"], cfg["linear_attn_config"]["full_attn_layers"]
    # without both lists: full iff i and i % 4 == 0 (configuration_kimi_linear.py)
    assert [i for i, k in enumerate(kinds_of(load(cfg))) if k.startswith("full")] == [4, 8, 12, 16, 20, 24]


def test_kimi_linear_needs_q_lora_rank_named():
    cfg = config("kimi-linear-48b-a3b")
    del cfg["q_lora_rank"]
    with pytest.raises(ModelError, match="q_lora_rank: missing"):
        load(cfg)


# -- Nemotron-H: the pattern string, and the keys transformers never reads ----------------------


def test_nemotron_3_nano_layout_by_hand(registry):
    model = load(config("nemotron-3-nano-30b-a3b"))
    kinds = kinds_of(model)
    assert (kinds.count("mamba_only"), kinds.count("ffn_moe"), kinds.count("full_only")) == (23, 23, 6)
    mamba = layer_flops(registry, model, "mamba_only", 1)
    h, heads, p, n, g = 2688, 64, 64, 128, 8
    inner = heads * p  # 4096, not expand x hidden = 5376
    assert mamba["mixer.projection"] == 2 * h * (2 * inner + 2 * g * n + heads)
    assert mamba["mixer.core"] == 4 * heads * p * n
    assert "mlp" not in mamba
    moe = layer_flops(registry, model, "ffn_moe", 1)
    # relu^2 experts: up and down only; router 2688 -> 128; shared MLP 3712
    assert moe["mlp"] + moe["mlp.shared"] == 2 * h * 128 + 2 * 6 * h * 1856 * 2 + 2 * h * 3712 * 2
    assert not [slot for slot in moe if slot.startswith("attention")]  # no token mixer at all


def test_nemotron_h_ignores_expand_n_shared_experts_and_num_hidden_layers():
    cfg = config("nemotron-3-nano-30b-a3b")
    changed = {**cfg, "expand": 7, "n_shared_experts": 5, "num_hidden_layers": 3}
    assert load(changed) == load(cfg)


def test_nemotron_h_reads_layers_block_type_and_legacy_names():
    cfg = config("nemotron-3-nano-30b-a3b")
    names = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}  # legacy names, remapped at load
    listed = {k: v for k, v in cfg.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [names[c] for c in cfg["hybrid_override_pattern"]]
    listed["mamba_n_groups"] = listed.pop("n_groups")
    assert load(listed) == load(cfg)


def test_nemotron_3_super_has_latent_moe(registry):
    model = load(config("nemotron-3-super-120b-a12b"))
    moe = layer_flops(registry, model, "ffn_moe", 1)
    # router on 4096; 22 experts of 2688 on the latent 1024; 4096 -> 1024 -> 4096
    assert moe["mlp"] == 2 * 4096 * 512 + 2 * 22 * 1024 * 2688 * 2
    assert moe["mlp.latent"] == 2 * 2 * 4096 * 1024


def test_nemotron_h_refuses_biases_its_weights_do_not_hold():
    cfg = {**config("nemotron-3-nano-30b-a3b"), "use_bias": True}
    with pytest.raises(ModelError, match="use_bias = true: in_proj and out_proj biases"):
        load(cfg)


# -- Falcon-H1, Granite 4.0-H, LFM2: the default-value traps --------------------------------------


def test_falcon_h1_needs_mamba_d_ssm_written():
    cfg = config("falcon-h1-defaults")
    del cfg["mamba_d_ssm"]
    with pytest.raises(ModelError, match=r"mamba_d_ssm: missing \(FalconH1Config then uses 1024 whatever mamba_expand says"):
        load(cfg)
    cfg["mamba_d_ssm"], cfg["mamba_d_head"] = None, "auto"  # null: mamba_expand x hidden_size
    model = load(cfg)
    assert model.params["mamba_heads"] * model.params["mamba_head_dim"] == cfg["mamba_expand"] * cfg["hidden_size"]


def test_falcon_h1_runs_attention_beside_mamba2_on_every_layer(registry):
    model = load(config("falcon-h1-defaults"))
    hybrid = layer_flops(registry, model, "hybrid", 1)
    assert hybrid["attention.core"] > 0 and hybrid["mixer.core"] > 0


def test_granite_needs_layer_types():
    cfg = config("granite-4.0-h-defaults")
    del cfg["layer_types"]
    with pytest.raises(ModelError, match="layer_types: missing"):
        load(cfg)


def test_granite_shared_mlp_beside_the_experts(registry):
    cfg = {**config("granite-4.0-h-defaults"), "layer_types": ["mamba", "attention"] * 20, "num_hidden_layers": 40}
    model = load(cfg)
    layer = layer_flops(registry, model, "full", 1)
    # experts of intermediate_size 11008 (top 2 of 8, gated), shared MLP of shared_intermediate_size 1024
    assert layer["mlp"] == 2 * 4096 * 8 + 2 * 2 * 4096 * 11008 * 3
    assert layer["mlp.shared"] == 2 * 4096 * 1024 * 3


def test_lfm2_needs_its_conv_layers_named_and_adjusts_its_mlp_width():
    cfg = {k: v for k, v in config("lfm2-defaults").items() if k not in ("layer_types", "full_attn_idxs")}
    with pytest.raises(ModelError, match="full_attn_idxs: missing"):
        load(cfg)
    cfg.update(full_attn_idxs=[2, 5], num_hidden_layers=6, intermediate_size=12288, block_multiple_of=256)
    model = load(cfg)
    assert kinds_of(model) == ["conv", "conv", "full", "conv", "conv", "full"]
    # int(2 x 12288 / 3) = 8192, x 1.0, rounded up to a multiple of 256: 8192
    assert {kind.params["ffn_hidden"] for kind in model.kinds.values()} == {8192}


# -- Jamba: periods and offsets, Mamba1 -------------------------------------------------------


def test_jamba_layout_and_a_mamba1_layer_by_hand(registry):
    model = load(config("jamba-defaults"))
    kinds = kinds_of(model)
    # attention iff i % 8 == 4, MoE iff i % 2 == 1 (JambaConfig defaults, written in the file)
    assert kinds[:8] == ["mamba1_dense", "mamba1_moe", "mamba1_dense", "mamba1_moe", "full_dense", "mamba1_moe", "mamba1_dense", "mamba1_moe"]
    mamba = layer_flops(registry, model, "mamba1_dense", 1)
    h, inner, rank, n = 4096, 8192, 256, 16  # mamba_expand 2; mamba_dt_rank "auto": ceil(4096 / 16)
    assert mamba["mixer.projection"] == 2 * (h * 2 * inner + inner * (rank + 2 * n) + rank * inner)
    assert mamba["mixer.core"] == 4 * inner * n
    cfg = {**config("jamba-defaults"), "mamba_dt_rank": "auto", "hidden_size": 4000}
    assert load(cfg).params["mamba_dt_rank"] == 250


def test_jamba_refuses_an_offset_beyond_its_period():
    cfg = {**config("jamba-defaults"), "attn_layer_offset": 8}
    with pytest.raises(ModelError, match="attn_layer_offset = 8: expected below attn_layer_period = 8"):
        load(cfg)


def test_per_layer_config_attributes_are_refused_by_name():
    cfg = {**config("qwen3-next-80b-a3b"), "per_layer_config": {"03": {"head_dim": 128}}}
    with pytest.raises(ModelError, match=r"per_layer_config\['03'\]\.head_dim: not read per layer by the qwen3_next reader"):
        load(cfg)
