"""The Hugging Face readers of GLM-4.5 (glm4_moe), MiniMax-M2, Mistral Small 4 (mistral4),
StarCoder2 and Kimi-K2.x (kimi_k25) against hand arithmetic from the configs in tests/data/hf.

Every expected number is written out matmul by matmul (2 FLOPs per multiply-add), the attention
core over the pairs the real mask lets through; DSA and Gemma 4 have files of their own.
"""

from __future__ import annotations

import pytest
from hf_data import config, path
from oracles import causal_pairs, window_pairs

import flopsreg
from flopsreg.declarations.readers import HFReader
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.readers.decoder import Decoder
from flopsreg.readers.fields import gqa_params
from flopsreg.readers.hf import load_hf_config

S = 4096


def forward(registry, data, s=S) -> int:
    return registry.evaluate(flopsreg.Model.from_hf_config(data), seq_len=s).forward


def gqa(s, h, heads, kv_heads, d, pairs):
    return 2 * s * h * heads * d + 2 * 2 * s * h * kv_heads * d + 2 * 2 * heads * d * pairs + 2 * s * heads * d * h


def mla(s, h, heads, q_lora, kv_lora, nope, rope, v, pairs):
    query = 2 * s * h * q_lora + 2 * s * q_lora * heads * (nope + rope) if q_lora else 2 * s * h * heads * (nope + rope)
    return (
        query
        + 2 * s * h * (kv_lora + rope) + 2 * s * kv_lora * heads * (nope + v)  # kv_a_proj_with_mqa, kv_b_proj
        + 2 * heads * (nope + rope + v) * pairs  # QK^T and PV
        + 2 * s * heads * v * h  # o_proj
    )


def moe(s, h, experts, top_k, width, shared=0):
    return 2 * s * h * experts + top_k * 3 * 2 * s * h * width + 3 * 2 * s * h * shared


def test_glm_4_5_air(registry):
    """46 layers of GQA (96 heads of 128, 8 KV heads); layer 0 dense (10944), then MoE 128 x 1408, top 8, 1 shared."""
    h, V = 4096, 151552
    attention = gqa(S, h, 96, 8, 128, causal_pairs(S))
    expected = attention + 3 * 2 * S * h * 10944 + 45 * (attention + moe(S, h, 128, 8, 1408, 1408)) + 2 * S * h * V
    assert forward(registry, path("glm-4.5-air")) == expected


def test_glm4_moe_head_dim_falls_back_to_hidden_over_heads_as_transformers_does(registry):
    data = config("glm-4.5-air")
    del data["head_dim"]  # getattr(config, "head_dim", hidden // heads): 4096 // 96 = 42
    model = flopsreg.Model.from_hf_config(data)
    assert model.params["head_dim"] == 42


def test_minimax_m2(registry):
    """62 layers, GQA 48 x 128 over 8 KV heads, MoE on every layer: 256 experts of intermediate_size 1536, top 8."""
    h, V = 3072, 200064
    layer = gqa(S, h, 48, 8, 128, causal_pairs(S)) + moe(S, h, 256, 8, 1536)
    assert forward(registry, path("minimax-m2")) == 62 * layer + 2 * S * h * V


def test_minimax_m2_refuses_a_window_its_modeling_ignores():
    with pytest.raises(flopsreg.ModelError, match="sliding_window: MiniMaxM2's modeling applies no window"):
        flopsreg.Model.from_hf_config({**config("minimax-m2"), "sliding_window": 4096})


def test_mistral_small_4(registry):
    """36 MLA layers (q_lora 1024, kv_lora 256, nope 64, rope 64, v 128), every one MoE: 128 x 2048, top 4, 1 shared."""
    h, V = 4096, 131072
    layer = mla(S, h, 32, 1024, 256, 64, 64, 128, causal_pairs(S)) + moe(S, h, 128, 4, 2048, 2048)
    assert forward(registry, path("mistral-small-4")) == 36 * layer + 2 * S * h * V


def test_mistral4_class_defaults_and_null_first_k_dense_replace(registry):
    data = {k: v for k, v in config("mistral-small-4").items() if k not in ("first_k_dense_replace", "q_lora_rank", "n_shared_experts")}
    assert forward(registry, data) == forward(registry, path("mistral-small-4"))  # the defaults are 0, 1024, 1
    with pytest.raises(flopsreg.ModelError, match="first_k_dense_replace = null"):
        flopsreg.Model.from_hf_config({**data, "first_k_dense_replace": None})


def test_starcoder2_has_a_plain_mlp(registry):
    """30 layers, GQA 24 x 128 over 2 KV heads, c_fc and c_proj of 12288 (2 matmuls, no gate)."""
    h, V = 3072, 49152
    layer = gqa(S, h, 24, 2, 128, causal_pairs(S)) + 2 * 2 * S * h * 12288
    assert forward(registry, path("starcoder2")) == 30 * layer + 2 * S * h * V


def test_starcoder2_slides_on_every_layer_when_the_window_is_set(registry):
    h, V = 3072, 49152
    layer = gqa(S, h, 24, 2, 128, window_pairs(S, 1024)) + 2 * 2 * S * h * 12288
    assert forward(registry, {**config("starcoder2"), "sliding_window": 1024}) == 30 * layer + 2 * S * h * V


def test_kimi_k2_text_config(registry):
    """Kimi-K2.x: DeepSeek-V3's decoder with 64 heads and 384 experts; layer 0 dense."""
    h, V = 7168, 163840
    attention = mla(S, h, 64, 1536, 512, 128, 64, 128, causal_pairs(S))
    expected = attention + 3 * 2 * S * h * 18432 + 60 * (attention + moe(S, h, 384, 8, 2048, 2048)) + 2 * S * h * V
    assert forward(registry, path("kimi-k2.6")) == expected
    data = config("kimi-k2.6")
    data["text_config"]["model_type"] = "deepseek_v3"  # as transformers rewrites it
    assert forward(registry, data) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ({"model_type": "qwen3"}, r"text_config.model_type = 'qwen3': unsupported for model_type kimi_k25 \(expected one of: deepseek_v3, kimi_k2\)"),
        (None, r"text_config: missing"),
    ],
)
def test_kimi_k25_refuses_another_decoder(text, message):
    data = config("kimi-k2.6")
    if text is None:
        del data["text_config"]
    else:
        data["text_config"].update(text)
    with pytest.raises(flopsreg.ModelError, match=message):
        flopsreg.Model.from_hf_config(data)


# --- the loader keeps the attention kinds a reader defines itself (Gemma 4 needs them) -------


class OwnKinds:
    """A reader giving one layer a kind of its own (flags and parameters) beside a layer_types string."""

    def __init__(self, own_name: str):
        self.own_name = own_name

    @flopsreg.hookimpl
    def flopsreg_register_hf_readers(self):
        def read(c):
            return Decoder(
                params={**gqa_params(c), "vocab": c.int("vocab_size")},
                flags={"gated", "lm_head"},
                attention=["full_attention", self.own_name],
                attention_kinds={self.own_name: (frozenset({"sliding_window"}), {"window": 3})},
                mlps=["dense", "dense"],
                mlp_kinds={"dense": dense_mlp(8)},
            )

        return [HFReader(name="ownkinds", read=read, summary="a test reader with a kind of its own")]


OWN = {"model_type": "ownkinds", "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 16}


def test_a_readers_own_attention_kind_is_kept_beside_a_layer_type():
    registry = flopsreg.Registry(plugins=[OwnKinds("narrow")], load_entry_points=False)
    model = load_hf_config(OWN, registry=registry)
    assert [layer.kind for layer in model.layers] == ["full", "narrow"]
    assert model.layers[1].params["window"] == 3 and "sliding_window" in model.layers[1].flags


def test_a_readers_own_kind_may_not_take_a_layer_types_kind_name():
    registry = flopsreg.Registry(plugins=[OwnKinds("full")], load_entry_points=False)
    with pytest.raises(flopsreg.ModelError, match="layer types 'full_attention' and 'full' both name layer kind 'full'"):
        load_hf_config(OWN, registry=registry)
