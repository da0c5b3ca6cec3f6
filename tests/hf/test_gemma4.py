"""Gemma 4 (gemma4 / gemma4_text): per-layer head widths, keys as values, cross-layer KV sharing,
per-layer embeddings and experts beside the MLP, against hand arithmetic and the traps of its config.

Every expected number is written out per layer from the published dimensions, matmul by matmul
(2 FLOPs per multiply-add); the pairs of each mask by summing min(q + 1, W) over the queries.
"""

from __future__ import annotations

import pytest
from hf_data import path
from oracles import causal_pairs, window_pairs

import flopsreg


def gemma4_layer(s, h, heads, kv_heads, d, pairs, ffn, *, k_eq_v=False, reuse=False):
    """One Gemma 4 decoder layer: q, k (and v unless k = v or reused), core, o, GeGLU MLP."""
    kv = 0 if reuse else 2 * s * h * kv_heads * d * (1 if k_eq_v else 2)
    return (
        2 * s * h * heads * d  # q_proj
        + kv  # k_proj, v_proj
        + 2 * heads * d * pairs + 2 * heads * d * pairs  # QK^T, PV over the attended pairs
        + 2 * s * heads * d * h  # o_proj
        + 3 * 2 * s * h * ffn  # gate_proj, up_proj, down_proj
    )


def test_gemma_4_31b(registry):
    """50 sliding layers (head 256, 16 KV heads, window 1024), 10 full (head 512, K = V, 4 KV heads)."""
    s, h, V = 8192, 5376, 262144
    sliding = gemma4_layer(s, h, 32, 16, 256, window_pairs(s, 1024), 21504)
    full = gemma4_layer(s, h, 32, 4, 512, causal_pairs(s), 21504, k_eq_v=True)
    model = flopsreg.Model.from_hf_config(path("gemma-4-31b"))
    assert registry.evaluate(model, seq_len=s).forward == 50 * sliding + 10 * full + 2 * s * h * V


def test_gemma_4_26b_a4b_runs_its_experts_beside_the_dense_mlp(registry):
    s, h, V = 4096, 2816, 262144
    experts = 2 * s * h * 128 + 8 * 3 * 2 * s * h * 704  # router hidden -> 128, then top-8 GeGLU experts of 704
    sliding = gemma4_layer(s, h, 16, 8, 256, window_pairs(s, 1024), 2112) + experts
    full = gemma4_layer(s, h, 16, 2, 512, causal_pairs(s), 2112, k_eq_v=True) + experts
    model = flopsreg.Model.from_hf_config(path("gemma-4-26b-a4b"))
    assert registry.evaluate(model, seq_len=s).forward == 25 * sliding + 5 * full + 2 * s * h * V


def small(**changes) -> dict:
    """A 12-layer gemma4_text config with every feature switched by *changes*."""
    base = {
        "model_type": "gemma4_text", "num_hidden_layers": 12, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32, "intermediate_size": 96, "vocab_size": 128,
        "sliding_window": 8, "hidden_size_per_layer_input": 0,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


def kinds(model) -> list[str]:
    return [layer.kind for layer in model.layers]


def test_default_layout_is_five_sliding_to_one_full_and_the_last_layer_is_full():
    model = flopsreg.Model.from_hf_config(small(num_hidden_layers=8))
    assert kinds(model) == ["sliding"] * 5 + ["full", "sliding", "full"]
    given = flopsreg.Model.from_hf_config(small(num_hidden_layers=3, layer_types=["sliding_attention"] * 3))
    assert kinds(given) == ["sliding", "sliding", "full"]


def test_full_layers_get_the_global_head_width_and_kv_heads_only_with_k_eq_v():
    plain = flopsreg.Model.from_hf_config(small(num_global_key_value_heads=1))
    full = plain.layers[5]
    assert (full.params["head_dim"], full.params["kv_heads"], "k_eq_v" in full.flags) == (32, 2, False)
    k_eq_v = flopsreg.Model.from_hf_config(small(num_global_key_value_heads=1, attention_k_eq_v=True))
    full, sliding = k_eq_v.layers[5], k_eq_v.layers[0]
    assert (full.params["head_dim"], full.params["kv_heads"], "k_eq_v" in full.flags) == (32, 1, True)
    assert (sliding.params["head_dim"], sliding.params["kv_heads"], "k_eq_v" in sliding.flags) == (16, 2, False)


def test_per_layer_config_as_transformers_saves_it():
    model = flopsreg.Model.from_hf_config(small(global_head_dim=..., per_layer_config={"05": {"head_dim": 48}, "11": {"head_dim": 48, "num_key_value_heads": 1}}))
    assert [layer.params["head_dim"] for layer in model.layers] == [16] * 5 + [48] + [16] * 5 + [48]
    assert model.layers[11].params["kv_heads"] == 1 and model.layers[5].params["kv_heads"] == 2
    with pytest.raises(flopsreg.ModelError, match=r"per_layer_config\['05'\]\.skip: not read per layer by the gemma4_text reader"):
        flopsreg.Model.from_hf_config(small(per_layer_config={"05": {"skip": ["mlp"]}}))


def test_kv_sharing_layers_project_no_keys_or_values_and_double_their_mlp(registry):
    s, h = 29, 64
    model = flopsreg.Model.from_hf_config(small(num_kv_shared_layers=4, use_double_wide_mlp=True))
    assert kinds(model)[-5:] == ["sliding_dense", "sliding_reuse_dense_wide", "sliding_reuse_dense_wide", "sliding_reuse_dense_wide", "full_reuse_dense_wide"]
    flops = [layer.flops for layer in registry.evaluate(model, seq_len=s).layers]
    assert flops[8] == gemma4_layer(s, h, 4, 2, 16, window_pairs(s, 8), 2 * 96, reuse=True)
    assert flops[11] == gemma4_layer(s, h, 4, 2, 32, causal_pairs(s), 2 * 96, reuse=True)
    assert flops[7] == gemma4_layer(s, h, 4, 2, 16, window_pairs(s, 8), 96)


def test_per_layer_embeddings_when_the_config_gives_a_width(registry):
    s, h, p, L = 29, 64, 8, 12
    with_ple = flopsreg.Model.from_hf_config(small(hidden_size_per_layer_input=p))
    without = flopsreg.Model.from_hf_config(small())
    # per layer: gate hidden -> p, projection p -> hidden; once: hidden -> L x p
    difference = L * (2 * s * h * p + 2 * s * p * h) + 2 * s * h * L * p
    assert registry.evaluate(with_ple, seq_len=s).forward - registry.evaluate(without, seq_len=s).forward == difference


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_size_per_layer_input": ...}, r"hidden_size_per_layer_input: missing \(Gemma4TextConfig defaults it to 256"),
        ({"global_head_dim": ...}, r"global_head_dim: missing \(the head width of the full layers; transformers would use 512"),
        ({"num_kv_shared_layers": 13}, r"num_kv_shared_layers = 13: the layers before the sharing ones must include every layer type"),
        ({"num_kv_shared_layers": 7}, r"num_kv_shared_layers = 7"),
        ({"use_bidirectional_attention": "all"}, r"use_bidirectional_attention = 'all': bidirectional Gemma 4 attention is not supported"),
        ({"enable_moe_block": True}, r"num_experts: missing"),
        ({"layer_types": ["chunked_attention"] * 12}, r"layer_types\[0\] = 'chunked_attention': unsupported for model_type gemma4_text"),
    ],
)
def test_traps_are_refused_naming_the_key(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config(small(**changes))


def test_the_wrapper_reads_its_text_config(registry):
    wrapped = {"model_type": "gemma4", "text_config": small()}
    assert registry.evaluate(flopsreg.Model.from_hf_config(wrapped), seq_len=9).forward == registry.evaluate(
        flopsreg.Model.from_hf_config(small()), seq_len=9
    ).forward


def test_the_latex_legend_gives_the_head_width_of_each_kind(registry):
    """Per-kind values follow the meaning, each with the layers that set it."""
    text = registry.evaluate(flopsreg.Model.from_hf_config(path("gemma-4-31b")), seq_len=4096).latex()
    assert r"width of one attention head: $256$ in sliding layers, $512$ in full layers;" in text
    assert r"key/value heads: $16$ in sliding layers, $4$ in full layers;" in text
