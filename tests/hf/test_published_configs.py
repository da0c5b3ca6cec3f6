"""Exact forward FLOPs of published Hugging Face configs against hand arithmetic.

Every expected number is written out matmul by matmul of the transformers forward pass
(2 FLOPs per multiply-add): q, k, v, the attention core over the pairs the real mask lets
through (per-query sums below), o, the MLP / router / experts / shared experts, and lm_head.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hf_data import path
from oracles import causal_pairs, chunk_pairs, window_pairs

import flopsreg
from flopsreg.cli import main


def gqa_attention(s, h, heads, kv_heads, d, pairs):
    return (
        2 * s * h * heads * d  # q_proj
        + 2 * s * h * kv_heads * d  # k_proj
        + 2 * s * h * kv_heads * d  # v_proj
        + 2 * heads * d * pairs  # QK^T over attended pairs
        + 2 * heads * d * pairs  # PV over attended pairs
        + 2 * s * heads * d * h  # o_proj
    )


def swiglu(s, h, width):
    return 3 * 2 * s * h * width  # gate_proj, up_proj, down_proj


def forward(registry, name, s, **kwargs):
    model = flopsreg.Model.from_hf_config(path(name), **kwargs)
    return registry.evaluate(model, seq_len=s).forward


def test_llama_3_8b(registry):
    s, h, V = 4096, 4096, 128256
    layer = gqa_attention(s, h, 32, 8, 128, causal_pairs(s)) + swiglu(s, h, 14336)
    assert forward(registry, "llama-3-8b", s) == 32 * layer + 2 * s * h * V  # + lm_head


def test_gemma_3_4b(registry):
    """29 layers slide over 1024 keys, 5 are full causal; GeGLU MLP of 10240."""
    s, h, V = 8192, 2560, 262208
    local = gqa_attention(s, h, 8, 4, 256, window_pairs(s, 1024)) + swiglu(s, h, 10240)
    full = gqa_attention(s, h, 8, 4, 256, causal_pairs(s)) + swiglu(s, h, 10240)
    assert forward(registry, "gemma-3-4b", s) == 29 * local + 5 * full + 2 * s * h * V


def test_mixtral_8x7b(registry):
    s, h, V = 4096, 4096, 32000
    moe = 2 * s * h * 8 + 2 * swiglu(s, h, 14336)  # router h -> 8, then 2 experts per token
    layer = gqa_attention(s, h, 32, 8, 128, causal_pairs(s)) + moe
    assert forward(registry, "mixtral-8x7b", s) == 32 * layer + 2 * s * h * V


def test_qwen3_30b_a3b(registry):
    """q width 32 x 128 = 4096 differs from hidden 2048."""
    s, h, V = 4096, 2048, 151936
    moe = 2 * s * h * 128 + 8 * swiglu(s, h, 768)  # router h -> 128, 8 experts of 768
    layer = gqa_attention(s, h, 32, 4, 128, causal_pairs(s)) + moe
    assert forward(registry, "qwen3-30b-a3b", s) == 48 * layer + 2 * s * h * V


def test_llama_4_scout(registry):
    """36 RoPE layers chunked at 8192, 12 NoPE layers full; s = 20000 spans three chunks."""
    s, h, V = 20000, 5120, 202048
    moe = 2 * s * h * 16 + 1 * swiglu(s, h, 8192) + swiglu(s, h, 8192)  # router, 1 expert, shared
    chunked = gqa_attention(s, h, 40, 8, 128, chunk_pairs(s, 8192)) + moe
    full = gqa_attention(s, h, 40, 8, 128, causal_pairs(s)) + moe
    assert forward(registry, "llama-4-scout", s) == 36 * chunked + 12 * full + 2 * s * h * V


def test_gpt_oss_20b(registry):
    """12 even layers slide over 128 keys; q width 64 x 64 = 4096 differs from hidden 2880."""
    s, h, V = 4096, 2880, 201088
    moe = 2 * s * h * 32 + 4 * swiglu(s, h, 2880)  # router h -> 32, 4 experts (fused gate/up)
    local = gqa_attention(s, h, 64, 8, 64, window_pairs(s, 128)) + moe
    full = gqa_attention(s, h, 64, 8, 64, causal_pairs(s)) + moe
    assert forward(registry, "gpt-oss-20b", s) == 12 * local + 12 * full + 2 * s * h * V


def mla(s, h, heads, q_lora, kv_lora, nope, rope, v, pairs):
    q = 2 * s * h * q_lora + 2 * s * q_lora * heads * (nope + rope) if q_lora else 2 * s * h * heads * (nope + rope)
    return (
        q  # q_a_proj + q_b_proj, or q_proj
        + 2 * s * h * (kv_lora + rope)  # kv_a_proj_with_mqa
        + 2 * s * kv_lora * heads * (nope + v)  # kv_b_proj
        + 2 * heads * (nope + rope) * pairs  # QK^T, qk_head_dim = nope + rope
        + 2 * heads * v * pairs  # PV
        + 2 * s * heads * v * h  # o_proj
    )


def deepseek_v3(s):
    h, V = 7168, 129280
    attn = mla(s, h, 128, 1536, 512, 128, 64, 128, causal_pairs(s))
    dense = attn + swiglu(s, h, 18432)
    moe = attn + 2 * s * h * 256 + 8 * swiglu(s, h, 2048) + swiglu(s, h, 1 * 2048)  # router, 8 experts, shared
    return dense, moe, 3 * dense + 58 * moe + 2 * s * h * V


def test_deepseek_v3_without_mtp(registry):
    s = 4096
    assert forward(registry, "deepseek-v3", s) == deepseek_v3(s)[2]


def test_deepseek_v3_with_mtp_adds_one_moe_layer_eh_projection_and_head(registry):
    s, h, V = 4096, 7168, 129280
    _, moe, total = deepseek_v3(s)
    assert forward(registry, "deepseek-v3", s, blocks=("mtp",)) == total + moe + 2 * s * 2 * h * h + 2 * s * h * V


def test_deepseek_v2_lite(registry):
    """q_lora_rank null: direct q_proj; layer 0 dense, 26 MoE layers with 2 shared experts."""
    s, h, V = 4096, 2048, 102400
    attn = mla(s, h, 16, None, 512, 128, 64, 128, causal_pairs(s))
    dense = attn + swiglu(s, h, 10944)
    moe = attn + 2 * s * h * 64 + 6 * swiglu(s, h, 1408) + swiglu(s, h, 2 * 1408)
    assert forward(registry, "deepseek-v2-lite", s) == dense + 26 * moe + 2 * s * h * V


def test_qwen2_moe(registry):
    s, h, V = 4096, 3584, 151936
    moe = (
        2 * s * h * 64  # router h -> 64
        + 8 * swiglu(s, h, 2560)  # 8 routed experts
        + swiglu(s, h, 20480)  # shared expert
        + 2 * s * h * 1  # shared_expert_gate h -> 1
    )
    layer = gqa_attention(s, h, 28, 4, 128, causal_pairs(s)) + moe
    assert forward(registry, "qwen2-moe", s) == 28 * layer + 2 * s * h * V


def test_mistral_7b(registry):
    s, h, V = 8192, 4096, 32000
    layer = gqa_attention(s, h, 32, 8, 128, window_pairs(s, 4096)) + swiglu(s, h, 14336)
    assert forward(registry, "mistral-7b-v0.1", s) == 32 * layer + 2 * s * h * V


@pytest.mark.parametrize(
    ("name", "s"), [("llama-3-8b", 4096), ("gemma-3-4b", 8192), ("deepseek-v3", 4096)]
)
def test_cli_eval_json_gives_the_same_exact_total(registry, name, s, monkeypatch):
    """`flopsreg eval <config.json> --seq-len S --format json` prints the exact total."""
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["eval", str(path(name)), "--seq-len", str(s), "--format", "json"])
    assert status == 0
    expected = {
        "llama-3-8b": lambda: 32 * (gqa_attention(s, 4096, 32, 8, 128, causal_pairs(s)) + swiglu(s, 4096, 14336))
        + 2 * s * 4096 * 128256,
        "gemma-3-4b": lambda: 29 * (gqa_attention(s, 2560, 8, 4, 256, window_pairs(s, 1024)) + swiglu(s, 2560, 10240))
        + 5 * (gqa_attention(s, 2560, 8, 4, 256, causal_pairs(s)) + swiglu(s, 2560, 10240))
        + 2 * s * 2560 * 262208,
        "deepseek-v3": lambda: deepseek_v3(s)[2],
    }[name]()
    assert json.loads(out.getvalue())["forward_flops"] == str(expected)
