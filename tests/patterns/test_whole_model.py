"""Whole-model patterns (MLP, MoE, shared experts, logits, MTP), training passes and recompute.

Expected numbers are written out matmul by matmul; none is taken from the engine.
"""

import pytest

import flopsreg
from flopsreg import LayerKind, Model, Plan

S = 256
DIMS = dict(hidden=512, heads=8, kv_heads=2, head_dim=64)


def attention(s: int, hidden=512, heads=8, kv_heads=2, head_dim=64) -> int:
    """One GQA full-causal layer, by hand."""
    pairs = s * (s + 1) // 2
    return (
        2 * s * hidden * heads * head_dim  # q
        + 2 * 2 * s * hidden * kv_heads * head_dim  # k and v
        + 2 * heads * 2 * head_dim * pairs  # QK^T and PV
        + 2 * s * heads * head_dim * hidden  # o
    )


def test_dense_mlp_plain_has_two_matmuls_and_gated_three(registry):
    plain = Model.uniform("m", layers=1, flags=["mlp"], ffn_hidden=1536, **DIMS)
    gated = Model.uniform("m", layers=1, flags=["mlp", "gated"], ffn_hidden=1536, **DIMS)
    assert registry.evaluate(plain, seq_len=S).forward == attention(S) + 2 * (2 * S * 512 * 1536)
    assert registry.evaluate(gated, seq_len=S).forward == attention(S) + 3 * (2 * S * 512 * 1536)


def test_moe_counts_router_and_top_k_experts_never_all(registry):
    model = Model.uniform(
        "m", layers=1, flags=["moe", "gated"], experts=64, top_k=4, expert_hidden=256, **DIMS
    )
    router = 2 * S * 512 * 64
    routed = 4 * 3 * (2 * S * 512 * 256)  # 4 experts per token, 3 matmuls each
    assert registry.evaluate(model, seq_len=S).forward == attention(S) + router + routed


def test_moe_with_one_expert_and_top_1_is_a_dense_mlp_plus_its_router(registry):
    moe = Model.uniform("m", layers=1, flags=["moe", "gated"], experts=1, top_k=1, expert_hidden=700, **DIMS)
    dense = Model.uniform("m", layers=1, flags=["mlp", "gated"], ffn_hidden=700, **DIMS)
    router = 2 * S * 512 * 1
    assert registry.evaluate(moe, seq_len=S).forward == registry.evaluate(dense, seq_len=S).forward + router


def test_shared_experts_and_qwen_shared_expert_gate(registry):
    flags = ["moe", "gated", "shared_experts", "shared_expert_gate"]
    params = dict(experts=60, top_k=4, expert_hidden=1408, shared_hidden=5632, **DIMS)
    model = Model.uniform("m", layers=1, flags=flags, **params)
    expected = (
        attention(S)
        + 2 * S * 512 * 60  # router
        + 4 * 3 * 2 * S * 512 * 1408  # routed experts
        + 3 * 2 * S * 512 * 5632  # shared experts, total width
        + 2 * S * 512 * 1  # shared-expert gate
    )
    result = registry.evaluate(model, seq_len=S)
    assert result.forward == expected
    assert result.layers[0].patterns["mlp.shared_gate"] == "shared_expert_gate"


def test_moe_rejects_top_k_above_experts(registry):
    model = Model.uniform("m", layers=1, flags=["moe"], experts=4, top_k=8, expert_hidden=64, **DIMS)
    with pytest.raises(flopsreg.ModelError, match=r"experts = 4, top_k = 8: top_k must not exceed experts"):
        registry.evaluate(model, seq_len=8)


def test_logits_head_is_counted_once_per_position(registry):
    model = Model.uniform("m", layers=2, flags=["lm_head"], vocab=32000, **DIMS)
    result = registry.evaluate(model, seq_len=S, batch=3)
    assert result.slot_flops["head"] == 3 * 2 * S * 512 * 32000
    assert result.forward == 3 * (2 * attention(S) + 2 * S * 512 * 32000)


def test_attention_only_layers_report_no_mlp_activation(registry):
    """A quantity-only slot nobody uses (the FFN matmul count) is not selected at all."""
    model = Model.uniform("m", layers=1, **DIMS)
    assert "mlp.activation" not in registry.select(model).kinds[0].patterns


def _deepseek_like(mtp: bool) -> Model:
    return Model(
        name="dsv3-small",
        flags=["gated", "lm_head", "mla", "q_lora"] + (["mtp"] if mtp else []),
        params=dict(
            hidden=1024, heads=16, q_lora_rank=384, kv_lora_rank=128, qk_nope_head_dim=64,
            qk_rope_head_dim=32, v_head_dim=64, vocab=5000,
        ),
        kinds={
            "dense": LayerKind(flags={"mlp"}, params={"ffn_hidden": 2816}),
            "moe": LayerKind(
                flags={"moe", "shared_experts"},
                params={"experts": 32, "top_k": 4, "expert_hidden": 256, "shared_hidden": 256},
            ),
        },
        plan=Plan(layers=4, first=["dense"], cycle=["moe"], mtp=["moe"] if mtp else []),
    )


def _mla_layer(s: int) -> int:
    h, n = 1024, 16
    return (
        2 * s * (h * 384 + 384 * n * (64 + 32))  # q: hidden -> q_lora -> heads x (nope + rope)
        + 2 * s * (h * (128 + 32) + 128 * n * (64 + 64))  # kv: hidden -> latent + rope key; latent -> k_nope, v
        + 2 * n * ((64 + 32) + 64) * (s * (s + 1) // 2)  # QK^T and PV
        + 2 * s * n * 64 * h  # o
    )


def test_mla_moe_model_and_its_mtp_module():
    s, h, vocab = 128, 1024, 5000
    dense = _mla_layer(s) + 3 * 2 * s * h * 2816
    moe = _mla_layer(s) + 2 * s * h * 32 + 4 * 3 * 2 * s * h * 256 + 3 * 2 * s * h * 256
    head = 2 * s * h * vocab
    reg = flopsreg.Registry(load_entry_points=False)
    without = reg.evaluate(_deepseek_like(mtp=False), seq_len=s)
    assert without.forward == dense + 3 * moe + head
    with_mtp = reg.evaluate(_deepseek_like(mtp=True), seq_len=s)
    eh_projection = 2 * s * (2 * h) * h
    assert with_mtp.forward == without.forward + moe + eh_projection + head
    assert len(with_mtp.layers) == 4  # the MTP module's layer is not a decoder layer
    assert with_mtp.slot_flops["mtp"] == moe + eh_projection + head


def test_mtp_flag_and_plan_must_agree(registry):
    no_layers = Model.uniform("m", layers=1, flags=["lm_head", "mtp"], vocab=100, **DIMS)
    with pytest.raises(flopsreg.ModelError, match=r"mtp_layers = 0: flag mtp needs the MTP decoder layers listed in plan.mtp"):
        registry.select(no_layers)
    no_flag = Model(name="m", params={**DIMS, "vocab": 100}, flags=["lm_head"], kinds={"a": LayerKind()},
                    plan=Plan(layers=1, cycle=["a"], mtp=["a"]))
    with pytest.raises(flopsreg.ModelError, match=r"plan.mtp lists 1 layer\(s\), but no selected pattern counts them \(set the flag of a pattern that does: .*mtp"):
        registry.select(no_flag)


def test_training_is_three_forwards_plus_requested_recomputation(registry):
    model = Model.uniform("m", layers=3, flags=["mlp", "lm_head"], ffn_hidden=2048, vocab=1000, **DIMS)
    s = 300
    core = 2 * 8 * (64 + 64) * (s * (s + 1) // 2)
    layer = attention(s) + 2 * 2 * s * 512 * 2048
    head = 2 * s * 512 * 1000
    none = registry.evaluate(model, seq_len=s)
    assert none.forward == 3 * layer + head
    assert none.training == 3 * none.forward
    assert registry.evaluate(model, seq_len=s, recompute="selective").training == 3 * none.forward + 3 * core
    assert registry.evaluate(model, seq_len=s, recompute="full").training == 3 * none.forward + 3 * layer
    with pytest.raises(flopsreg.ModelError, match=r"recompute: 'ful' is not a recomputation mode; did you mean 'full'"):
        registry.evaluate(model, seq_len=s, recompute="ful")


def test_packed_sequences_cost_less_than_one_long_sequence(registry):
    model = Model.uniform("m", layers=2, flags=["mlp", "gated", "lm_head"], ffn_hidden=1024, vocab=500, **DIMS)
    packed = registry.evaluate(model, seqlens=[2048, 2048]).forward
    assert packed == 2 * registry.evaluate(model, seq_len=2048).forward
    assert packed < registry.evaluate(model, seq_len=4096).forward
    # only the attention core differs: 2 * P(2048) vs P(4096) pairs
    core_per_pair = 2 * 8 * 128 * 2  # two layers
    assert registry.evaluate(model, seq_len=4096).forward - packed == core_per_pair * (
        4096 * 4097 // 2 - 2 * (2048 * 2049 // 2)
    )
