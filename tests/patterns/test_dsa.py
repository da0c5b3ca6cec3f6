"""DeepSeek sparse attention (top-k mask, lightning indexer) and absorbed MLA against brute force.

The top-k mask is enumerated by really selecting the K best-scoring causal keys of each query
(arbitrary scores: the count does not depend on which keys win); the indexer and absorbed MLA
are counted by literal loops over tokens, heads and pairs, one multiply-add at a time.
"""

from __future__ import annotations

import attrs
import pytest
from hf_data import config, path

import flopsreg
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.dsa_topk import DSA_TOPK
from flopsreg.plugins.testing import check_mask_pattern, check_prefix_form


def _score(q: int, k: int) -> int:
    """An arbitrary deterministic score of key k for query q (what the indexer would compute)."""
    return (q * 7919 + k * 104729) % 1009


def topk_visible(q: int, k: int, p: dict) -> bool:
    """Key k is among the index_topk best-scoring keys 0..q of query q."""
    if k > q:
        return False
    ranked = sorted(range(q + 1), key=lambda key: (-_score(q, key), key))
    return k in ranked[: p["index_topk"]]


def test_topk_pairs_equal_the_selected_keys():
    check_mask_pattern(DSA_TOPK, topk_visible, params=[{"index_topk": k} for k in range(1, 10)], max_len=20)


def test_topk_pairs_after_a_cached_prefix():
    """Decode and chunked prefill: the new queries' top-k over the cached and new keys."""
    check_prefix_form(DSA_TOPK, topk_visible, params=[{"index_topk": k} for k in (1, 3, 5)], max_len=10, max_cached=10)


H, HEADS, R_Q, R_KV, NOPE, ROPE, V = 16, 4, 12, 10, 6, 2, 5
IDX_HEADS, IDX_DIM, TOPK = 3, 4, 5
DSA_PARAMS = {
    "hidden": H, "heads": HEADS, "q_lora_rank": R_Q, "kv_lora_rank": R_KV, "qk_nope_head_dim": NOPE,
    "qk_rope_head_dim": ROPE, "v_head_dim": V, "index_heads": IDX_HEADS, "index_head_dim": IDX_DIM,
    "index_topk": TOPK, "vocab": 32,
}


def dsa_model(flags: set[str]) -> flopsreg.Model:
    return flopsreg.Model.uniform("dsa-toy", layers=1, flags={"mla", "q_lora", "dsa", *flags}, **DSA_PARAMS)


def indexer_loop(seq_len: int, cached: int = 0) -> int:
    """Multiply-adds of the indexer for queries cached..cached+seq_len-1, counted one by one, times 2."""
    macs = 0
    for q in range(cached, cached + seq_len):
        macs += R_Q * IDX_HEADS * IDX_DIM  # wq_b: query latent -> index heads x index width
        macs += H * IDX_DIM  # wk: hidden -> one index key
        macs += H * IDX_HEADS  # weights_proj: hidden -> one weight per index head
        for k in range(q + 1):  # every causal key is scored
            for _head in range(IDX_HEADS):
                macs += IDX_DIM  # q . k
                macs += 1  # weight x ReLU(score), summed over heads
    return 2 * macs


@pytest.mark.parametrize(("seq_len", "cached"), [(1, 0), (7, 0), (23, 0), (1, 40), (6, 9)])
def test_indexer_counts_every_causal_pair_of_every_index_head(registry, seq_len, cached):
    unit = registry.select(dsa_model({"dsa_indexer"})).kinds[0]
    assert unit.flops(seq_len, cached)["attention.topk_indexer"] == indexer_loop(seq_len, cached)


def test_a_layer_sharing_another_layers_topk_has_no_indexer(registry):
    unit = registry.select(dsa_model(set())).kinds[0]
    assert "attention.topk_indexer" not in unit.flops(23)
    assert {sel.slot: sel.pattern.name for sel in unit.selections}["attention.mask"] == "dsa_topk"


def absorbed_loop(seq_len: int) -> int:
    """The absorbed MLA projections and core of one causal DSA sequence, counted one by one."""
    macs = 0
    for q in range(seq_len):
        macs += H * (R_KV + ROPE)  # kv_a: hidden -> latent and the shared rope key
        for _head in range(HEADS):
            macs += NOPE * R_KV  # the query's nope part into the latent (W_UK absorbed)
            macs += R_KV * V  # the latent output back to the value width (W_UV absorbed)
            for _key in range(min(q + 1, TOPK)):
                macs += R_KV + ROPE  # score over latent + rope
                macs += R_KV  # weighted sum of latents
    return 2 * macs


def nonabsorbed_loop(seq_len: int) -> int:
    """The same, as transformers runs it: keys and values expanded per head (kv_b_proj)."""
    macs = 0
    for q in range(seq_len):
        macs += H * (R_KV + ROPE)  # kv_a
        macs += R_KV * HEADS * (NOPE + V)  # kv_b: latent -> per-head nope keys and values
        for _head in range(HEADS):
            for _key in range(min(q + 1, TOPK)):
                macs += (NOPE + ROPE) + V
    return 2 * macs


@pytest.mark.parametrize("seq_len", [1, 4, 17])
def test_absorbed_mla_is_its_own_pattern_under_an_explicit_flag(registry, seq_len):
    default = registry.select(dsa_model({"dsa_indexer"})).kinds[0].flops(seq_len)
    absorbed = registry.select(dsa_model({"dsa_indexer", "mla_absorbed"})).kinds[0].flops(seq_len)
    core_and_kv = ("attention.projection", "attention.core")
    assert sum(default[slot] for slot in core_and_kv) == nonabsorbed_loop(seq_len)
    assert sum(absorbed[slot] for slot in core_and_kv) == absorbed_loop(seq_len)
    # The query, output, indexer and head are the same in both forms.
    assert {k: v for k, v in default.items() if k not in core_and_kv} == {
        k: v for k, v in absorbed.items() if k not in core_and_kv
    }


def test_absorbed_mla_patterns_are_selected_and_explained(registry):
    result = registry.evaluate(dsa_model({"dsa_indexer", "mla_absorbed"}), seq_len=8)
    assert result.layers[0].patterns["attention.core"] == "mla_absorbed_core"
    assert result.layers[0].patterns["attention.projection"] == "mla_absorbed_projection"


# --- the Hugging Face readers ---------------------------------------------------------------


def dsv32_layer(s: int, dense: bool, indexer: bool) -> int:
    """One DeepSeek-V3.2 layer at s tokens, written out from the published dimensions."""
    h, heads, r_q, r_kv, nope, rope, v = 7168, 128, 1536, 512, 128, 64, 128
    idx_heads, idx_dim, k = 64, 128, 2048
    topk_pairs = k * (k + 1) // 2 + (s - k) * k  # queries 0..k-1 see q+1 keys, later ones k
    causal = s * (s + 1) // 2
    attention = (
        2 * s * h * r_q + 2 * s * r_q * heads * (nope + rope)  # q_a_proj, q_b_proj
        + 2 * s * h * (r_kv + rope) + 2 * s * r_kv * heads * (nope + v)  # kv_a_proj_with_mqa, kv_b_proj
        + 2 * heads * (nope + rope) * topk_pairs + 2 * heads * v * topk_pairs  # QK^T, PV over the top-k
        + 2 * s * heads * v * h  # o_proj
    )
    index = (
        2 * s * r_q * idx_heads * idx_dim + 2 * s * h * idx_dim + 2 * s * h * idx_heads  # wq_b, wk, weights_proj
        + 2 * causal * idx_heads * idx_dim + 2 * causal * idx_heads  # scores, head-weighted sum
    )
    mlp = 3 * 2 * s * h * 18432 if dense else 2 * s * h * 256 + 8 * 3 * 2 * s * h * 2048 + 3 * 2 * s * h * 2048
    return attention + (index if indexer else 0) + mlp


def test_deepseek_v32_published_config(registry):
    s = 8192
    model = flopsreg.Model.from_hf_config(path("deepseek-v3.2"))
    expected = 3 * dsv32_layer(s, True, True) + 58 * dsv32_layer(s, False, True) + 2 * s * 7168 * 129280
    assert registry.evaluate(model, seq_len=s).forward == expected


def test_below_index_topk_dsa_attends_to_every_causal_key(registry):
    """index_topk only sparsifies queries past position 2048: at 1024 tokens the pairs are causal."""
    model = flopsreg.Model.from_hf_config(path("deepseek-v3.2"))
    unit = registry.select(model).kinds[0]
    pairs = compile_exact(unit.quantities["pairs"])({**model.merged(unit.name)[1], "seq_len": 1024})
    assert pairs == 1024 * 1025 // 2


def glm(**changes) -> dict:
    data = config("glm-5")
    data.update(changes)
    return data


def indexer_layers(model) -> list[int]:
    return [layer.index for layer in model.layers if "dsa_indexer" in layer.flags]


def test_glm5_default_runs_an_indexer_on_every_layer():
    model = flopsreg.Model.from_hf_config(glm())
    assert indexer_layers(model) == list(range(78))
    assert all("dsa" in layer.flags for layer in model.layers)


def test_glm5_index_topk_freq_shares_topk_between_indexer_layers():
    # full iff max(i - 2 + 1, 0) % 4 == 0: layers 0, 1, 5, 9, ...
    model = flopsreg.Model.from_hf_config(glm(num_hidden_layers=10, index_topk_freq=4))
    assert indexer_layers(model) == [0, 1, 5, 9]
    # offset 0: full iff (i + 1) % 2 == 0, layers 1, 3, 5; layer 0 would share a top-k nobody made
    with pytest.raises(flopsreg.ModelError, match=r"indexer_types\[0\] = 'shared'"):
        flopsreg.Model.from_hf_config(glm(num_hidden_layers=6, index_topk_freq=2, index_skip_topk_offset=0))


def test_glm5_explicit_indexer_types_and_pattern():
    model = flopsreg.Model.from_hf_config(glm(num_hidden_layers=4, indexer_types=["full", "shared", "shared", "full"]))
    assert indexer_layers(model) == [0, 3]
    model = flopsreg.Model.from_hf_config(glm(num_hidden_layers=4, index_topk_pattern="FSFS"))
    assert indexer_layers(model) == [0, 2]
    with pytest.raises(flopsreg.ModelError, match=r"indexer_types\[1\] = 'half'"):
        flopsreg.Model.from_hf_config(glm(num_hidden_layers=2, indexer_types=["full", "half"]))


def test_shared_layers_cost_the_topk_attention_but_no_indexer(registry):
    s = 4096
    shared = flopsreg.Model.from_hf_config(glm(num_hidden_layers=4, indexer_types=["full", "shared", "shared", "shared"]))
    full = flopsreg.Model.from_hf_config(glm(num_hidden_layers=4))
    causal = s * (s + 1) // 2
    one_indexer = (
        2 * s * 2048 * 32 * 128 + 2 * s * 6144 * 128 + 2 * s * 6144 * 32  # wq_b, wk, weights_proj
        + 2 * causal * 32 * 128 + 2 * causal * 32  # scores and weighted sum over causal pairs
    )
    assert registry.evaluate(full, seq_len=s).forward - registry.evaluate(shared, seq_len=s).forward == 3 * one_indexer


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"layer_types": ["full_attention"] * 78}, r"layer_types\[0\] = 'full_attention': model_type glm_moe_dsa runs DeepSeek sparse"),
        ({"q_lora_rank": None}, r"q_lora_rank = null: DSA's indexer reads the query latent"),
        ({"mlp_layer_types": ["dense"] * 78}, r"mlp_layer_types = .*differs from first_k_dense_replace = 3"),
        ({"index_n_heads": None}, r"index_n_heads = null"),
        ({"indexer_types": ["full"] * 3}, r"indexer_types = .*expected one of 'full'/'shared' per layer \(78 layers\)"),
    ],
)
def test_glm5_refuses_what_it_cannot_count(changes, message):
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config(glm(**changes))


def test_deepseek_v32_accepts_the_legacy_layer_type_and_refuses_indexer_types():
    data = config("deepseek-v3.2")
    data["layer_types"] = ["deepseek_sparse_attention"] * 61
    assert indexer_layers(flopsreg.Model.from_hf_config(data)) == list(range(61))
    data["indexer_types"] = ["full"] * 61
    with pytest.raises(flopsreg.ModelError, match="indexer_types: not read by model_type deepseek_v32"):
        flopsreg.Model.from_hf_config(data)


def test_absorbed_flag_on_a_published_config(registry):
    """The explicit flag on a loaded model: per pair 2 * heads * (2 * 512 + 64) instead of 2 * heads * (192 + 128)."""
    s = 4096
    model = flopsreg.Model.from_hf_config(path("deepseek-v3.2"))
    absorbed = attrs.evolve(model, flags=model.flags | {"mla_absorbed"})
    pairs = 2048 * 2049 // 2 + (s - 2048) * 2048
    difference = 61 * 2 * 128 * ((2 * 512 + 64) - (128 + 64 + 128)) * pairs
    assert registry.evaluate(absorbed, seq_len=s).forward - registry.evaluate(model, seq_len=s).forward == difference


# --- Mistral Large 4: no query latent, NoPE layers, latent sharing, shared top-k ------------


def large4(**changes) -> dict:
    data = config("mistral-large-4")
    data["text_config"].update(changes)
    return data


def large4_layer(s, *, rope: bool, own_latent: bool, indexer: bool, dense: bool) -> int:
    """One Mistral Large 4 layer from the published dimensions, matmul by matmul."""
    h, heads, r_kv, nope, rope_dim, v = 6144, 64, 512, 64, 64, 128
    idx_heads, idx_dim, k = 32, 128, 2048
    topk_pairs = k * (k + 1) // 2 + (s - k) * k
    causal = s * (s + 1) // 2
    key_nope = nope if rope else nope + rope_dim  # a NoPE layer's latent gives the whole key
    kv_a = 2 * s * h * (r_kv + (rope_dim if rope else 0)) if own_latent else 0
    attention = (
        2 * s * h * heads * (nope + rope_dim)  # q_proj (no query latent)
        + kv_a + 2 * s * r_kv * heads * (key_nope + v)  # kv_a_proj_with_mqa, kv_b_proj
        + 2 * heads * (nope + rope_dim + v) * topk_pairs  # QK^T and PV over the top-k
        + 2 * s * heads * v * h  # o_proj
    )
    index = 2 * s * h * idx_heads * idx_dim + 2 * s * h * idx_dim + 2 * s * h * idx_heads + 2 * causal * idx_heads * (idx_dim + 1)
    mlp = 3 * 2 * s * h * 24576 if dense else 2 * s * h * 128 + 4 * 3 * 2 * s * h * 6144 + 3 * 2 * s * h * 6144
    return attention + (index if indexer else 0) + mlp


def test_mistral_large_4_published_layout(registry):
    """72 layers, every 4th NoPE, layer 0 dense, every layer its own latent and indexer."""
    s = 8192
    model = flopsreg.Model.from_hf_config(path("mistral-large-4"))
    expected = sum(
        large4_layer(s, rope=(i + 1) % 4 != 0, own_latent=True, indexer=True, dense=i == 0) for i in range(72)
    ) + 2 * s * 6144 * 204800
    assert registry.evaluate(model, seq_len=s).forward == expected


def test_mistral_large_4_sharing_layers(registry):
    s = 4096
    sources = list(range(72))
    sources[2], sources[7] = 1, 3  # layer 2 reuses layer 1's latent (RoPE), layer 7 layer 3's (NoPE)
    modes = ["full"] * 72
    modes[5] = "shared"
    model = flopsreg.Model.from_hf_config(large4(kv_source_layers=sources, indexer_types=modes))
    flops = [layer.flops for layer in registry.evaluate(model, seq_len=s).layers]
    assert flops[2] == large4_layer(s, rope=True, own_latent=False, indexer=True, dense=False)
    assert flops[7] == large4_layer(s, rope=False, own_latent=False, indexer=True, dense=False)
    assert flops[5] == large4_layer(s, rope=True, own_latent=True, indexer=False, dense=False)
    assert flops[3] == large4_layer(s, rope=False, own_latent=True, indexer=True, dense=False)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"no_rope_layers": None}, r"no_rope_layers: missing \(which layers are NoPE; MistralLarge4TextConfig would make every 4th layer NoPE"),
        ({"kv_source_layers": [0, 2] + list(range(2, 72))}, r"kv_source_layers\[1\] = 2: expected an earlier layer that owns its latent"),
        ({"q_lora_rank": 1536}, r"q_lora_rank: MistralLarge4's attention has no query latent"),
        ({"mlp_layer_types": ["dense"] * 3}, r"mlp_layer_types = .*expected 'dense' or 'sparse' for each of the 72 layers"),
    ],
)
def test_mistral_large_4_refuses_what_it_cannot_count(changes, message):
    data = large4(**changes)
    data["text_config"] = {k: v for k, v in data["text_config"].items() if v is not None}
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config(data)


def test_mistral_large_4_no_rope_layer_interval(registry):
    data = large4(no_rope_layer_interval=4)
    del data["text_config"]["no_rope_layers"]
    s = 1024
    assert registry.evaluate(flopsreg.Model.from_hf_config(data), seq_len=s).forward == registry.evaluate(
        flopsreg.Model.from_hf_config(path("mistral-large-4")), seq_len=s
    ).forward
