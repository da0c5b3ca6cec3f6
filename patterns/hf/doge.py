"""Hugging Face reader of ``doge`` (Doge): Llama-like layers with dynamic mask attention (a learned
importance per key, top keep_window_size keys per query), QK-norm, learned residual scales, and
either a gated MLP or the cross-domain MoE (the MLP plus single-neuron product-key experts).

Read from transformers 5.24 ``models/doge/{configuration,modeling}_doge.py``: DogeAttention runs
q/k/v_proj, q_norm/k_norm of head_dim, dt_proj (n_kv x head_dim -> n_kv, on the values) scaled by
A (n_kv), ``prepare_dynamic_mask`` (top keep_window_size keys of the causal or sliding mask) and
o_proj; attention_bias biases q/k/v/o_proj and dt_proj. DogeDecoderLayer holds two RMSNorms and
two residual scales of h; with is_moe, DogeCDMoE: gate/up/down_proj of intermediate_size (mlp_bias)
plus router_gate (h -> 2 floor(sqrt(num_experts)), no bias), down_embed and up_embed (E x h).
"""

import math

from flopsreg.patterns.biases import ATTENTION_BIAS, MLP_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dynamic_mask import DYNAMIC_WINDOW, FLAG, KEEP_WINDOW, WINDOWED
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.moe import EXPERTS, TOP_K
from flopsreg.patterns.norms import QK_NORM
from flopsreg.patterns.product_key_experts import EXPERT_KEYS, PRODUCT_KEY_EXPERTS
from flopsreg.patterns.residual_scales import RESIDUAL_SCALES
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def _mlp(c: Fields) -> tuple[str, tuple[frozenset[str], dict[str, int]]]:
    """The MLP of every layer: LlamaMLP, or DogeCDMoE (the same MLP plus product-key experts) when is_moe."""
    flags, params = dense_mlp(c.int("intermediate_size"))
    if not c.bool("is_moe", default=False):
        return "dense", (flags, params)
    experts, top_k = c.int_or_default("num_experts", 16384), c.int_or_default("num_experts_per_tok", 64)
    keys = math.isqrt(experts)  # math.floor(math.sqrt(num_experts)), as DogeCDMoE computes it (equal for any realistic E)
    if top_k > keys * keys:
        raise c.error("num_experts_per_tok", f" = {top_k}: DogeCDMoE picks the top k of floor(sqrt(num_experts))^2 = {keys * keys} candidates; expected at most that")
    return "cdmoe", (flags | PRODUCT_KEY_EXPERTS.flags, {**params, EXPERTS.name: experts, TOP_K.name: top_k, EXPERT_KEYS.name: keys})


def doge(c: Fields) -> Decoder:
    """DogeConfig: head_dim = config.head_dim if given, else hidden / heads; sliding_window (default null) on every layer when set."""
    layers = c.int("num_hidden_layers")
    flags = silu_gated(c) | weight_flags(c, tied=False, extra=QK_NORM.flags | RESIDUAL_SCALES.flags | {FLAG})
    if c.bool("attention_bias", default=False):
        flags |= ATTENTION_BIAS.flags
    if c.bool("mlp_bias", default=False):
        flags |= MLP_BIAS.flags
    mlp, kind = _mlp(c)
    # sliding_window (default null) masks every layer before the top-k: a dynamic mask within that window
    window = c.optional_int("sliding_window")
    kinds = {"full": (frozenset(), {}), "sliding": (frozenset({WINDOWED}), {DYNAMIC_WINDOW.name: window})}
    attention = "full" if window is None else "sliding"
    return Decoder(
        params={**gqa_params(c), "vocab": c.int("vocab_size"), KEEP_WINDOW.name: c.int_or_default("keep_window_size", 2048)},
        flags=flags,
        attention=Layers.uniform(attention, layers),
        attention_kinds={attention: kinds[attention]},
        mlps=Layers.uniform(mlp, layers),
        mlp_kinds={mlp: kind},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="doge", title="Doge", read=doge,
                     summary="DogeConfig: dynamic mask attention (top keep_window_size keys), residual scales, optional cross-domain MoE")]
