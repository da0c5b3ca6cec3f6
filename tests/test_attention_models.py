"""Attention FLOPs of real model shapes against arithmetic written out matmul by matmul.

Each expected number below is hand arithmetic: one term per matrix multiply (2 FLOPs per
multiply-add), with the attended pairs of the mask written as a closed form or a per-query sum.
Only attention is counted here: no MLP, no logits (those patterns are behind flags not set).
"""

from __future__ import annotations

from helpers_models import gemma_like, gqa_model, one_kind_model
from oracles import causal_pairs, chunk_pairs, window_pairs

# DeepSeek-V3 attention (config.json of deepseek-ai/DeepSeek-V3).
DSV3 = {
    "hidden": 7168,
    "heads": 128,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
}
Q_LORA_RANK = 1536





def gqa_layer(s: int, *, hidden: int, heads: int, kv_heads: int, head_dim: int, attended: int) -> int:
    """One GQA attention layer, matmul by matmul."""
    return (
        2 * s * hidden * (heads * head_dim)  # q_proj
        + 2 * s * hidden * (kv_heads * head_dim)  # k_proj
        + 2 * s * hidden * (kv_heads * head_dim)  # v_proj
        + 2 * heads * head_dim * attended  # QK^T over attended pairs
        + 2 * heads * head_dim * attended  # PV over attended pairs
        + 2 * s * (heads * head_dim) * hidden  # o_proj
    )


def test_llama_3_8b_full_causal_gqa_attention_forward(registry):
    """Llama 3 8B attention: 32 layers of GQA (32 query heads, 8 KV heads, head_dim 128), s = 4096."""
    s = 4096
    model = gqa_model(hidden=4096, heads=32, kv_heads=8, head_dim=128, layers=32)
    pairs = 4096 * 4097 // 2  # causal triangle: 8,390,656 pairs
    per_layer = (
        2 * s * 4096 * (32 * 128)  # q_proj: 4096 -> 32 x 128
        + 2 * s * 4096 * (8 * 128)  # k_proj: 4096 -> 8 x 128
        + 2 * s * 4096 * (8 * 128)  # v_proj: 4096 -> 8 x 128
        + 2 * 32 * 128 * pairs  # QK^T, every query head
        + 2 * 32 * 128 * pairs  # PV, every query head
        + 2 * s * (32 * 128) * 4096  # o_proj: 32 x 128 -> 4096
    )
    result = registry.evaluate(model, seq_len=s)
    assert [layer.flops for layer in result.layers] == [per_layer] * 32
    assert result.forward == 32 * per_layer
    assert result.training == 3 * 32 * per_layer
    assert result.layers[0].patterns["attention.mask"] == "full_causal"
    assert result.layers[0].patterns["attention.projection"] == "gqa_projection"
    assert result.warnings == ()


def test_gemma_3_4b_like_sliding_model_training_attention_flops(registry):
    """Gemma 3 4B: 5 local (window 1024) : 1 global over 34 layers, s = 4096, training.

    The research value: core 3,647,043,796,992 plus the linear layers
    6 * 34 * (2560 * 4096 + 2048 * 2560) * 4096.
    """
    s = 4096
    local_layers = sum(1 for i in range(34) if (i + 1) % 6 != 0)  # layers 5, 11, ... are global
    global_layers = 34 - local_layers
    assert (local_layers, global_layers) == (29, 5)
    local_pairs = 1024 * 1025 // 2 + (4096 - 1024) * 1024  # triangle, then 1024 keys per query
    assert local_pairs == window_pairs(s, 1024)
    global_pairs = 4096 * 4097 // 2
    core = 2 * 8 * (256 + 256) * (local_layers * local_pairs + global_layers * global_pairs)  # QK^T + PV
    linear = 34 * (
        2 * s * 2560 * (8 * 256)  # q_proj: 2560 -> 8 x 256
        + 2 * s * 2560 * (2 * 4 * 256)  # k_proj + v_proj: 2560 -> 4 x 256 each
        + 2 * s * (8 * 256) * 2560  # o_proj
    )
    assert 3 * core == 3_647_043_796_992
    assert 3 * linear == 6 * 34 * (2560 * 4096 + 2048 * 2560) * 4096

    result = registry.evaluate(gemma_like(), seq_len=s)
    assert result.training == 3_647_043_796_992 + 6 * 34 * (2560 * 4096 + 2048 * 2560) * 4096
    assert result.forward == core + linear
    masks = [layer.patterns["attention.mask"] for layer in result.layers]
    assert masks == ["full_causal" if (i + 1) % 6 == 0 else "sliding_window" for i in range(34)]


def test_gqa_with_sliding_window_mistral_7b_shape(registry):
    """Mistral 7B v0.1: GQA 32/8 heads, head_dim 128, window 4096, 32 layers, s = 16384."""
    s, window = 16384, 4096
    model = gqa_model(
        hidden=4096, heads=32, kv_heads=8, head_dim=128, layers=32, flags={"sliding_window"}, window=window
    )
    pairs = 4096 * 4097 // 2 + (16384 - 4096) * 4096  # triangle of the first W queries, then W each
    assert pairs == window_pairs(s, window)
    per_layer = (
        2 * s * 4096 * (32 * 128)  # q_proj
        + 2 * s * 4096 * (8 * 128) * 2  # k_proj + v_proj
        + 2 * 32 * (128 + 128) * pairs  # QK^T + PV
        + 2 * s * (32 * 128) * 4096  # o_proj
    )
    assert per_layer == gqa_layer(s, hidden=4096, heads=32, kv_heads=8, head_dim=128, attended=pairs)
    result = registry.evaluate(model, seq_len=s, batch=2)
    assert result.forward == 2 * 32 * per_layer
    assert result.layers[0].patterns["attention.mask"] == "sliding_window"


def mla_layer_q_lora(s: int, attended: int) -> int:
    """One DeepSeek-V3 MLA layer (not absorbed) with the low-rank query path."""
    q = 2 * s * (7168 * 1536 + 1536 * 128 * 192)  # q_a: 7168 -> 1536; q_b: 1536 -> 128 x (128 + 64)
    kv = 2 * s * (7168 * (512 + 64) + 512 * 128 * (128 + 128))  # kv_a: -> latent + rope key; kv_b: -> k_nope, v
    core = 2 * 128 * (192 + 128) * attended  # QK^T at width 192, PV at width 128
    out = 2 * s * 128 * 128 * 7168  # o_proj: 128 x 128 -> 7168
    return q + kv + core + out


def mla_layer_full_query(s: int, attended: int) -> int:
    """One DeepSeek MLA layer (not absorbed) whose query is one hidden -> heads x 192 matmul."""
    q = 2 * s * 7168 * 128 * 192  # q_proj: 7168 -> 128 x (128 + 64)
    kv = 2 * s * (7168 * (512 + 64) + 512 * 128 * (128 + 128))
    core = 2 * 128 * (192 + 128) * attended
    out = 2 * s * 128 * 128 * 7168
    return q + kv + core + out


def test_mla_with_low_rank_query_deepseek_v3(registry):
    """Flags {mla, q_lora}: query through the 1536 latent, K/V through the 512 latent."""
    s = 4096
    model = one_kind_model(layers=61, flags={"mla", "q_lora"}, params={**DSV3, "q_lora_rank": Q_LORA_RANK})
    result = registry.evaluate(model, seq_len=s)
    patterns = result.layers[0].patterns
    assert patterns["attention.query"] == "low_rank_query"
    assert patterns["attention.projection"] == "mla_projection"
    assert result.layers[0].flops == mla_layer_q_lora(s, causal_pairs(s))
    assert result.forward == 61 * mla_layer_q_lora(s, causal_pairs(s))
    assert result.warnings == ()


def test_mla_without_low_rank_query(registry):
    """Flag {mla} only: the query is the plain hidden -> heads x (nope + rope) projection."""
    s = 4096
    model = one_kind_model(layers=3, flags={"mla"}, params=DSV3)
    result = registry.evaluate(model, seq_len=s)
    assert result.layers[0].patterns["attention.query"] == "query_projection"
    assert result.forward == 3 * mla_layer_full_query(s, causal_pairs(s))
    assert result.warnings == ()


def test_q_lora_rank_without_the_q_lora_flag_is_unused_and_warned(registry):
    """A parameter never switches a pattern on: q_lora_rank alone keeps the plain query path."""
    s = 1024
    model = one_kind_model(layers=2, flags={"mla"}, params={**DSV3, "q_lora_rank": Q_LORA_RANK})
    result = registry.evaluate(model, seq_len=s)
    assert result.layers[0].patterns["attention.query"] == "query_projection"
    assert result.forward == 2 * mla_layer_full_query(s, causal_pairs(s))
    assert any("q_lora_rank" in warning for warning in result.warnings), result.warnings


def test_mla_with_sliding_window(registry):
    """MLA dims with a 1024-key sliding window: only the core's pairs change."""
    s, window = 4096, 1024
    model = one_kind_model(
        layers=2,
        flags={"mla", "q_lora", "sliding_window"},
        params={**DSV3, "q_lora_rank": Q_LORA_RANK},
        kind_params={"window": window},
    )
    pairs = 1024 * 1025 // 2 + (4096 - 1024) * 1024
    assert pairs == window_pairs(s, window)
    result = registry.evaluate(model, seq_len=s)
    assert result.layers[1].patterns["attention.mask"] == "sliding_window"
    assert result.forward == 2 * mla_layer_q_lora(s, pairs)
    causal = one_kind_model(layers=2, flags={"mla", "q_lora"}, params={**DSV3, "q_lora_rank": Q_LORA_RANK})
    full = registry.evaluate(causal, seq_len=s)
    assert full.forward - result.forward == 2 * 2 * 128 * (192 + 128) * (causal_pairs(s) - pairs)


def test_chunked_wins_over_sliding_window_on_a_layer_with_both_flags(registry):
    """Llama 4 Scout attention with both mask flags: chunked (precedence 30) beats sliding (20)."""
    s = 32768
    model = gqa_model(
        hidden=5120, heads=40, kv_heads=8, head_dim=128, layers=2,
        flags={"chunked", "sliding_window"}, chunk=8192, window=4096,
    )
    pairs = 4 * (8192 * 8193 // 2)  # four full chunks of 8192, each a causal triangle
    assert pairs == chunk_pairs(s, 8192) == 134_234_112
    plan = registry.select(model)
    selection = next(sel for sel in plan.kinds[0].selections if sel.slot == "attention.mask")
    assert selection.pattern.name == "chunked"
    assert [p.name for p in selection.applicable][:2] == ["chunked", "sliding_window"]
    result = registry.evaluate(model, seq_len=s)
    assert result.layers[0].patterns["attention.mask"] == "chunked"
    per_layer = gqa_layer(s, hidden=5120, heads=40, kv_heads=8, head_dim=128, attended=pairs)
    assert result.forward == 2 * per_layer
    as_sliding = gqa_layer(s, hidden=5120, heads=40, kv_heads=8, head_dim=128, attended=window_pairs(s, 4096))
    assert result.forward != 2 * as_sliding
    assert any("window" in warning for warning in result.warnings), result.warnings


def test_gqa_model_carrying_mla_parameters_stays_gqa_and_warns(registry):
    """The slime bug: MLA parameters with values but no mla flag must not switch MLA on."""
    s = 2048
    dims = {"hidden": 2048, "heads": 16, "kv_heads": 4, "head_dim": 128}
    model = one_kind_model(
        layers=4,
        params={**dims, "kv_lora_rank": 32, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64},
    )
    result = registry.evaluate(model, seq_len=s)
    assert result.layers[0].patterns["attention.projection"] == "gqa_projection"
    assert result.forward == 4 * gqa_layer(s, **dims, attended=causal_pairs(s))
    assert any("kv_lora_rank" in warning for warning in result.warnings), result.warnings
    for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        assert any(name in warning for warning in result.warnings), (name, result.warnings)
