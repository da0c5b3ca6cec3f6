"""The ``glm5_next`` reader (GLM-5.3-Flash): its layout, a layer counted by hand, and its refusals."""

from __future__ import annotations

import pytest
from hf_data import config

import flopsreg

NAME = "glm-5.3-flash-defaults"


def glm(**changes) -> dict:
    """The defaults config with *changes*; the per-layer lists to_dict wrote out dropped unless given (null = absent)."""
    data = config(NAME)
    for key in ("layer_types", "mlp_layer_types", "indexer_types"):
        data["text_config"].pop(key)
    data["text_config"].update(changes)
    return data


def patterns(registry, model, layer: int) -> dict[str, str]:
    plan = registry.select(model)
    unit = next(kind for kind in plan.kinds if kind.name == model.layers[layer].kind)
    return {sel.slot: sel.pattern.name for sel in unit.selections}


def unit_total(result, name: str) -> int:
    return next(total for unit, total in result.unit_totals.items() if unit.name == name)


def test_default_layout_kda_three_of_four_dense_first_three(registry):
    model = flopsreg.Model.from_hf_config(glm())
    kinds = [layer.kind for layer in model.layers]
    assert len(kinds) == 45
    assert [i for i, kind in enumerate(kinds) if kind.startswith("kpool")] == list(range(3, 45, 4))
    assert [i for i in range(45) if patterns(registry, model, i)["mlp"] == "dense_mlp"] == [0, 1, 2]
    assert patterns(registry, model, 3)["attention.mask"] == "dsa_kpool_topk_tail"
    assert patterns(registry, model, 3)["attention.topk_indexer"] == "dsa_kpool_indexer"
    assert patterns(registry, model, 0)["mixer.core"] == "kda_core"


def test_an_indexed_moe_layer_by_hand(registry):
    """Layer 3 at s = 4096, every matmul written out with the class defaults."""
    s, h, H, r_q, r_kv, nope, v = 4096, 4096, 64, 1536, 512, 256, 256
    heads_i, dim_i, topk, pool, n, experts, k, width = 32, 128, 2048, 16, 4, 288, 8, 2048
    pairs = sum(min((q + 1) // pool, topk // pool) * pool + (q + 1) % pool for q in range(s))  # pools + tail
    pool_pairs = sum((q + 1) // pool for q in range(s))  # causal complete pools scored
    mla = (
        2 * s * h * r_q + 2 * s * r_q * H * nope  # q_a_proj, q_b_proj (NoPE: no rope part)
        + 2 * s * h * r_kv + 2 * s * r_kv * H * (nope + v)  # kv_a_proj_with_mqa, kv_b_proj
        + 2 * pairs * H * (nope + v) + 2 * s * H * v * h  # core over the selected pairs, o_proj
    )
    indexer = 2 * s * (r_q * heads_i * dim_i + h * dim_i + h * dim_i + h * heads_i) + 2 * pool_pairs * heads_i * (dim_i + 1)
    moe = 2 * s * h * experts + 6 * s * k * h * width + 6 * s * h * width  # router, 8 routed, 1 shared
    mhc = 2 * (2 * s * n * h * (2 + n) * n + 2 * s * n * n * h)  # attn_hc and ffn_hc: fn and comb mix
    model = flopsreg.Model.from_hf_config(glm())
    result = registry.evaluate(model, seq_len=s)
    assert unit_total(result, model.layers[3].kind) == mla + indexer + moe + mhc


def test_mean_head_and_untied_logits(registry):
    model = flopsreg.Model.from_hf_config(glm())
    assert "mhc_mean_head" in model.flags
    assert unit_total(registry.evaluate(model, seq_len=16), "model") == 2 * 16 * 4096 * 154880  # lm_head only


def test_without_the_tail_and_with_shared_top_k(registry):
    model = flopsreg.Model.from_hf_config(glm(num_hidden_layers=8, index_kpool_always_select_tail=False,
                                              layer_types=["linear_attention"] * 3 + ["full_attention"] * 3 + ["linear_attention"] * 2,
                                              indexer_types=["full"] * 4 + ["shared"] + ["full"] * 3))
    assert patterns(registry, model, 3)["attention.mask"] == "dsa_kpool_topk"
    assert patterns(registry, model, 4)["attention.mask"] == "dsa_kpool_topk"
    assert "attention.topk_indexer" not in patterns(registry, model, 4)


def test_explicit_mlp_layer_types_win(registry):
    model = flopsreg.Model.from_hf_config(glm(num_hidden_layers=4, mlp_layer_types=["sparse"] * 4, first_k_dense_replace=1))
    assert [patterns(registry, model, i)["mlp"] for i in range(4)] == ["moe"] * 4


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"first_k_dense_replace": 1}, r"text_config.first_k_dense_replace = 1: Glm5NextTextConfig ignores it"),
        ({"indexer_types": ["shared"] * 45}, r"text_config.indexer_types\[3\] = 'shared': the layer before is not"),
        ({"qk_rope_head_dim": 64}, r"text_config.qk_rope_head_dim = 64: model_type glm5_next_text runs MLA without RoPE"),
        ({"index_topk": 2050}, r"text_config.index_topk = 2050: expected a multiple of index_kpool = 16"),
        ({"attention_bias": True}, r"text_config.attention_bias = true"),
        ({"q_lora_rank": None}, r"text_config.q_lora_rank: missing or null"),
        ({"num_key_value_heads": 8}, r"text_config.num_key_value_heads = 8: expected num_attention_heads = 64"),
        ({"layer_types": ["sliding_attention"] * 45}, r"text_config.layer_types\[0\] = 'sliding_attention'"),
    ],
)
def test_refusals_name_the_key(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config(glm(**changes))
