"""Hugging Face reader of ``mimo_v2_flash`` (MiMo-V2-Flash): grouped-query attention whose value
heads are narrower than its query/key heads, full and sliding layers that differ in their key/value
heads and sinks, and dense or MoE MLPs per ``mlp_layer_types``.

Read from transformers 5.24 ``models/mimo_v2_flash/{configuration,modeling}_mimo_v2_flash.py``:
``MiMoV2FlashAttention`` builds q_proj (h -> n_h x head_dim), k_proj (h -> n_kv x head_dim),
v_proj (h -> n_kv x v_head_dim), all three biased iff attention_bias, and o_proj (n_h x v_head_dim
-> h, never biased); a sliding layer has twice num_key_value_heads and a learned sink per head.
The value scale, partial rotary and per-type RoPE thetas run no matmul. MLPs: a dense MLP of
intermediate_size or DeepSeek-V3's router (an E x h weight; e_score_correction_bias a buffer) and
n_routed_experts experts of moe_intermediate_size, no shared experts. No MTP layers are built.
"""

from flopsreg.patterns.attention_sinks import ATTENTION_SINKS
from flopsreg.patterns.biases import QKV_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.gqa_projection import KV_HEADS
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf.layer_types import FULL, SLIDING
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.patterns.value_head_dim import FLAG, VALUE_HEAD_DIM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

MLP_TYPES = {"dense": "dense", "sparse": "moe"}


def _attention(c: Fields, layers: int) -> Layers[str]:
    """layer_types, else MiMoV2FlashConfig.__post_init__'s: layer i is full iff i == 0 or (i + 1) % 6 == 0."""
    given = type_list(c, "layer_types", (FULL, SLIDING), layers)
    if given is not None:
        return Layers.of(given)
    return Layers.rule(layers, lambda i: FULL if i == 0 or (i + 1) % 6 == 0 else SLIDING, period=6, start=min(1, layers))


def _window(c: Fields) -> int:
    """sliding_window (129), or a hub config's sliding_window_size + 1 (the class adds the query itself)."""
    size = c.optional_int("sliding_window_size")
    return size + 1 if size is not None else c.int_or_default("sliding_window", 129)


def mimo_v2_flash(c: Fields) -> Decoder:
    """MiMoV2FlashConfig: head_dim 192, v_head_dim 128, sliding layers with 2 x num_key_value_heads and sinks."""
    layers, heads, kv_heads = c.int("num_hidden_layers"), c.int("num_attention_heads"), c.int_or_default("num_key_value_heads", 4)
    attention = _attention(c, layers)
    # named "full" and "sliding" (not the layer_types strings: these kinds carry their own key/value heads and sinks)
    attention = attention.map({FULL: "full", SLIDING: "sliding"}.__getitem__)
    attention_kinds = {
        "full": (frozenset(), {KV_HEADS.name: kv_heads}),
        "sliding": (SLIDING_WINDOW.flags | ATTENTION_SINKS.flags, {KV_HEADS.name: 2 * kv_heads, WINDOW.name: _window(c)}),
    }
    given = type_list(c, "mlp_layer_types", MLP_TYPES, layers)
    mlps = Layers.of(given).map(MLP_TYPES.__getitem__) if given is not None else Layers.split(layers, "dense", "moe", 1)
    mlp_kinds = {}
    if "dense" in mlps:
        mlp_kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        mlp_kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"))
    params = {
        "hidden": c.int("hidden_size"), "heads": heads, "head_dim": c.int_or_default("head_dim", 192),
        VALUE_HEAD_DIM.name: c.int_or_default("v_head_dim", 128), "vocab": c.int("vocab_size"),
    }
    flags = silu_gated(c) | weight_flags(c, tied=False) | {FLAG}
    if c.bool("attention_bias", default=False):
        flags |= QKV_BIAS.flags
    return Decoder(params=params, flags=flags, attention=attention, attention_kinds={k: v for k, v in attention_kinds.items() if k in attention},
                   mlps=mlps, mlp_kinds=mlp_kinds)


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="mimo_v2_flash", title="MiMo-V2-Flash", read=mimo_v2_flash, aliases={"num_local_experts": "n_routed_experts"},
                     summary="MiMoV2FlashConfig: GQA with narrower value heads, sliding layers with twice the key/value heads and sinks, MoE after a dense layer")]
