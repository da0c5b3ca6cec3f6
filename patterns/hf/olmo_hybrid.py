"""Hugging Face reader of ``olmo_hybrid`` (OLMo-Hybrid): Gated DeltaNet in the linear_attention
layers with separate q/k/v/a/b/g projections, GQA attention with q/k norms in the others, a dense
SwiGLU MLP on every layer; the linear_* widths default as the config class derives them."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import gdn_params, refuse_unless, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, GATED_DELTANET_LAYER
from flopsreg.patterns.norms import FULL_WIDTH_QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

NAMES = {"linear_attention": GATED_DELTANET_LAYER.name, "full_attention": FULL}


def _types(layers: int) -> Layers[str]:
    """OlmoHybridConfig.__post_init__: full attention iff i % 4 == 3, and the last layer if none is."""
    types = Layers.rule(layers, lambda i: "full_attention" if i % 4 == 3 else "linear_attention", period=4)
    return types if "full_attention" in types else types.replaced(layers - 1, "full_attention")


def olmo_hybrid(c: Fields) -> Decoder:
    """OlmoHybridConfig: linear_* widths default from num_attention_heads and hidden_size (__post_init__)."""
    layers = c.int("num_hidden_layers")
    types = type_list(c, "layer_types", NAMES, layers) or _types(layers)
    if "linear_attention" not in types:
        raise c.error("layer_types", ": no linear_attention layer (OlmoHybridConfig requires at least one)")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    refuse_unless(c, "attention_bias", False, False, "the attention patterns hold no biases")
    key_heads = c.optional_int("linear_num_key_heads") or heads
    # int(0.75 * hidden_size / linear_num_key_heads), in integers: floor(3 h / (4 H_k)).
    key_dim = c.optional_int("linear_key_head_dim") or 3 * hidden // (4 * key_heads)
    params = gdn_params(
        c,
        key_heads=key_heads,
        value_heads=c.optional_int("linear_num_value_heads") or heads,
        key_dim=key_dim,
        value_dim=c.optional_int("linear_value_head_dim") or 2 * key_dim,
    )
    # OlmoHybridAttention: head_dim = getattr(config, "head_dim", hidden // heads); the class has no field.
    return Decoder(
        params={**gqa_params(c), **params, "vocab": c.int("vocab_size")},
        # Two norms per layer (input and post-attention on linear layers; OLMo's post-attention and
        # post-feedforward on attention layers); q/k norms over the full projections; no biases.
        flags=silu_gated(c) | weight_flags(c, tied=False, extra=FULL_WIDTH_QK_NORM.flags),
        attention=renamed(types, NAMES),
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="olmo_hybrid", title="OLMo Hybrid", read=olmo_hybrid,
                 summary="OlmoHybridConfig: Gated DeltaNet / GQA per layer_types (default i % 4 == 3 full), dense SwiGLU MLPs"),
    ]
