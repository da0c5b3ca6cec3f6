"""Conventions: ``evaluate(..., convention=...)`` reproduces Megatron-LM's and slime's own counts.

Every expected number below is hand arithmetic written from the system's published formula,
term by term as that system defines it (research notes: anchors.md sections 1, 2 and 10):

* Megatron-LM ``megatron/training/training.py::num_floating_point_operations`` returns
  *training* FLOPs: per token 6 x (linear terms) plus S2 x core, causal core s^2/2, 3 FFN
  GEMMs only with ``--swiglu``, no router, MLA norms as "+1" columns, padded vocabulary,
  per MTP depth one more layer, 3h + 2h^2 and the logits again.
* slime ``slime/utils/flops_utils.py::calculate_fwd_flops`` returns *forward* FLOPs per
  sequence: causal s^2/2 (QK^T and PV both halved), o-proj 2 s h^2, always 3 FFN GEMMs,
  no router, no MTP, no output gate, unpadded vocabulary, MLA only with the MLA flag.
* exact: flopsreg's own rules, s(s+1)/2 pairs, the real mask, router counted.

The models are built from Megatron-LM argument namespaces (``Model.from_megatron_args``).
"""

from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

import flopsreg

S = 4096
DOC = Path(__file__).resolve().parents[2] / "docs" / "conventions.md"

# Megatron-LM registers the MLA arguments for every model, with these defaults.
MLA_DEFAULTS = dict(kv_lora_rank=32, qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128, q_lora_rank=None)


# -- Megatron-LM argument namespaces ----------------------------------------------------------


def llama3_8b_args(**overrides):
    """Llama-3-8B as Megatron-LM arguments (TP 1, so the padded vocabulary is the vocabulary)."""
    args = dict(
        hidden_size=4096, num_layers=32, num_attention_heads=32, group_query_attention=True,
        num_query_groups=8, kv_channels=128, ffn_hidden_size=14336, swiglu=True, gated_linear_unit=True,
        vocab_size=128256, padded_vocab_size=128256, seq_length=S, multi_latent_attention=False,
        num_experts=None, **MLA_DEFAULTS,
    )
    return SimpleNamespace(**{**args, **overrides})


def deepseek_v3_args(**overrides):
    """DeepSeek-V3 as Megatron-LM arguments: 3 dense then 58 MoE layers, one MTP depth."""
    args = dict(
        hidden_size=7168, num_layers=61, num_attention_heads=128, group_query_attention=False,
        num_query_groups=1, kv_channels=128, multi_latent_attention=True, q_lora_rank=1536, kv_lora_rank=512,
        qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128, ffn_hidden_size=18432, num_experts=256,
        moe_router_topk=8, moe_ffn_hidden_size=2048, moe_shared_expert_intermediate_size=2048,
        moe_layer_freq=[0] * 3 + [1] * 58, mtp_num_layers=1, swiglu=True, gated_linear_unit=True,
        vocab_size=129280, padded_vocab_size=129280, seq_length=S,
    )
    return SimpleNamespace(**{**args, **overrides})


def gemma3_4b_args(**overrides):
    """Gemma-3-4B-like Megatron arguments: 5 sliding (1024 keys) then 1 global, GeGLU without --swiglu."""
    args = dict(
        hidden_size=2560, num_layers=34, num_attention_heads=8, group_query_attention=True, num_query_groups=4,
        kv_channels=256, ffn_hidden_size=10240, swiglu=False, gated_linear_unit=True, window_size=(1023, 0),
        window_attn_skip_freq=6, vocab_size=262208, padded_vocab_size=262272, seq_length=S,
        multi_latent_attention=False, num_experts=None, **MLA_DEFAULTS,
    )
    return SimpleNamespace(**{**args, **overrides})


def qwen3_4b_args(**overrides):
    """Qwen3-4B as slime's scripts/run-qwen3-4B.sh runs it: GQA, carrying Megatron's MLA defaults."""
    args = dict(
        hidden_size=2560, num_layers=36, num_attention_heads=32, group_query_attention=True, num_query_groups=8,
        kv_channels=128, ffn_hidden_size=9728, swiglu=True, gated_linear_unit=True, vocab_size=151936,
        padded_vocab_size=151936, multi_latent_attention=False, num_experts=None, **MLA_DEFAULTS,
    )
    return SimpleNamespace(**{**args, **overrides})


def evaluate(registry, args, convention, **lengths):
    return registry.evaluate(flopsreg.Model.from_megatron_args(args), convention=convention, **lengths)


# -- hand oracles: Llama-3-8B, one sequence of s tokens ---------------------------------------


def llama_megatron_training(s):
    """Megatron-LM transformer_flops, batch 1: s x 6 x (per-token terms) + s^2 x core term."""
    per_token = (
        6 * 4096 * (14336 * 3) * 32  # MLP: 3 GEMMs (--swiglu), 32 dense layers
        + 6 * 32 * (4096 * (32 * 128 + 8 * 128 + 8 * 128)  # q, k, v projections (no output gate)
                    + 32 * 128 * 4096)  # out projection
        + 6 * 4096 * 128256 * (0 + 1)  # logits over padded_vocab_size, no MTP
    )
    core = 6 * (32 * 128) * s // 2 * 2 * 32  # per token: q_proj_size x s/2 (causal) x 2 (QK^T, PV), 32 layers
    return s * per_token + s * core


def llama_slime_forward(s):
    """slime calculate_fwd_flops for one sequence: per layer q, kv, core, out 2sh^2, mlp 6shF."""
    layer = (
        2 * s * 4096 * 32 * 128  # q: 2 s h n_h kv_channels
        + 4 * s * 4096 * 8 * 128  # k and v: 4 s h g kv_channels
        + 2 * 32 * s * s * 128 // 2  # QK^T, causal
        + 32 * s * s * 128  # PV, causal (halved since PR #1209)
        + 2 * s * 4096 * 4096  # out: 2 s h^2
        + 2 * s * 4096 * 14336 * 3  # mlp: always 3 GEMMs
    )
    return 32 * layer + 2 * s * 4096 * 128256  # lm head over vocab_size


def llama_exact_forward(s):
    """flopsreg exact: matmul by matmul, s(s+1)/2 attended pairs."""
    pairs = s * (s + 1) // 2
    layer = (
        2 * s * 4096 * (32 * 128)  # q_proj
        + 2 * s * 4096 * (8 * 128)  # k_proj
        + 2 * s * 4096 * (8 * 128)  # v_proj
        + 2 * 32 * 128 * pairs  # QK^T
        + 2 * 32 * 128 * pairs  # PV
        + 2 * s * (32 * 128) * 4096  # o_proj
        + 3 * 2 * s * 4096 * 14336  # gate, up, down
    )
    return 32 * layer + 2 * s * 4096 * 128256  # lm_head


# -- hand oracles: DeepSeek-V3 ----------------------------------------------------------------

DSV3_H, DSV3_NH, DSV3_RQ, DSV3_RKV = 7168, 128, 1536, 512
DSV3_DN, DSV3_DR, DSV3_DV, DSV3_V = 128, 64, 128, 129280


def dsv3_megatron_terms(s):
    """Megatron-LM transformer_flops for DeepSeek-V3, batch 1, each term as the function names it."""
    h, nh, rq, rkv, dn, dr, dv = DSV3_H, DSV3_NH, DSV3_RQ, DSV3_RKV, DSV3_DN, DSV3_DR, DSV3_DV
    # MTP layer joins the MoE layers because the last decoder layer is MoE: 58 + 1 = 59; L + m = 62.
    ffn = 6 * h * (18432 * 3 * 3 + (2048 * 8 * 3) * 59 + (2048 * 3) * 59)  # dense, routed, shared
    q = rq * (h + nh * (dn + dr) + 1)  # q lora + q norm as "+1"
    kv = rkv * (h + nh * (dn + dv) + 1) + h * dr  # kv lora + kv norm as "+1", shared rope key
    out = nh * dv * h
    core = s * (nh * (dn + dr)) // 2 + s * nh * dv // 2  # per token, causal
    return {
        "ffn": s * ffn,
        "attention projections": s * 6 * (q + kv + out) * 62,
        "attention core": s * 6 * core * 62,
        "mtp norms and eh proj": s * 6 * 1 * (3 * h + 2 * h * h),
        "logits": s * 6 * h * DSV3_V * (1 + 1),
    }


def dsv3_slime_forward(s):
    """slime calculate_fwd_flops: 3 dense + 58 MoE layers, no MTP, o-proj 2sh^2, no "+1" norms."""
    h, nh, rq, rkv, dn, dr, dv = DSV3_H, DSV3_NH, DSV3_RQ, DSV3_RKV, DSV3_DN, DSV3_DR, DSV3_DV
    attention = (
        2 * s * rq * (h + nh * (dn + dr))  # q lora
        + 2 * s * (rkv * (h + nh * (dn + dv)) + h * dr)  # kv lora
        + 2 * nh * s * s * (dn + dr) // 2  # QK^T, causal
        + nh * s * s * dv  # PV, causal
        + 2 * s * h * h  # out: 2 s h^2 (the real o-proj is 128 x 128 -> 7168)
    )
    dense = attention + 2 * s * h * 18432 * 3
    moe = attention + 2 * s * h * (8 * 2048 + 2048) * 3  # routed top-8 plus the shared expert
    return 3 * dense + 58 * moe + 2 * s * h * DSV3_V


def dsv3_exact_forward(s):
    """flopsreg exact: MLA as run (not absorbed), router counted, MTP depth counted once."""
    h, nh, rq, rkv, dn, dr, dv = DSV3_H, DSV3_NH, DSV3_RQ, DSV3_RKV, DSV3_DN, DSV3_DR, DSV3_DV
    pairs = s * (s + 1) // 2
    attention = (
        2 * s * (h * rq + rq * nh * (dn + dr))  # q: h -> r_q -> heads x 192
        + 2 * s * (h * (rkv + dr) + rkv * nh * (dn + dv))  # kv: h -> 512 + 64, 512 -> heads x 256
        + 2 * nh * (dn + dr) * pairs  # QK^T
        + 2 * nh * dv * pairs  # PV
        + 2 * s * nh * dv * h  # o_proj
    )
    dense = attention + 3 * 2 * s * h * 18432
    moe = attention + 2 * s * h * 256 + 3 * 2 * s * 8 * h * 2048 + 3 * 2 * s * h * 2048  # router, top-8, shared
    mtp = moe + 2 * s * (2 * h) * h + 2 * s * h * DSV3_V  # its layer, eh projection, shared head
    return 3 * dense + 58 * moe + mtp + 2 * s * h * DSV3_V


# -- hand oracles: Gemma-3-4B-like ------------------------------------------------------------

GEMMA_FULL_LAYERS = 5  # 1-based layers 6, 12, 18, 24, 30 (l % 6 == 0)
GEMMA_SLIDING_LAYERS = 29


def gemma_megatron_training(s):
    """Megatron-LM: every layer causal s^2/2 (window ignored), 2 FFN GEMMs (no --swiglu), padded vocab."""
    per_token = (
        6 * 2560 * (10240 * 2) * 34  # MLP: gated_linear_unit without --swiglu counts 2 GEMMs
        + 6 * 34 * (2560 * (8 * 256 + 4 * 256 + 4 * 256) + 8 * 256 * 2560)  # q, k, v, out
        + 6 * 2560 * 262272  # logits over padded_vocab_size
    )
    core = s * s * 6 * (8 * 256) * 34  # S2 x 6 n_h d per layer, all 34 layers
    return s * per_token + core


def gemma_slime_forward(s):
    """slime: causal s^2/2 everywhere, o-proj 2 s h^2 (8 x 256 = 2048 != 2560), 3 FFN GEMMs."""
    layer = (
        2 * s * 2560 * 8 * 256  # q
        + 4 * s * 2560 * 4 * 256  # k and v
        + 2 * 8 * s * s * 256 // 2  # QK^T, causal
        + 8 * s * s * 256  # PV, causal
        + 2 * s * 2560 * 2560  # out: 2 s h^2
        + 6 * s * 2560 * 10240  # mlp
    )
    return 34 * layer + 2 * s * 2560 * 262208  # lm head over the unpadded vocab


def gemma_pairs(s, window=1024):
    full = s * (s + 1) // 2
    sliding = full if s <= window else window * (window + 1) // 2 + (s - window) * window
    return full, sliding


def gemma_exact_core(s):
    full, sliding = gemma_pairs(s)
    return 2 * 8 * (256 + 256) * (GEMMA_FULL_LAYERS * full + GEMMA_SLIDING_LAYERS * sliding)


def gemma_exact_forward(s):
    linear = (
        2 * s * 2560 * (8 * 256)  # q_proj
        + 2 * s * 2560 * (4 * 256) * 2  # k_proj, v_proj
        + 2 * s * (8 * 256) * 2560  # o_proj
        + 3 * 2 * s * 2560 * 10240  # GeGLU: gate, up, down
    )
    return 34 * linear + gemma_exact_core(s) + 2 * s * 2560 * 262272  # lm_head: the padded rows it runs


# -- hand oracles: Qwen3-4B (GQA with Megatron's MLA defaults) --------------------------------


def qwen_layer_linear(s, out, ffn_gemms):
    return (
        2 * s * 2560 * 32 * 128  # q
        + 2 * s * 2560 * 8 * 128 * 2  # k, v
        + out
        + ffn_gemms * 2 * s * 2560 * 9728
    )


# ---------------------------------------------------------------------------------------------
# Llama-3-8B (GQA)
# ---------------------------------------------------------------------------------------------


def test_llama3_8b_megatron_training_is_megatrons_formula(registry):
    """anchors §10.1: 197,628,625,158,144 FLOPs per 4096-token sequence, derived term by term."""
    hand = llama_megatron_training(S)
    assert hand == 197_628_625_158_144
    res = evaluate(registry, llama3_8b_args(), "megatron", seq_len=S)
    assert res.training == hand
    assert res.convention == "megatron"


def test_llama3_8b_slime_three_forwards_equal_megatron(registry):
    """n_h d = h and a gated MLP: slime's 2sh^2 o-proj and 3 GEMMs are right, so 3 x fwd = Megatron."""
    hand = llama_slime_forward(S)
    assert 3 * hand == llama_megatron_training(S) == 197_628_625_158_144
    res = evaluate(registry, llama3_8b_args(), "slime", seq_len=S)
    assert res.forward == hand
    assert res.training == 3 * hand


def test_llama3_8b_exact_counts_the_diagonal(registry):
    """Exact uses s(s+1)/2 pairs: above Megatron by 6 n_h d L s / 2 x 2 = the diagonal's work."""
    hand = llama_exact_forward(S)
    assert 3 * hand == 197_631_846_383_616
    assert 3 * hand - llama_megatron_training(S) == 3 * 32 * 2 * 32 * (128 + 128) * (S // 2)
    res = evaluate(registry, llama3_8b_args(), "exact", seq_len=S)
    assert res.forward == hand
    assert res.training == 3 * hand
    assert res.warnings == ()


def test_llama3_8b_batch_multiplies_every_convention(registry):
    """Megatron's BSHD default: T = b s and S2 = b s^2, so a batch is b copies."""
    for convention, hand in (
        ("megatron", llama_megatron_training(S)),
        ("slime", 3 * llama_slime_forward(S)),
        ("exact", 3 * llama_exact_forward(S)),
    ):
        assert evaluate(registry, llama3_8b_args(), convention, seq_len=S, batch=4).training == 4 * hand


# ---------------------------------------------------------------------------------------------
# DeepSeek-V3 (MLA + MoE + MTP)
# ---------------------------------------------------------------------------------------------


def test_deepseek_v3_megatron_training_term_by_term(registry):
    """anchors §10.2: FFN, MLA projections (with "+1" norms), core, MTP, logits: 1,064,931,126,411,264."""
    terms = dsv3_megatron_terms(S)
    assert terms["ffn"] == S * 147_446_562_816
    assert terms["attention projections"] == S * 69_603_926_016
    assert terms["attention core"] == 127_818_226_728_960
    assert terms["mtp norms and eh proj"] == S * 616_691_712
    assert terms["logits"] == S * 11_120_148_480
    hand = sum(terms.values())
    assert hand == 1_064_931_126_411_264
    res = evaluate(registry, deepseek_v3_args(), "megatron", seq_len=S)
    assert res.training == hand


def test_deepseek_v3_megatron_slots_match_megatrons_terms(registry):
    """Where the work goes: MLA query with the +1 column, the core over 61 decoder layers, the MTP module."""
    h, nh, s = 7168, 128, S
    res = evaluate(registry, deepseek_v3_args(), "megatron", seq_len=S)
    assert res.slot_flops["attention.query"] == 61 * 2 * s * 1536 * (h + nh * (128 + 64) + 1)
    assert res.slot_flops["attention.projection"] == 61 * 2 * s * (512 * (h + nh * (128 + 128) + 1) + h * 64)
    assert res.slot_flops["attention.output"] == 61 * 2 * s * nh * 128 * h
    assert res.slot_flops["attention.core"] == 61 * 2 * nh * (192 + 128) * (s * s // 2)
    assert res.slot_flops["head"] == 2 * s * h * 129280
    moe_layer = (
        2 * s * 1536 * (h + nh * 192 + 1)
        + 2 * s * (512 * (h + nh * 256 + 1) + h * 64)
        + 2 * nh * (192 + 128) * (s * s // 2)
        + 2 * s * nh * 128 * h
        + 2 * s * 8 * h * 2048 * 3  # no router
        + 2 * s * h * 2048 * 3
    )
    assert res.slot_flops["mtp"] == moe_layer + 2 * s * (3 * h + 2 * h * h) + 2 * s * h * 129280


def test_deepseek_v3_slime_forward_term_by_term(registry):
    """anchors §10.2: slime 3 x fwd = 924,193,747,107,840 = Megatron minus o-proj, MTP and "+1" norms."""
    hand = dsv3_slime_forward(S)
    assert 3 * hand == 924_193_747_107_840
    h, nh = 7168, 128
    o_proj_gap = 3 * 61 * 2 * S * (nh * 128 * h - h * h)
    assert o_proj_gap == 99_033_355_911_168
    norm_gap = 3 * 61 * 2 * S * (1536 + 512)
    assert norm_gap == 3_070_230_528
    mtp_module = 3 * (  # Megatron's MTP depth: its MoE layer, 3h + 2h^2, the logits
        2 * S * 1536 * (h + nh * 192 + 1) + 2 * S * (512 * (h + nh * 256 + 1) + h * 64)
        + 2 * nh * 320 * (S * S // 2) + 2 * S * nh * 128 * h + 2 * S * h * (8 * 2048 + 2048) * 3
        + 2 * S * (3 * h + 2 * h * h) + 2 * S * h * 129280
    )
    assert mtp_module == 41_700_953_161_728
    assert 3 * hand == 1_064_931_126_411_264 - o_proj_gap - mtp_module - norm_gap
    res = evaluate(registry, deepseek_v3_args(), "slime", seq_len=S)
    assert res.forward == hand
    assert res.slot_flops["mtp"] == 0
    assert res.slot_flops["attention.output"] == 61 * 2 * S * h * h


def test_deepseek_v3_exact(registry):
    """Exact: o-proj 128 x 128 -> 7168, router hidden -> 256 on 58 layers, s(s+1)/2 pairs, MTP counted."""
    hand = dsv3_exact_forward(S)
    res = evaluate(registry, deepseek_v3_args(), "exact", seq_len=S)
    assert res.forward == hand
    assert res.slot_flops["mlp"] - 58 * 2 * S * 7168 * 256 == 3 * 2 * S * 7168 * 18432 * 3 + 58 * 3 * 2 * S * 8 * 7168 * 2048


# ---------------------------------------------------------------------------------------------
# Gemma-3-4B-like (sliding window)
# ---------------------------------------------------------------------------------------------


def test_gemma3_megatron_ignores_the_window(registry):
    """anchors §10.3: Megatron's core is 7,009,386,627,072 (34 causal layers); 2 FFN GEMMs without --swiglu."""
    res = evaluate(registry, gemma3_4b_args(), "megatron", seq_len=S)
    assert 3 * res.slot_flops["attention.core"] == S * S * 6 * (8 * 256) * 34 == 7_009_386_627_072
    assert res.slot_flops["mlp"] == 34 * 2 * S * 2560 * 10240 * 2
    assert res.slot_flops["head"] == 2 * S * 2560 * 262272
    assert res.training == gemma_megatron_training(S)
    assert {layer.patterns["attention.mask"] for layer in res.layers} == {"megatron_causal"}
    assert res.warnings == ()  # window is displaced by the convention's rule, not forgotten


def test_gemma3_exact_counts_the_window(registry):
    """anchors §10.3: exact core 3,647,043,796,992 (training); exact total 98,999,344,300,032 over
    the Hugging Face vocabulary (262208 lm_head rows), plus the 64 padding rows that this Megatron
    run's output layer computes (padded_vocab_size 262272)."""
    assert 3 * gemma_exact_core(S) == 3_647_043_796_992
    padding = 3 * 2 * S * 2560 * (262272 - 262208)  # training: 3 x 2 s h per extra row
    assert padding == 4_026_531_840
    assert 3 * gemma_exact_forward(S) == 98_999_344_300_032 + padding == 99_003_370_831_872
    res = evaluate(registry, gemma3_4b_args(), "exact", seq_len=S)
    assert res.slot_flops["attention.core"] == gemma_exact_core(S)
    assert res.forward == gemma_exact_forward(S)
    full = [layer.index for layer in res.layers if layer.patterns["attention.mask"] == "full_causal"]
    assert full == [5, 11, 17, 23, 29]  # 1-based l slides iff l % 6 != 0


def test_gemma3_slime(registry):
    """slime: o-proj 2 s h^2 although 8 x 256 = 2048 != 2560, 3 GEMMs, unpadded vocab, no window."""
    res = evaluate(registry, gemma3_4b_args(), "slime", seq_len=S)
    assert res.forward == gemma_slime_forward(S)
    assert res.slot_flops["attention.output"] == 34 * 2 * S * 2560 * 2560
    assert res.slot_flops["head"] == 2 * S * 2560 * 262208


def test_gemma3_megatron_core_overcount_grows_with_context(registry):
    """The window-blind core: 1.92x the exact core at 4k (anchors §9.1 ratios at W = 1024)."""
    megatron = evaluate(registry, gemma3_4b_args(), "megatron", seq_len=S).slot_flops["attention.core"]
    assert Fraction(megatron, gemma_exact_core(S)) == Fraction(S * S * 2 * 8 * 256 * 34, gemma_exact_core(S))
    assert f"{float(Fraction(megatron, gemma_exact_core(S))):.3f}" == "1.922"


# ---------------------------------------------------------------------------------------------
# Packed sequences
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seqlens", [[1000, 3096], [999, 3097]])
def test_packed_seqlens_are_the_sum_of_sequences(registry, seqlens):
    """Megatron THD: T = sum s_i and S2 = sum s_i^2 (core s_i^2/2 pairs); slime per sequence; exact s(s+1)/2."""
    for convention, hand in (
        ("megatron", sum(llama_megatron_training(s) for s in seqlens)),
        ("slime", 3 * sum(llama_slime_forward(s) for s in seqlens)),
        ("exact", 3 * sum(llama_exact_forward(s) for s in seqlens)),
    ):
        assert evaluate(registry, llama3_8b_args(), convention, seqlens=seqlens).training == hand, convention


def test_packed_core_uses_squared_lengths(registry):
    """The core of a packed row: sum s_i^2 / 2 pairs under Megatron, sum s_i(s_i+1)/2 exactly."""
    megatron = evaluate(registry, llama3_8b_args(), "megatron", seqlens=[1000, 3096])
    exact = evaluate(registry, llama3_8b_args(), "exact", seqlens=[1000, 3096])
    per_pair = 32 * 2 * 32 * (128 + 128)  # 32 layers x 2 n_h (d_qk + d_v)
    assert megatron.slot_flops["attention.core"] == per_pair * (1000 * 1000 + 3096 * 3096) // 2
    assert exact.slot_flops["attention.core"] == per_pair * (1000 * 1001 // 2 + 3096 * 3097 // 2)
    single = evaluate(registry, llama3_8b_args(), "megatron", seq_len=4096)
    assert single.slot_flops["attention.core"] - megatron.slot_flops["attention.core"] == per_pair * 2 * 1000 * 3096 // 2


# ---------------------------------------------------------------------------------------------
# The slime MLA bug: GQA model carrying Megatron's MLA defaults
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("convention", ["exact", "megatron", "slime"])
def test_mla_defaults_never_select_mla(registry, convention):
    """kv_lora_rank=32 etc. are set but multi_latent_attention is False: every convention uses GQA."""
    res = evaluate(registry, qwen3_4b_args(), convention, seq_len=S)
    for layer in res.layers:
        assert layer.patterns["attention.projection"] == "gqa_projection"
        assert layer.patterns["attention.query"] == "query_projection"
    assert res.slot_flops["attention.projection"] == 36 * 2 * S * 2560 * 2 * 8 * 128
    assert res.slot_flops["attention.core"] == 36 * 2 * 32 * (128 + 128) * (
        S * (S + 1) // 2 if convention == "exact" else S * S // 2
    )


def test_qwen3_4b_output_projection_per_convention(registry):
    """slime's o-proj is 2 s h^2 = 2 s 2560^2; the real one (exact, Megatron) is 2 s (32 x 128) 2560."""
    out = {c: evaluate(registry, qwen3_4b_args(), c, seq_len=S).slot_flops["attention.output"] for c in ("exact", "megatron", "slime")}
    assert out["slime"] == 36 * 2 * S * 2560 * 2560
    assert out["exact"] == out["megatron"] == 36 * 2 * S * 32 * 128 * 2560
    assert Fraction(out["slime"], out["exact"]) == Fraction(5, 8)  # undercounted by 37.5% (anchors §9.4)


def test_qwen3_4b_totals_per_convention(registry):
    """Whole-model numbers by hand for the three conventions."""
    s = S
    core_approx = 2 * 32 * (128 + 128) * (s * s // 2)
    core_exact = 2 * 32 * (128 + 128) * (s * (s + 1) // 2)
    logits = 2 * s * 2560 * 151936
    megatron = 36 * (qwen_layer_linear(s, 2 * s * 32 * 128 * 2560, 3) + core_approx) + logits
    slime = 36 * (qwen_layer_linear(s, 2 * s * 2560 * 2560, 3) + core_approx) + logits
    exact = 36 * (qwen_layer_linear(s, 2 * s * 32 * 128 * 2560, 3) + core_exact) + logits
    assert evaluate(registry, qwen3_4b_args(), "megatron", seq_len=s).training == 3 * megatron
    assert evaluate(registry, qwen3_4b_args(), "slime", seq_len=s).forward == slime
    assert evaluate(registry, qwen3_4b_args(), "exact", seq_len=s).forward == exact


# ---------------------------------------------------------------------------------------------
# slime on MHA runs: args.num_query_groups keeps Megatron's argparse default 1
# ---------------------------------------------------------------------------------------------


def llama2_7b_args(**overrides):
    """Llama-2-7B-like MHA run: group_query_attention off, num_query_groups at its argparse default 1."""
    args = dict(
        hidden_size=4096, num_layers=32, num_attention_heads=32, group_query_attention=False, num_query_groups=1,
        kv_channels=128, ffn_hidden_size=11008, swiglu=True, gated_linear_unit=True, vocab_size=32000,
        padded_vocab_size=32000, seq_length=S, multi_latent_attention=False, num_experts=None, **MLA_DEFAULTS,
    )
    return SimpleNamespace(**{**args, **overrides})


def llama2_slime_forward(s, g):
    """slime calculate_fwd_flops (anchors §2) with g = args.num_query_groups as slime reads it."""
    h, nh, d, ffn, vocab = 4096, 32, 128, 11008, 32000
    layer = (
        2 * s * h * nh * d  # q: 2 s h n_h kv_channels
        + 4 * s * h * g * d  # k and v: 4 s h g kv_channels
        + 2 * nh * s * s * d // 2  # QK^T, causal
        + nh * s * s * d  # PV, causal
        + 2 * s * h * h  # out: 2 s h^2
        + 6 * s * h * ffn  # mlp: always 3 GEMMs
    )
    return 32 * layer + 2 * s * h * vocab


def test_slime_on_an_mha_run_reads_num_query_groups_as_given(registry):
    """slime's k/v uses g = 1 on an MHA run where 32 heads run: about 15% below exact and Megatron."""
    res = evaluate(registry, llama2_7b_args(), "slime", seq_len=S)
    assert res.forward == llama2_slime_forward(S, g=1) == 50_002_009_260_032
    assert res.slot_flops["attention.projection"] == 32 * 4 * S * 4096 * 1 * 128
    assert res.warnings == ()
    exact = evaluate(registry, llama2_7b_args(), "exact", seq_len=S)
    assert exact.slot_flops["attention.projection"] == 32 * 4 * S * 4096 * 32 * 128  # k, v: 32 heads each
    assert exact.forward == llama2_slime_forward(S, g=32) + 32 * 2 * 32 * (128 + 128) * (S // 2)  # + the diagonal
    assert f"{float(1 - Fraction(res.forward, exact.forward)):.1%}" == "14.6%"


def test_slime_after_megatrons_function_overwrote_num_query_groups(registry):
    """Megatron-LM's own FLOPs function sets args.num_query_groups := heads on MHA runs: then slime's
    k/v has 32 groups, and slime equals Megatron-LM again (n_h d = h, gated MLP)."""
    args = llama2_7b_args(num_query_groups=32)
    res = evaluate(registry, args, "slime", seq_len=S)
    assert res.forward == llama2_slime_forward(S, g=32)
    assert 3 * res.forward == evaluate(registry, args, "megatron", seq_len=S).training


@pytest.mark.parametrize("convention", ["exact", "megatron"])
def test_only_slime_reads_the_default_num_query_groups(registry, convention):
    """Megatron-LM and exact count the 32 key/value heads that run; the raw value warns nobody."""
    res = evaluate(registry, llama2_7b_args(), convention, seq_len=S)
    assert res.slot_flops["attention.projection"] == 32 * 4 * S * 4096 * 32 * 128
    assert res.warnings == ()


def test_slime_refuses_an_mha_run_without_num_query_groups(registry):
    """slime would multiply by None; flopsreg names the argument instead of guessing."""
    args = llama2_7b_args(num_query_groups=None)
    with pytest.raises(flopsreg.ModelError, match="'num_query_groups'.*args.num_query_groups.*slime_kv_projection"):
        evaluate(registry, args, "slime", seq_len=S)
    assert evaluate(registry, args, "exact", seq_len=S).forward == evaluate(registry, llama2_7b_args(), "exact", seq_len=S).forward


def test_compare_names_slimes_default_valued_argument(registry):
    """compare traces the gap to the k/v rule and says it is fed by a default-valued argument."""
    comparison = registry.compare(flopsreg.Model.from_megatron_args(llama2_7b_args()), seq_len=S)
    (kv,) = [d for d in comparison.differences if d.convention == "slime" and d.slot == "attention.projection"]
    assert (kv.exact_pattern, kv.pattern) == ("gqa_projection", "slime_kv_projection")
    assert "args.num_query_groups as given, even when group_query_attention is off" in kv.reason
    assert "Megatron's default 1 on MHA runs" in kv.reason
    assert kv.effects == (("attention.projection", Fraction(1, 32)),)


def test_slime_counts_logits_over_the_unpadded_vocabulary(registry):
    """Gemma-3-4B-like run: exact and Megatron count the 262272 rows that run, slime args.vocab_size."""
    heads = {c: evaluate(registry, gemma3_4b_args(), c, seq_len=S).slot_flops["head"] for c in ("exact", "megatron", "slime")}
    assert heads["exact"] == heads["megatron"] == 2 * S * 2560 * 262272
    assert heads["slime"] == 2 * S * 2560 * 262208


def test_slime_refuses_padded_logits_without_vocab_size(registry):
    with pytest.raises(flopsreg.ModelError, match="'unpadded_vocab'.*args.vocab_size.*slime_logits"):
        evaluate(registry, gemma3_4b_args(vocab_size=None), "slime", seq_len=S)


# ---------------------------------------------------------------------------------------------
# FFN gating, output gate
# ---------------------------------------------------------------------------------------------


def gpt2_args(**overrides):
    """GPT-2 small as Megatron args: GELU MLP (no --swiglu, no gated_linear_unit), padded vocab 50304."""
    args = dict(
        hidden_size=768, num_layers=12, num_attention_heads=12, group_query_attention=False, num_query_groups=1,
        kv_channels=64, ffn_hidden_size=3072, swiglu=False, gated_linear_unit=False, vocab_size=50257,
        padded_vocab_size=50304, multi_latent_attention=False, num_experts=None, **MLA_DEFAULTS,
    )
    return SimpleNamespace(**{**args, **overrides})


def test_non_gated_mlp_megatron_2_slime_3_exact_2(registry):
    """A GELU MLP has 2 GEMMs; Megatron (no --swiglu) and exact count 2, slime always counts 3."""
    mlp = {c: evaluate(registry, gpt2_args(), c, seq_len=1024).slot_flops["mlp"] for c in ("exact", "megatron", "slime")}
    assert mlp["megatron"] == mlp["exact"] == 12 * 2 * 1024 * 768 * 3072 * 2
    assert mlp["slime"] == 12 * 2 * 1024 * 768 * 3072 * 3


def test_gpt2_megatron_training_by_hand(registry):
    """MHA (group_query_attention False: num_query_groups := heads), padded vocab 50304."""
    s = 1024
    per_token = (
        6 * 768 * (3072 * 2) * 12
        + 6 * 12 * (768 * (12 * 64 + 12 * 64 + 12 * 64) + 12 * 64 * 768)
        + 6 * 768 * 50304
    )
    core = s * s * 6 * (12 * 64) * 12
    assert evaluate(registry, gpt2_args(), "megatron", seq_len=s).training == s * per_token + core


def test_quick_geglu_counts_2_ffn_gemms_under_megatron_3_exactly(registry):
    """--quick-geglu sets a gated unit but not --swiglu: Megatron's f = 2 (anchors §9.5), exact f = 3."""
    args = gpt2_args(quick_geglu=True)
    megatron = evaluate(registry, args, "megatron", seq_len=128).slot_flops["mlp"]
    exact = evaluate(registry, args, "exact", seq_len=128).slot_flops["mlp"]
    assert megatron == 12 * 2 * 128 * 768 * 3072 * 2
    assert exact == 12 * 2 * 128 * 768 * 3072 * 3


def test_attention_output_gate_counted_by_megatron_and_exact_not_slime(registry):
    """attention_output_gate adds h x (n_h d) per token: Megatron's gate_projection_size; slime skips it."""
    s = 2048
    gated, plain = qwen3_4b_args(attention_output_gate=True), qwen3_4b_args()
    extra = 36 * 2 * s * 2560 * 32 * 128
    for convention in ("megatron", "exact"):
        res = evaluate(registry, gated, convention, seq_len=s)
        assert res.slot_flops["attention.gate"] == extra
        assert res.forward - evaluate(registry, plain, convention, seq_len=s).forward == extra
    slime = evaluate(registry, gated, "slime", seq_len=s)
    assert slime.slot_flops["attention.gate"] == 0
    assert slime.forward == evaluate(registry, plain, "slime", seq_len=s).forward


def test_megatron_mla_without_q_lora_uses_a_full_query(registry):
    """q_lora_rank None: Megatron's q term is h n_h (d_n + d_r), with no "+1" column."""
    args = deepseek_v3_args(q_lora_rank=None, mtp_num_layers=None)
    res = evaluate(registry, args, "megatron", seq_len=512)
    assert res.slot_flops["attention.query"] == 61 * 2 * 512 * 7168 * 128 * (128 + 64)
    assert set(res.layers[0].patterns.values()) >= {"query_projection", "megatron_mla_projection"}


def test_megatron_does_not_count_router_or_shared_expert_gate(registry):
    """Megatron omits the router (h -> E) and the shared-expert gate (h -> 1); exact counts both."""
    args = deepseek_v3_args(moe_shared_expert_gate=True, mtp_num_layers=None)
    s = 256
    megatron = evaluate(registry, args, "megatron", seq_len=s)
    exact = evaluate(registry, args, "exact", seq_len=s)
    assert megatron.slot_flops["mlp.shared_gate"] == 0
    assert exact.slot_flops["mlp.shared_gate"] == 58 * 2 * s * 7168
    assert exact.slot_flops["mlp"] - megatron.slot_flops["mlp"] == 58 * 2 * s * 7168 * 256


def test_megatron_pads_the_vocabulary_by_its_defaults_when_no_padded_size_is_given(registry):
    """Without padded_vocab_size Megatron-LM pads vocab_size to a multiple of 128 x TP 1:
    GPT-2's 50,257 becomes the well-known 50,304 (393 x 128); exact counts the rows given."""
    args = llama3_8b_args(vocab_size=50257, padded_vocab_size=None)
    assert evaluate(registry, args, "megatron", seq_len=128).slot_flops["head"] == 2 * 128 * 4096 * 50304
    assert evaluate(registry, args, "exact", seq_len=128).slot_flops["head"] == 2 * 128 * 4096 * 50257


def test_megatron_mtp_repeats_the_logits_over_its_default_padding(registry):
    """DeepSeek-V3 with vocab_size 129,000 and no padded size: 129,024 rows (1,008 x 128) in the
    head and in the MTP depth's logits, as if padded_vocab_size 129,024 were given."""
    s, h = 1024, 7168
    derived = evaluate(registry, deepseek_v3_args(vocab_size=129000, padded_vocab_size=None), "megatron", seq_len=s)
    given = evaluate(registry, deepseek_v3_args(vocab_size=129000, padded_vocab_size=129024), "megatron", seq_len=s)
    assert derived.slot_flops["head"] == 2 * s * h * 129024
    assert derived.slot_flops["mtp"] == given.slot_flops["mtp"] and derived.training == given.training


def test_a_given_padded_vocabulary_wins_over_the_default_padding(registry):
    """padded_vocab_size (TP 8: 128,256 -> 129,024) selects the given-size logits by flag, never by value."""
    model = flopsreg.Model.from_megatron_args(llama3_8b_args(padded_vocab_size=129024))
    assert "padded_vocab_given" in model.flags and model.params["padded_vocab"] == 129024
    res = registry.evaluate(model, seq_len=128, convention="megatron")
    assert res.slot_flops["head"] == 2 * 128 * 4096 * 129024
    assert "head: megatron_logits (" in res.explain()


# ---------------------------------------------------------------------------------------------
# Selection: conventions are flags, never parameter values
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("convention", ["exact", "megatron", "slime"])
def test_parameters_never_select_patterns_under_a_convention(registry, convention):
    """MLA, q-lora and window parameters without their flags: GQA, full query, causal; each one warned."""
    model = flopsreg.Model.uniform(
        "params-only", layers=2, hidden=256, heads=8, kv_heads=2, head_dim=32,
        kv_lora_rank=32, q_lora_rank=64, window=16,
    )
    res = registry.evaluate(model, seq_len=64, convention=convention)
    patterns = res.layers[0].patterns
    assert patterns["attention.projection"] == "gqa_projection"
    assert patterns["attention.query"] == "query_projection"
    assert patterns["attention.mask"] == {"exact": "full_causal"}.get(convention, f"{convention}_causal")
    for name in ("kv_lora_rank", "q_lora_rank", "window"):
        assert any(name in warning for warning in res.warnings), (name, res.warnings)


def test_registered_conventions(registry):
    assert set(registry.conventions) == {"chunked_scan", "hf_trainer", "megatron", "megatron_bridge", "nanogpt", "olmo_core", "slime", "torchtitan", "verl", "vllm"}


@pytest.mark.parametrize("typo, closest", [("megatorn", "megatron"), ("slim", "slime"), ("exakt", "exact")])
def test_unknown_convention_names_the_closest(registry, typo, closest):
    with pytest.raises(flopsreg.ModelError, match=rf"convention: '{typo}'.*did you mean '{closest}'"):
        evaluate(registry, llama3_8b_args(), typo, seq_len=16)


def test_explain_under_a_convention_ranks_the_patterns(registry):
    """The trace names the convention and the ranking it won, e.g. over the sliding window."""
    text = registry.select(flopsreg.Model.from_megatron_args(gemma3_4b_args()), convention="megatron").explain()
    assert "convention: megatron" in text
    assert "megatron_causal 100 > sliding_window 20 > full_causal 10" in text
    assert "megatron_ffn 100 > gated_ffn 20 > plain_ffn 10" in text
    slime = registry.select(flopsreg.Model.from_megatron_args(gemma3_4b_args()), convention="slime").explain()
    assert "slime_causal 100 > sliding_window 20 > full_causal 10" in slime


def test_a_convention_flag_in_the_model_is_refused(registry):
    """A model that sets the flag 'megatron' itself would be counted Megatron's way while reporting
    convention 'exact'; conventions must be chosen with evaluate(convention=...) only."""
    model = flopsreg.Model.uniform("sneaky", layers=1, flags=["megatron"], hidden=64, heads=4, kv_heads=4, head_dim=16)
    with pytest.raises(flopsreg.ModelError, match="megatron"):
        registry.evaluate(model, seq_len=8)


# ---------------------------------------------------------------------------------------------
# The numbers printed in docs/conventions.md
# ---------------------------------------------------------------------------------------------

# (model, convention) -> (forward, training) of one 4096-token sequence, from the hand oracles.
DOCUMENTED = {
    ("Llama-3-8B", "exact"): (65_877_282_127_872, 197_631_846_383_616),
    ("Llama-3-8B", "megatron"): (65_876_208_386_048, 197_628_625_158_144),
    ("Llama-3-8B", "slime"): (65_876_208_386_048, 197_628_625_158_144),
    ("DeepSeek-V3", "exact"): (355_873_138_409_472, 1_067_619_415_228_416),
    ("DeepSeek-V3", "megatron"): (354_977_042_137_088, 1_064_931_126_411_264),
    ("DeepSeek-V3", "slime"): (308_064_582_369_280, 924_193_747_107_840),
    ("Gemma-3-4B", "exact"): (33_001_123_610_624, 99_003_370_831_872),
    ("Gemma-3-4B", "megatron"): (26_820_460_150_784, 80_461_380_452_352),
    ("Gemma-3-4B", "slime"): (34_485_634_596_864, 103_456_903_790_592),
}
DOCUMENTED_RATIOS = {  # training / exact training, as printed
    ("Llama-3-8B", "megatron"): "0.99998", ("Llama-3-8B", "slime"): "0.99998",
    ("DeepSeek-V3", "megatron"): "0.99748", ("DeepSeek-V3", "slime"): "0.86566",
    ("Gemma-3-4B", "megatron"): "0.81271", ("Gemma-3-4B", "slime"): "1.04498",
}
HAND_TRAINING = {
    ("Llama-3-8B", "exact"): lambda: 3 * llama_exact_forward(S),
    ("Llama-3-8B", "megatron"): lambda: llama_megatron_training(S),
    ("Llama-3-8B", "slime"): lambda: 3 * llama_slime_forward(S),
    ("DeepSeek-V3", "exact"): lambda: 3 * dsv3_exact_forward(S),
    ("DeepSeek-V3", "megatron"): lambda: sum(dsv3_megatron_terms(S).values()),
    ("DeepSeek-V3", "slime"): lambda: 3 * dsv3_slime_forward(S),
    ("Gemma-3-4B", "exact"): lambda: 3 * gemma_exact_forward(S),
    ("Gemma-3-4B", "megatron"): lambda: gemma_megatron_training(S),
    ("Gemma-3-4B", "slime"): lambda: 3 * gemma_slime_forward(S),
}
ARGS = {"Llama-3-8B": llama3_8b_args, "DeepSeek-V3": deepseek_v3_args, "Gemma-3-4B": gemma3_4b_args}


@pytest.mark.parametrize("key", sorted(DOCUMENTED))
def test_documented_numbers_are_the_hand_numbers(registry, key):
    """Each (forward, training) pair in the docs table equals the hand oracle and the library."""
    forward, training = DOCUMENTED[key]
    assert training == 3 * forward == HAND_TRAINING[key]()
    res = evaluate(registry, ARGS[key[0]](), key[1], seq_len=S)
    assert (res.forward, res.training) == (forward, training)


@pytest.mark.parametrize("key", sorted(DOCUMENTED_RATIOS))
def test_documented_ratios(key):
    ratio = Fraction(HAND_TRAINING[key](), HAND_TRAINING[(key[0], "exact")]())
    assert f"{float(ratio):.5f}" == DOCUMENTED_RATIOS[key]


def test_docs_print_exactly_these_numbers():
    """docs/conventions.md shows every documented number (so the doc cannot drift from the tests)."""
    text = DOC.read_text(encoding="utf-8")
    for forward, training in DOCUMENTED.values():
        assert f"{forward:,}" in text and f"{training:,}" in text
    for ratio in DOCUMENTED_RATIOS.values():
        assert ratio in text


def test_documented_differences_add_up():
    """The "why" column of the docs: each gap to exact, term by term, sums to the convention's total."""
    s = S
    exact = {name: HAND_TRAINING[(name, "exact")]() for name in ARGS}
    # Llama-3-8B: only s^2/2 versus s(s+1)/2 (the diagonal, s/2 pairs per layer).
    diagonal = 3 * 32 * 2 * 32 * (128 + 128) * (s * (s + 1) // 2 - s * s // 2)
    assert diagonal == 3_221_225_472
    assert HAND_TRAINING[("Llama-3-8B", "megatron")]() == exact["Llama-3-8B"] - diagonal
    # DeepSeek-V3 under Megatron: no router (58 MoE layers + the MoE MTP layer), s^2/2, "+1" norms, 3h.
    router = 3 * 59 * 2 * s * 7168 * 256
    core = 3 * 62 * 2 * 128 * (192 + 128) * (s * (s + 1) // 2 - s * s // 2)
    norms = 3 * 62 * 2 * s * (1536 + 512)
    mtp_norms = 3 * 2 * s * 3 * 7168
    assert (router, core, norms, mtp_norms) == (2_660_732_239_872, 31_205_621_760, 3_120_562_176, 528_482_304)
    assert HAND_TRAINING[("DeepSeek-V3", "megatron")]() == exact["DeepSeek-V3"] - router - core + norms + mtp_norms
    # Gemma-3-4B under Megatron: window-blind core, 2 FFN GEMMs; the same padded logits rows as exact.
    core_gap = 7_009_386_627_072 - 3_647_043_796_992
    ffn_gap = 3 * 34 * 2 * s * 2560 * 10240
    vocab_gap = 3 * 2 * s * 2560 * (262272 - 262208)
    assert (core_gap, ffn_gap, vocab_gap) == (3_362_342_830_080, 21_904_333_209_600, 4_026_531_840)
    assert HAND_TRAINING[("Gemma-3-4B", "megatron")]() == exact["Gemma-3-4B"] + core_gap - ffn_gap
    # Gemma-3-4B under slime: the same window-blind core, o-proj 2 s h^2 with h = 2560 > 8 x 256, and
    # logits over args.vocab_size without the 64 padding rows.
    o_proj = 3 * 34 * 2 * s * 2560 * (2560 - 8 * 256)
    assert o_proj == 1_095_216_660_480
    assert HAND_TRAINING[("Gemma-3-4B", "slime")]() == exact["Gemma-3-4B"] + core_gap + o_proj - vocab_gap


def test_documented_percentages():
    """The "why it matters" column of docs/conventions.md, from the hand numbers."""
    text = DOC.read_text(encoding="utf-8")
    llama = Fraction(HAND_TRAINING[("Llama-3-8B", "exact")]() - llama_megatron_training(S), HAND_TRAINING[("Llama-3-8B", "exact")]())
    assert f"-{float(100 * llama):.4f}%" == "-0.0016%"
    window_128 = Fraction(S * S // 2, 128 * 129 // 2 + (S - 128) * 128)  # one sliding layer, W = 128 keys
    assert f"x{float(window_128):.2f}" == "x16.25"
    o_proj = Fraction(99_033_355_911_168, 1_064_931_126_411_264)
    assert f"-{float(100 * o_proj):.1f}%" == "-9.3%"
    router = Fraction(3 * 59 * 2 * S * 7168 * 256, HAND_TRAINING[("DeepSeek-V3", "exact")]())
    assert f"{float(100 * router):.2f}%" == "0.25%"
    assert f"{41_700_953_161_728 / 1e12:.1f} TFLOP" == "41.7 TFLOP"
    assert f"{3_120_562_176 / 1e9:.1f} GFLOP" == "3.1 GFLOP"
    gemma_low = 1 - Fraction(HAND_TRAINING[("Gemma-3-4B", "megatron")](), HAND_TRAINING[("Gemma-3-4B", "exact")]())
    gemma_high = Fraction(HAND_TRAINING[("Gemma-3-4B", "slime")](), HAND_TRAINING[("Gemma-3-4B", "exact")]()) - 1
    assert (f"{float(100 * gemma_low):.0f}% low", f"{float(100 * gemma_high):.1f}% high") == ("19% low", "4.5% high")
    # slime g = 1 against exact: 32 k/v heads, and s/2 more pairs per layer at 2 n_h (d + d) each
    llama2_exact = llama2_slime_forward(S, g=32) + 32 * 2 * 32 * (128 + 128) * (S // 2)
    mha = 1 - Fraction(llama2_slime_forward(S, g=1), llama2_exact)
    assert f"-{float(100 * mha):.1f}%" == "-14.6%"
    for shown in (
        "-0.0016%", "x16.25", "x1.922", "-37.5%", "-9.3%", "0.25%", "41.7 TFLOP", "3.1 GFLOP", "19% low", "4.5% high",
        "-14.6%",
    ):
        assert shown in text, shown


@pytest.mark.parametrize("convention", ["slime", "nanogpt", "megatron_bridge"])
@pytest.mark.parametrize(("example", "mixer"), [("qwen3-next-80b-a3b", "gated_deltanet"), ("nemotron-3-nano-30b-a3b", "mamba2"), ("kimi-linear-48b-a3b", "kda")])
def test_conventions_that_count_every_layer_as_attention_refuse_mixer_layers(registry, convention, example, mixer):
    """slime, nanoGPT and (for a model read from a config) Megatron-Bridge have no term for a
    linear-attention or Mamba layer: a refusal naming the mixer, never a count of it as attention."""
    model = flopsreg.Model.example(example)
    with pytest.raises(flopsreg.ModelError, match=rf"slot mixer\.projection: .*this layer has a {mixer} mixer, which it never counts"):
        registry.evaluate(model, seq_len=4096, convention=convention)
    assert registry.evaluate(model, seq_len=4096).forward > 0  # exact counts it


@pytest.mark.parametrize("convention", ["megatron", "slime", "megatron_bridge"])
def test_frameworks_without_a_dsa_term_count_no_indexer_and_full_causal_pairs(registry, convention):
    """Megatron-LM's main branch, slime and Megatron-Bridge know no lightning indexer: DeepSeek-V3.2's
    top-k layers are their s^2/2 causal core and the indexer costs them nothing."""
    model = flopsreg.Model.example("deepseek-v3.2").with_param("padded_vocab", 129280)
    s = 8192
    result = registry.evaluate(model, seq_len=s, convention=convention)
    last = result.layers[-1]
    assert last.patterns["attention.topk_indexer"] == f"{convention}_dsa_indexer"
    assert result.selection.kind(last.kind).flops(s)["attention.topk_indexer"] == 0
    exact = registry.evaluate(model, seq_len=s)
    assert exact.selection.kind(last.kind).flops(s)["attention.topk_indexer"] > 0
    assert last.patterns["attention.mask"] != exact.layers[-1].patterns["attention.mask"]  # s^2/2, not the top-k pairs


@pytest.mark.parametrize(("example", "mixer"), [("kimi-linear-48b-a3b", "kda")])
def test_megatron_refuses_the_mixers_it_has_no_term_for(registry, example, mixer):
    """Megatron-LM counts Gated DeltaNet and Mamba layers its own way and nothing else: a KDA layer is refused."""
    model = flopsreg.Model.example(example).with_param("padded_vocab", 163840)
    with pytest.raises(flopsreg.ModelError, match=rf"has Gated DeltaNet and Mamba terms only; this layer has a {mixer} mixer"):
        registry.evaluate(model, seq_len=4096, convention="megatron")
