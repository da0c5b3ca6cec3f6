"""Hugging Face reader of ``dbrx`` (DBRX): Llama-like layers whose attention and experts are
configured in two nested dicts, ``attn_config`` and ``ffn_config``.

Read from transformers 5.24 ``models/dbrx/{configuration,modeling}_dbrx.py``: a fused Wqkv
(h -> h + 2 n_kv d, d = d_model / n_heads) and out_proj without biases, ``clip_qkv`` (a clamp),
two LayerNorms without bias per layer and a final one, and in every layer a router (h -> E, no
bias) and ``moe_num_experts`` gated experts of ``ffn_hidden_size`` (w1, v1, w2), top
``moe_top_k``; ``DbrxConfig.__post_init__`` makes ``ffn_config.hidden_size`` mirror ``d_model``.
"""

from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# DbrxConfig.attribute_map: transformers reads these names as the d_model-style keys.
ALIASES = {"hidden_size": "d_model", "num_attention_heads": "n_heads", "num_hidden_layers": "n_layers", "max_position_embeddings": "max_seq_len"}


def _nested(c: Fields, key: str) -> Fields:
    """``attn_config`` or ``ffn_config``: absent or null means every key at its class default."""
    value = c.data.get(key) or {}
    if not isinstance(value, dict):
        raise c.error(key, f" = {value!r}: expected a mapping of {key} keys")
    return Fields(value, where=c.where, model_type=c.model_type, prefix=f"{c.prefix}{key}.")


def _activation(ffn: Fields) -> Fields:
    """``ffn_config.ffn_act_fn`` (class default ``{"name": "silu"}``) as Fields of its ``name``."""
    value = ffn.data.get("ffn_act_fn") or {"name": "silu"}
    if not isinstance(value, dict):
        raise ffn.error("ffn_act_fn", f" = {value!r}: expected a mapping with a name")
    return Fields(value, where=ffn.where, model_type=ffn.model_type, prefix=f"{ffn.prefix}ffn_act_fn.")


def dbrx(c: Fields) -> Decoder:
    """DbrxConfig: d_model, n_heads, n_layers; attn_config.kv_n_heads (1); ffn_config.moe_num_experts (4),
    moe_top_k (1), ffn_hidden_size (3584); a tied head is refused, as the config class refuses it."""
    if c.bool("tie_word_embeddings", default=False):
        raise c.error("tie_word_embeddings", " = true: DbrxConfig refuses it (not supported for DBRX models); expected false")
    layers, hidden, heads = c.int("n_layers"), c.int("d_model"), c.int("n_heads")
    attn, ffn = _nested(c, "attn_config"), _nested(c, "ffn_config")
    # DbrxAttention: head_dim = d_model // n_heads, kv_n_heads key/value heads (Wqkv's split).
    params = {"hidden": hidden, "heads": heads, "kv_heads": attn.int_or_default("kv_n_heads", 1), "head_dim": hidden // heads, "vocab": c.int("vocab_size")}
    kinds = {"moe": moe_mlp(ffn.int_or_default("moe_num_experts", 4), ffn.int_or_default("moe_top_k", 1), ffn.int_or_default("ffn_hidden_size", 3584))}
    return Decoder(
        params=params,
        flags=silu_gated(_activation(ffn), key="name") | weight_flags(c, tied=False),
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.uniform("moe", layers),
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="dbrx", title="DBRX", read=dbrx, aliases=ALIASES,
                     summary="DbrxConfig: fused Wqkv, LayerNorms without bias, MoE in every layer (attn_config, ffn_config)")]
