"""Every bundled example against its forward FLOPs derived by hand from the published config.

Each ``hand_*`` function below types the published dimensions (never read from the TOML) and
writes out every matmul of the Hugging Face forward pass, 2 FLOPs per multiply-add, with the
attended (query, key) pairs counted from closed sums over query positions. It returns the
FLOPs per part (attention, MLP, logits head) so that the test also checks where the work goes,
which docs/examples.md reports as the attention share.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracles import causal_pairs, chunk_pairs, window_pairs

import flopsreg

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"





def gqa_attention(s: int, *, h: int, n_h: int, n_kv: int, d: int, pairs: int) -> int:
    """One grouped-query attention layer, matmul by matmul."""
    return (
        2 * s * h * (n_h * d)  # q_proj: hidden -> heads x head_dim
        + 2 * s * h * (n_kv * d)  # k_proj: hidden -> kv_heads x head_dim
        + 2 * s * h * (n_kv * d)  # v_proj: hidden -> kv_heads x head_dim
        + 2 * n_h * d * pairs  # QK^T: one head_dim dot product per head and attended pair
        + 2 * n_h * d * pairs  # PV: one head_dim weighted sum per head and attended pair
        + 2 * s * (n_h * d) * h  # o_proj: heads x head_dim -> hidden
    )


def swiglu(s: int, *, h: int, ffn: int) -> int:
    """One gated MLP (SwiGLU / GeGLU) of inner width ffn."""
    return (
        2 * s * h * ffn  # gate_proj
        + 2 * s * h * ffn  # up_proj
        + 2 * s * ffn * h  # down_proj
    )


# -- dense models --------------------------------------------------------------------------------


def hand_llama_3_8b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, ffn, vocab = 4096, 32, 32, 8, 128, 14336, 128256
    return {
        "attention": layers * gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * swiglu(s, h=h, ffn=ffn),
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def hand_llama_3_1_70b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, ffn, vocab = 8192, 80, 64, 8, 128, 28672, 128256
    return {
        "attention": layers * gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * swiglu(s, h=h, ffn=ffn),
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def hand_mistral_7b_v0_1(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, ffn, vocab, window = 4096, 32, 32, 8, 128, 14336, 32000, 4096
    return {
        # every layer slides over 4096 keys, the query included
        "attention": layers * gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=window_pairs(s, window)),
        "mlp": layers * swiglu(s, h=h, ffn=ffn),
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def hand_qwen3_8b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, ffn, vocab = 4096, 36, 32, 8, 128, 12288, 151936
    return {
        "attention": layers * gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * swiglu(s, h=h, ffn=ffn),
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def _gemma_3(s: int, *, h: int, layers: int, n_h: int, n_kv: int, d: int, ffn: int) -> dict[str, int]:
    vocab, window = 262208, 1024
    global_layers = [i for i in range(layers) if (i + 1) % 6 == 0]  # sliding_window_pattern 6
    local_layers = [i for i in range(layers) if (i + 1) % 6 != 0]
    local = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=window_pairs(s, window))
    full = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s))
    return {
        "attention": len(local_layers) * local + len(global_layers) * full,
        "mlp": layers * swiglu(s, h=h, ffn=ffn),  # GeGLU: gate, up, down
        "head": 2 * s * h * vocab,  # lm_head tied to the embedding: counted once, lookup is 0
    }


def hand_gemma_3_4b(s: int) -> dict[str, int]:
    return _gemma_3(s, h=2560, layers=34, n_h=8, n_kv=4, d=256, ffn=10240)


def hand_gemma_3_27b(s: int) -> dict[str, int]:
    return _gemma_3(s, h=5376, layers=62, n_h=32, n_kv=16, d=128, ffn=21504)


# -- mixture-of-experts models -------------------------------------------------------------------


def hand_mixtral_8x7b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, vocab = 4096, 32, 32, 8, 128, 32000
    experts, top_k, expert_ffn = 8, 2, 14336
    moe = (
        2 * s * h * experts  # router (gate): hidden -> 8 logits
        + top_k * swiglu(s, h=h, ffn=expert_ffn)  # w1, w3, w2 of the 2 routed experts
    )
    return {
        "attention": layers * gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * moe,
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def hand_qwen3_30b_a3b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, vocab = 2048, 48, 32, 4, 128, 151936
    experts, top_k, expert_ffn = 128, 8, 768
    moe = (
        2 * s * h * experts  # router (gate): hidden -> 128 logits
        + top_k * swiglu(s, h=h, ffn=expert_ffn)  # gate, up, down of the 8 routed experts
    )
    return {
        "attention": layers * gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * moe,  # every layer sparse (decoder_sparse_step 1, mlp_only_layers [])
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def hand_llama_4_scout(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, vocab, chunk = 5120, 48, 40, 8, 128, 202048, 8192
    experts, top_k, expert_ffn, shared_ffn = 16, 1, 8192, 8192
    no_rope_layers = [1, 1, 1, 0] * 12  # 1: RoPE + chunked attention, 0: NoPE + full causal
    chunked = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=chunk_pairs(s, chunk))
    full = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s))
    moe = (
        2 * s * h * experts  # router: hidden -> 16 logits
        + top_k * swiglu(s, h=h, ffn=expert_ffn)  # gate_up_proj (2 x 8192) and down_proj, 1 expert
        + swiglu(s, h=h, ffn=shared_ffn)  # shared_expert: gate, up, down of width 8192
    )
    return {
        "attention": sum(chunked if uses_rope else full for uses_rope in no_rope_layers),
        "mlp": layers * moe,  # moe_layers = 0..47
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def _gpt_oss(s: int, *, layers: int, experts: int) -> dict[str, int]:
    h, n_h, n_kv, d, vocab, window = 2880, 64, 8, 64, 201088, 128
    top_k, expert_ffn = 4, 2880
    layer_types = ["sliding_attention", "full_attention"] * (layers // 2)  # as published
    sliding = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=window_pairs(s, window))
    full = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s))
    moe = (
        2 * s * h * experts  # router: hidden -> E logits (its bias adds no matmul)
        + top_k * 2 * s * h * (2 * expert_ffn)  # gate_up_proj: hidden -> 2 x 2880, 4 experts
        + top_k * 2 * s * expert_ffn * h  # down_proj: 2880 -> hidden, 4 experts
    )
    return {
        "attention": sum(sliding if kind == "sliding_attention" else full for kind in layer_types),
        "mlp": layers * moe,
        "head": 2 * s * h * vocab,  # lm_head (untied)
    }


def hand_gpt_oss_20b(s: int) -> dict[str, int]:
    return _gpt_oss(s, layers=24, experts=32)


def hand_gpt_oss_120b(s: int) -> dict[str, int]:
    return _gpt_oss(s, layers=36, experts=128)


def hand_deepseek_v3(s: int) -> dict[str, int]:
    h, layers, n_h, vocab = 7168, 61, 128, 129280
    r_q, r_kv, d_nope, d_rope, d_v = 1536, 512, 128, 64, 128
    dense_ffn, first_k_dense = 18432, 3
    experts, top_k, expert_ffn, shared_ffn = 256, 8, 2048, 2048 * 1  # n_shared_experts 1
    mla = (
        2 * s * h * r_q  # q_a_proj: hidden -> q_lora_rank
        + 2 * s * r_q * n_h * (d_nope + d_rope)  # q_b_proj: q_lora_rank -> heads x 192
        + 2 * s * h * (r_kv + d_rope)  # kv_a_proj_with_mqa: hidden -> kv_lora_rank + rope key
        + 2 * s * r_kv * n_h * (d_nope + d_v)  # kv_b_proj: kv_lora_rank -> heads x (128 + 128)
        + 2 * n_h * (d_nope + d_rope) * causal_pairs(s)  # QK^T, width 192
        + 2 * n_h * d_v * causal_pairs(s)  # PV, width 128
        + 2 * s * (n_h * d_v) * h  # o_proj: heads x v_head_dim -> hidden
    )
    moe = (
        2 * s * h * experts  # router: hidden -> 256 logits
        + top_k * swiglu(s, h=h, ffn=expert_ffn)  # 8 routed experts
        + swiglu(s, h=h, ffn=shared_ffn)  # shared experts, width 2048 x 1
    )
    return {
        "attention": layers * mla,
        "mlp": first_k_dense * swiglu(s, h=h, ffn=dense_ffn) + (layers - first_k_dense) * moe,
        "head": 2 * s * h * vocab,  # lm_head (untied); MTP off as in the HF forward pass
    }


# -- linear-attention / SSM hybrids (issue 10): the mixers' recurrent minima, token by token ----


def gated_deltanet(s: int, *, h: int, hk: int, hv: int, dk: int, dv: int, kernel: int) -> int:
    """One Gated DeltaNet mixer (Qwen3-Next / Qwen3.5), matmul by matmul, recurrent minimum core."""
    return (
        2 * s * h * (2 * hk * dk + hv * dv)  # in_proj_qkv (or the q, k, v part of in_proj_qkvz)
        + 2 * s * h * (hv * dv)  # in_proj_z: the output gate
        + 2 * s * h * (2 * hv)  # in_proj_b and in_proj_a: beta and the decay, one per value head
        + 2 * s * (2 * hk * dk + hv * dv) * kernel  # depthwise causal conv over q, k, v
        + 3 * 2 * s * hv * dk * dv  # per token and head: S^T k, k (beta delta)^T, S^T q
        + 2 * s * (hv * dv) * h  # out_proj
    )


def gated_attention(s: int, *, h: int, n_h: int, n_kv: int, d: int, pairs: int) -> int:
    """Qwen3-Next's gated attention: GQA, and q_proj also outputs a sigmoid gate per head dim."""
    return gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=pairs) + 2 * s * h * (n_h * d)


def qwen_moe(s: int, *, h: int, experts: int, top_k: int, ffn: int, shared: int) -> int:
    """Qwen's MoE block: router, top-k SwiGLU experts, a SwiGLU shared expert and its gate."""
    return 2 * s * h * experts + top_k * swiglu(s, h=h, ffn=ffn) + swiglu(s, h=h, ffn=shared) + 2 * s * h * 1


def hand_qwen3_next_80b_a3b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, vocab = 2048, 48, 16, 2, 256, 151936
    linear, full = 36, 12  # (linear, linear, linear, full) x 12
    return {
        "mixer": linear * gated_deltanet(s, h=h, hk=16, hv=32, dk=128, dv=128, kernel=4),
        "attention": full * gated_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * qwen_moe(s, h=h, experts=512, top_k=10, ffn=512, shared=512),
        "head": 2 * s * h * vocab,
    }


def hand_qwen3_5_9b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, vocab = 4096, 32, 16, 4, 256, 248320
    return {
        "mixer": 24 * gated_deltanet(s, h=h, hk=16, hv=32, dk=128, dv=128, kernel=4),
        "attention": 8 * gated_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * swiglu(s, h=h, ffn=12288),
        "head": 2 * s * h * vocab,
    }


def hand_qwen3_5_35b_a3b(s: int) -> dict[str, int]:
    h, layers, n_h, n_kv, d, vocab = 2048, 40, 16, 2, 256, 248320
    return {
        "mixer": 30 * gated_deltanet(s, h=h, hk=16, hv=32, dk=128, dv=128, kernel=4),
        "attention": 10 * gated_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s)),
        "mlp": layers * qwen_moe(s, h=h, experts=256, top_k=8, ffn=512, shared=512),
        "head": 2 * s * h * vocab,
    }


def hand_nemotron_3_nano_30b_a3b(s: int) -> dict[str, int]:
    h, vocab = 2688, 131072
    heads, p, n, g, kernel = 64, 64, 128, 8, 4
    inner = heads * p  # mamba_num_heads x mamba_head_dim (expand is not read)
    mamba = (
        2 * s * h * (2 * inner + 2 * g * n + heads)  # in_proj: z, x, B, C, dt
        + 2 * s * (inner + 2 * g * n) * kernel  # depthwise causal conv over x, B, C
        + 2 * 2 * s * heads * p * n  # per token and head: state update dt x B^T, readout h C
        + 2 * s * inner * h  # out_proj
    )
    relu2 = lambda ffn: 2 * s * h * ffn + 2 * s * ffn * h  # noqa: E731 - up and down, not gated
    moe = 2 * s * h * 128 + 6 * relu2(1856) + relu2(3712)  # router, 6 routed experts, shared MLP
    return {
        "mixer": 23 * mamba,  # 23 M blocks
        "attention": 6 * gqa_attention(s, h=h, n_h=32, n_kv=2, d=128, pairs=causal_pairs(s)),  # 6 * blocks
        "mlp": 23 * moe,  # 23 E blocks
        "head": 2 * s * h * vocab,
    }


def hand_kimi_linear_48b_a3b(s: int) -> dict[str, int]:
    h, layers, vocab = 2304, 27, 163840
    heads, d, kernel = 32, 128, 4
    kda = (
        2 * s * h * (3 * heads * d)  # q_proj, k_proj, v_proj
        + 2 * s * (h * d + d * heads * d)  # forget gate f_a_proj, f_b_proj
        + 2 * s * h * heads  # b_proj: beta
        + 2 * s * (h * d + d * heads * d)  # output gate g_a_proj, g_b_proj
        + 2 * s * (3 * heads * d) * kernel  # depthwise causal conv over q, k, v
        + 3 * 2 * s * heads * d * d  # per token and head: S^T k, the delta update, S^T q
        + 2 * s * (heads * d) * h  # o_proj
    )
    n_h, r_kv, d_nope, d_rope, d_v = 32, 512, 128, 64, 128
    mla = (
        2 * s * h * n_h * (d_nope + d_rope)  # q_proj (q_lora_rank null)
        + 2 * s * h * (r_kv + d_rope)  # kv_a_proj_with_mqa
        + 2 * s * r_kv * n_h * (d_nope + d_v)  # kv_b_proj
        + 2 * n_h * (d_nope + d_rope + d_v) * causal_pairs(s)  # QK^T and PV (no RoPE, same widths)
        + 2 * s * n_h * d_v * h  # o_proj
    )
    moe = 2 * s * h * 256 + 8 * swiglu(s, h=h, ffn=1024) + swiglu(s, h=h, ffn=1024)
    return {
        "mixer": 20 * kda,
        "attention": 7 * mla,
        "mlp": swiglu(s, h=h, ffn=9216) + (layers - 1) * moe,
        "head": 2 * s * h * vocab,
    }


def _dsa(s: int, *, h, layers, n_h, vocab, r_q, r_kv, d_nope, d_rope, d_v, idx_heads, idx_dim, topk, dense_ffn, first_k_dense) -> dict[str, int]:
    """DeepSeek-V3.2 / GLM-5: MLA over the top-k pairs plus the lightning indexer on every layer."""
    topk_pairs = sum(min(q + 1, topk) for q in range(s))  # query q attends to min(q + 1, K) keys
    mla = (
        2 * s * h * r_q + 2 * s * r_q * n_h * (d_nope + d_rope)  # q_a_proj, q_b_proj
        + 2 * s * h * (r_kv + d_rope) + 2 * s * r_kv * n_h * (d_nope + d_v)  # kv_a_proj_with_mqa, kv_b_proj
        + 2 * n_h * (d_nope + d_rope) * topk_pairs + 2 * n_h * d_v * topk_pairs  # QK^T, PV over the top-k
        + 2 * s * (n_h * d_v) * h  # o_proj
    )
    indexer = (
        2 * s * r_q * idx_heads * idx_dim  # wq_b: query latent -> index heads
        + 2 * s * h * idx_dim  # wk: hidden -> one index key
        + 2 * s * h * idx_heads  # weights_proj: hidden -> one weight per index head
        + 2 * causal_pairs(s) * idx_heads * (idx_dim + 1)  # scores over every causal pair, head-weighted sum
    )
    moe = 2 * s * h * 256 + 8 * swiglu(s, h=h, ffn=2048) + swiglu(s, h=h, ffn=2048)  # router, top-8, 1 shared
    return {
        "attention": layers * (mla + indexer),
        "mlp": first_k_dense * swiglu(s, h=h, ffn=dense_ffn) + (layers - first_k_dense) * moe,
        "head": 2 * s * h * vocab,
    }


def hand_deepseek_v3_2(s: int) -> dict[str, int]:
    return _dsa(s, h=7168, layers=61, n_h=128, vocab=129280, r_q=1536, r_kv=512, d_nope=128, d_rope=64, d_v=128,
                idx_heads=64, idx_dim=128, topk=2048, dense_ffn=18432, first_k_dense=3)


def hand_glm_5(s: int) -> dict[str, int]:
    return _dsa(s, h=6144, layers=78, n_h=64, vocab=154880, r_q=2048, r_kv=512, d_nope=192, d_rope=64, d_v=256,
                idx_heads=32, idx_dim=128, topk=2048, dense_ffn=12288, first_k_dense=3)


def _gemma_4(s: int, *, h, n_h, n_kv, n_kv_global, ffn, layers, moe=None) -> dict[str, int]:
    """5 sliding layers (head 256, window 1024) to 1 full (head 512, K = V: no v_proj); experts beside the MLP."""
    sliding = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=256, pairs=window_pairs(s, 1024))
    full = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv_global, d=512, pairs=causal_pairs(s)) - 2 * s * h * (n_kv_global * 512)
    experts = 0 if moe is None else 2 * s * h * moe[0] + moe[1] * swiglu(s, h=h, ffn=moe[2])  # router, top-k experts
    return {
        "attention": layers * 5 // 6 * sliding + layers // 6 * full,
        "mlp": layers * (swiglu(s, h=h, ffn=ffn) + experts),
        "head": 2 * s * h * 262144,  # tied embeddings: lm_head still runs
    }


def hand_gemma_4_31b(s: int) -> dict[str, int]:
    return _gemma_4(s, h=5376, n_h=32, n_kv=16, n_kv_global=4, ffn=21504, layers=60)


def hand_gemma_4_26b_a4b(s: int) -> dict[str, int]:
    return _gemma_4(s, h=2816, n_h=16, n_kv=8, n_kv_global=2, ffn=2112, layers=30, moe=(128, 8, 704))


def hand_deepseek_v4_flash(s: int) -> dict[str, int]:
    """Sliding window + compressed entries on every layer: 23 HCA (2 first, then every 2nd) and 20 CSA layers."""
    h, n_h, d, r_q, r_o, groups, window, vocab, n = 4096, 64, 512, 1024, 1024, 8, 128, 129280, 4
    idx_heads, idx_dim, topk, m_csa, m_hca = 64, 128, 512, 4, 128
    raw = sum(min(t + 1, window) for t in range(s))  # query t: the last min(t + 1, 128) raw keys
    hca_pairs = raw + sum((t + 1) // m_hca for t in range(s))  # every closed 128-token entry
    csa_pairs = raw + sum(min(topk, (t + 1) // m_csa) for t in range(s))  # the indexer's top 512 closed entries
    common = (
        2 * s * h * r_q + 2 * s * r_q * n_h * d  # q_a_proj, q_b_proj
        + 2 * s * h * d  # kv_proj: one head, key and value
        + 2 * s * n_h * d * r_o + 2 * s * groups * r_o * h  # o_a_proj (8 groups of 4096 -> 1024), o_b_proj
    )
    hca = common + 2 * n_h * (d + d) * hca_pairs + 2 * (2 * s * h * d)  # core; compressor kv_proj, gate_proj
    csa = (
        common + 2 * n_h * (d + d) * csa_pairs
        + 2 * (2 * s * h * 2 * d)  # compressor kv_proj, gate_proj to two overlapping series
        + 2 * (2 * s * h * 2 * idx_dim) + 2 * s * r_q * idx_heads * idx_dim + 2 * s * h * idx_heads  # indexer projections
        + 2 * sum((t + 1) // m_csa for t in range(s)) * idx_heads * (idx_dim + 1)  # its scores, head-weighted sum
    )
    moe = 2 * s * h * 256 + 6 * swiglu(s, h=h, ffn=2048) + swiglu(s, h=h, ffn=2048)  # router, top-6, 1 shared
    mhc = 2 * (2 * s * n * h * (2 + n) * n + 2 * s * n * n * h)  # fn n h -> (2 + n) n and comb^T, twice a layer
    return {
        "attention": 23 * hca + 20 * csa,
        "mlp": 43 * moe,
        "residual": 43 * mhc + 2 * s * n * h * n,  # and the final hc_head n h -> n
        "head": 2 * s * h * vocab,
    }


def hand_gemma_3n_e4b(s: int) -> dict[str, int]:
    """4 sliding (512) to 1 full; the last 15 layers reuse K/V; AltUp (4 copies), LAuReL (64), PLE (256)."""
    h, n_h, n_kv, d, ffn, layers, shared, n, rank, ple, vocab = 2048, 8, 2, 256, 16384, 35, 15, 4, 64, 256, 262400
    full_layers = layers // 5  # layers 4, 9, ..., 34 are full
    sliding = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=window_pairs(s, 512))
    full = gqa_attention(s, h=h, n_h=n_h, n_kv=n_kv, d=d, pairs=causal_pairs(s))
    kv = 2 * s * h * 2 * n_kv * d  # k_proj, v_proj: absent on the reusing layers
    attention = (layers - full_layers) * sliding + full_layers * full - shared * kv
    altup = 2 * (2 * s * h * n) + 2 * s * n * n * n + 2 * s * h * n * n + 2 * s * n * n  # router x2, coefs, mix, correction
    laurel = 2 * s * h * rank + 2 * s * rank * h
    per_layer_input = 2 * s * h * ple + 2 * s * ple * h
    model_level = 2 * s * h * layers * ple + 2 * (n - 1) * 2 * s * h * h  # per_layer_model_projection; AltUp in and out
    return {
        "attention": attention,
        "mlp": layers * swiglu(s, h=h, ffn=ffn),  # GeGLU: the same three matmuls
        "residual": layers * (altup + laurel + per_layer_input) + model_level,
        "head": 2 * s * h * vocab,  # tied embeddings: lm_head still runs
    }


CASES = [
    ("llama-3-8b", hand_llama_3_8b, 4096),
    ("llama-3.1-70b", hand_llama_3_1_70b, 4096),
    ("mistral-7b-v0.1", hand_mistral_7b_v0_1, 8192),  # beyond the 4096-key window
    ("mistral-7b-v0.1", hand_mistral_7b_v0_1, 4096),  # window exactly full: equals causal
    ("mixtral-8x7b", hand_mixtral_8x7b, 4096),
    ("qwen3-8b", hand_qwen3_8b, 4096),
    ("qwen3-30b-a3b", hand_qwen3_30b_a3b, 4096),
    ("gemma-3-4b", hand_gemma_3_4b, 4096),
    ("gemma-3-27b", hand_gemma_3_27b, 4096),
    ("llama-4-scout", hand_llama_4_scout, 16384),  # two whole chunks
    ("llama-4-scout", hand_llama_4_scout, 20000),  # two chunks and a partial one
    ("gpt-oss-20b", hand_gpt_oss_20b, 4096),
    ("gpt-oss-120b", hand_gpt_oss_120b, 4096),
    ("deepseek-v3", hand_deepseek_v3, 4096),
    ("qwen3-next-80b-a3b", hand_qwen3_next_80b_a3b, 4096),
    ("qwen3.5-9b", hand_qwen3_5_9b, 4096),
    ("qwen3.5-35b-a3b", hand_qwen3_5_35b_a3b, 4096),
    ("nemotron-3-nano-30b-a3b", hand_nemotron_3_nano_30b_a3b, 4096),
    ("kimi-linear-48b-a3b", hand_kimi_linear_48b_a3b, 4096),
    ("deepseek-v3.2", hand_deepseek_v3_2, 8192),  # past index_topk: 2048 keys per later query
    ("glm-5", hand_glm_5, 4096),
    ("gemma-4-31b", hand_gemma_4_31b, 4096),
    ("gemma-4-26b-a4b", hand_gemma_4_26b_a4b, 4096),
    ("deepseek-v4-flash", hand_deepseek_v4_flash, 4096),  # past the window: 128 raw keys per later query
    ("deepseek-v4-flash", hand_deepseek_v4_flash, 8192),  # past index_topk x 4 = 2048 tokens: 512 CSA entries
    ("gemma-3n-e4b", hand_gemma_3n_e4b, 4096),
]


@pytest.mark.parametrize(("name", "hand", "s"), CASES, ids=[f"{n}-{s}" for n, _, s in CASES])
def test_example_forward_flops_equal_hand_derivation(registry, name, hand, s):
    """The example's exact forward FLOPs, and its attention / MLP / head split, match by hand."""
    expected = hand(s)
    result = registry.evaluate(flopsreg.Model.from_toml(EXAMPLES / f"{name}.toml"), seq_len=s)
    slots = result.slot_flops
    attention = sum(flops for slot, flops in slots.items() if slot.startswith("attention."))
    mlp = sum(flops for slot, flops in slots.items() if slot == "mlp" or slot.startswith("mlp."))
    assert result.forward == sum(expected.values())
    assert sum(flops for slot, flops in slots.items() if slot.startswith("mixer.")) == expected.get("mixer", 0)
    assert (attention, mlp, slots["head"]) == (expected["attention"], expected["mlp"], expected["head"])


def test_every_example_has_a_hand_derivation():
    """A new example file must come with its hand-derived FLOPs here."""
    assert {path.stem for path in EXAMPLES.glob("*.toml")} == {name for name, _, _ in CASES}
