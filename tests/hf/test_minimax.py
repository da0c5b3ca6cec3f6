"""MiniMax-01's lightning attention as patterns and the ``minimax`` Hugging Face reader (issue 10).

Expected numbers: the recurrence run on numbers token by token and the block algorithm of
transformers' MiniMaxLightningAttention written out step by step (both below, every multiply-add
counted in loops), or hand arithmetic from the published MiniMax-Text-01 config written here.
The recorded forward passes of a tiny MiniMax are checked in tests/hf/test_linear_forward.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import linear_oracles as lo
import pytest

import flopsreg
from flopsreg import ModelError
from flopsreg.formula.exact import compile_exact

HF = Path(__file__).parents[1] / "data" / "hf"
PARAMS = json.loads((Path(__file__).parents[1] / "data" / "hf_params" / "params.json").read_text())["models"]


def config(**changes) -> dict:
    return {**json.loads((HF / "minimax-text-01.json").read_text()), **changes}


def load(cfg: dict) -> flopsreg.Model:
    return flopsreg.Model.from_hf_config(cfg)


# Every lightning pattern with a cached-prefix form, for tests/engine/test_serving.py's identity.
IDENTITY_MODELS = [("minimax-text-01", load(config()), ("exact",))]


# -- the oracles ------------------------------------------------------------------------------


def lightning_recurrent_macs(s: int, heads: int, d: int) -> int:
    """Token by token, per head a d x d state S: S = lambda S (elementwise), S += k v^T, o = S^T q."""
    rng = random.Random(0)
    count = lo.Counter()
    for _ in range(heads):
        decay = rng.uniform(0, 1)
        state = [[0.0] * d for _ in range(d)]
        for _ in range(s):
            q, k, v = ([rng.uniform(-1, 1) for _ in range(d)] for _ in range(3))
            state = [[decay * x for x in row] for row in state]  # elementwise: not counted
            for i in range(d):
                for j in range(d):
                    state[i][j] += k[i] * v[j]
                    count.macs += 1
            [count.dot([state[i][j] for i in range(d)], q) for j in range(d)]  # o = S^T q
    return count.macs


def lightning_block_macs(s: int, heads: int, d: int, block: int) -> int:
    """MiniMaxLightningAttention's loop over blocks of *block* tokens (the last one partial), per head:
    intra Q K^T (B_k x d x B_k), its decay-masked product with V (B_k x B_k x d), inter (Q o decay) S
    (B_k x d x d) and the state update (K o decay)^T V (d x B_k x d)."""
    count = lo.Counter()
    for _ in range(heads):
        start = 0
        while start < s:
            size = min(block, s - start)
            count.product(size, d, size)
            count.product(size, size, d)
            count.product(size, d, d)
            count.product(d, size, d)
            start += size
    return count.macs


def _core(registry, name: str, s: int, heads: int, d: int, block: int = 1) -> int:
    return compile_exact(registry.pattern(name).formula)({"seq_len": s, "heads": heads, "head_dim": d, "lightning_block": block})


# -- the patterns -----------------------------------------------------------------------------


@pytest.mark.parametrize(("s", "heads", "d"), [(1, 1, 1), (5, 2, 3), (9, 3, 2)])
def test_the_lightning_core_is_the_recurrence_token_by_token(registry, s, heads, d):
    assert _core(registry, "lightning_core", s, heads, d) == 2 * lightning_recurrent_macs(s, heads, d)


@pytest.mark.parametrize(("s", "block"), [(1, 4), (4, 4), (5, 4), (13, 4), (16, 8), (17, 3), (2, 1), (3, 256)])
@pytest.mark.parametrize(("heads", "d"), [(1, 2), (3, 4)])
def test_the_chunked_lightning_core_is_the_block_algorithm(registry, s, block, heads, d):
    assert _core(registry, "lightning_chunked_core", s, heads, d, block) == 2 * lightning_block_macs(s, heads, d, block)


def test_the_block_algorithm_computes_more_than_the_recurrence_past_a_few_tokens(registry):
    # s = 512, B = 256, H = 1, d = 4: 4 d (2 x 256^2 + 512 d) against 4 s d^2
    assert _core(registry, "lightning_chunked_core", 512, 1, 4, 256) == 4 * 4 * (2 * 256**2 + 512 * 4)
    assert _core(registry, "lightning_core", 512, 1, 4) == 4 * 512 * 4**2


def test_the_weights_of_a_lightning_mixer(registry):
    values = {"hidden": 64, "heads": 4, "head_dim": 16, "lightning_block": 16}
    held = {name: compile_exact(registry.pattern(name).weights)(values) for name in ("lightning_projection", "lightning_core", "lightning_chunked_core", "lightning_output")}
    # qkv_proj 64 x 192 and output_gate 64 x 64; no parameter in the core (its decays are buffers);
    # out_proj 64 x 64 and the RMSNorm over 64
    assert held == {"lightning_projection": 64 * 192 + 64 * 64, "lightning_core": 0, "lightning_chunked_core": 0, "lightning_output": 64 * 64 + 64}


# -- the reader on MiniMax-Text-01 --------------------------------------------------------------

H, HEADS, KV, D, E, F, V = 6144, 64, 8, 128, 32, 9216, 200064


def test_minimax_text_01_layout_and_one_token_by_hand(registry):
    model = load(config())
    assert [model.plan.kind_at(i) for i in range(80)] == (["lightning"] * 7 + ["full"]) * 10
    lightning = registry.select(model).kind("lightning").flops(1)
    assert lightning["mixer.projection"] == 2 * H * (3 * HEADS * D + HEADS * D)  # qkv_proj, output_gate
    assert lightning["mixer.core"] == 4 * HEADS * D * D
    assert lightning["mixer.output"] == 2 * HEADS * D * H
    assert not [slot for slot in lightning if slot.startswith("attention")]  # no attention slots on a lightning layer
    # router 6144 -> 32, two experts of 9216 (SwiGLU)
    assert lightning["mlp"] == 2 * H * E + 2 * 2 * H * F * 3
    full = registry.select(model).kind("full").flops(1)
    assert full["attention.query"] + full["attention.projection"] + full["attention.output"] == 2 * H * (HEADS * D + 2 * KV * D + HEADS * D)
    assert full["attention.core"] == 2 * HEADS * (D + D) * 1


def test_minimax_text_01_forward_at_4k_by_hand(registry):
    s = 4096
    moe = 2 * s * H * E + 2 * s * 2 * H * F * 3
    lightning = 2 * s * H * 4 * HEADS * D + 4 * s * HEADS * D * D + 2 * s * HEADS * D * H + moe
    full = 2 * s * H * (2 * HEADS * D + 2 * KV * D) + 2 * HEADS * 2 * D * s * (s + 1) // 2 + moe
    assert registry.evaluate(load(config()), seq_len=s).forward == 70 * lightning + 10 * full + 2 * s * H * V
    # chunked_scan: 16 whole blocks of 256, 4 H d (16 x 256^2 + s d) per lightning layer
    chunked = lightning - 4 * s * HEADS * D * D + 4 * HEADS * D * (16 * 256**2 + s * D)
    assert registry.evaluate(load(config()), seq_len=s, convention="chunked_scan").forward == 70 * chunked + 10 * full + 2 * s * H * V


def test_minimax_text_01_parameters_are_what_transformers_allocates(registry):
    counts = registry.parameters(load(config()))
    assert counts.total == PARAMS["minimax-text-01"]["total"]
    # per lightning layer: qkv 6144 x 24576, gate and out 6144 x 8192 each, norm 8192
    by_name = PARAMS["minimax-text-01"]["by_name"]
    held = sum(by_name[f"model.layers.*.self_attn.{part}.weight"] for part in ("qkv_proj", "output_gate", "out_proj", "norm"))
    assert held == 70 * (H * 3 * HEADS * D + 2 * H * HEADS * D + HEADS * D)


def test_layer_types_must_be_given():
    cfg = config()
    del cfg["layer_types"]
    with pytest.raises(ModelError, match=r"layer_types: missing .*7 lightning : 1 full"):
        load(cfg)


def test_an_unknown_layer_type_is_refused_by_index():
    cfg = config()
    cfg["layer_types"] = ["linear_attention"] * 79 + ["sliding_attention"]
    with pytest.raises(ModelError, match=r"layer_types\[79\] = 'sliding_attention'"):
        load(cfg)


def test_a_sliding_window_applies_to_every_full_attention_layer(registry):
    model = load(config(sliding_window=1024))
    assert [model.plan.kind_at(i) for i in range(8)] == ["lightning"] * 7 + ["sliding"]
    s, w = 4096, 1024
    pairs = w * (w + 1) // 2 + (s - w) * w
    assert registry.select(model).kind("sliding").flops(s)["attention.core"] == 2 * HEADS * 2 * D * pairs


def test_class_defaults_block_size_and_head_dim(registry):
    cfg = config(hidden_size=4096, num_attention_heads=32)
    del cfg["head_dim"]
    model = load(cfg)
    assert model.params["head_dim"] == 128 and model.params["lightning_block"] == 256
    assert load(config(block_size=64)).params["lightning_block"] == 64


def test_a_shared_expert_of_the_remote_code_is_refused():
    with pytest.raises(ModelError, match="shared_intermediate_size.*no shared expert"):
        load(config(shared_intermediate_size=9216))


@pytest.mark.parametrize("convention", ["slime", "nanogpt", "megatron_bridge"])
def test_conventions_that_count_every_layer_as_attention_refuse_lightning_layers(registry, convention):
    with pytest.raises(ModelError, match="lightning mixer"):
        registry.evaluate(load(config()), seq_len=8, convention=convention)


def test_compare_shows_the_block_algorithm_against_the_recurrent_minimum(registry):
    s = 300  # blocks of 256 and 44
    model = load(config())
    exact, chunked = (t.result.forward for t in registry.compare(model, seq_len=s, conventions=["chunked_scan"]).totals)
    assert chunked - exact == 70 * (4 * HEADS * D * (256**2 + 44**2 + s * D) - 4 * s * HEADS * D * D)
