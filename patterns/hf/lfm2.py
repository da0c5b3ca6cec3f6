"""Hugging Face reader of ``lfm2`` (LFM2): gated short convolutions in the conv layers, GQA
attention in the full_attention ones, a SwiGLU MLP on every layer whose width the modeling code
adjusts from ``intermediate_size`` when ``block_auto_adjust_ff_dim`` is true."""

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import GATED_LM, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, SHORT_CONV_LAYER
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

NAMES = {"conv": SHORT_CONV_LAYER.name, "full_attention": FULL}


def _types(c: Fields, layers: int) -> Layers[str]:
    """layer_types > full_attn_idxs (attention there, conv elsewhere); neither: refused (the class
    would make every layer attention, no conv layer at all)."""
    types = type_list(c, "layer_types", NAMES, layers)
    if types is not None:
        return Layers.of(types)
    full = c.int_list("full_attn_idxs", maximum=layers - 1)
    if full is None:
        raise c.missing("full_attn_idxs", "nor is layer_types given; Lfm2Config then makes every layer attention")
    return Layers.chosen(layers, full, "full_attention", "conv")


def _ffn_width(c: Fields) -> int:
    """Lfm2MLP: int(2 I / 3), then int(multiplier x that) rounded up to block_multiple_of, when
    block_auto_adjust_ff_dim (default true); the same float arithmetic as the modeling code."""
    width = c.int("intermediate_size")
    if not c.bool("block_auto_adjust_ff_dim", default=True):
        return width
    width = int(2 * width / 3)
    multiplier = c.data.get("block_ffn_dim_multiplier", 1.0)
    if multiplier is None:
        return width
    if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or multiplier <= 0:
        raise c.error("block_ffn_dim_multiplier", f" = {multiplier!r}: expected a positive number or null")
    multiple = c.int_or_default("block_multiple_of", 256)
    width = int(multiplier * width)
    return multiple * ((width + multiple - 1) // multiple)


def lfm2(c: Fields) -> Decoder:
    """Lfm2Config: conv_L_cache taps (default 3); conv_bias must be false (the patterns hold no biases)."""
    layers = c.int("num_hidden_layers")
    types = _types(c, layers)
    refuse_unless(c, "conv_bias", False, False, "in_proj, conv and out_proj biases are not in the short_conv patterns' weights")
    hidden = c.int("hidden_size")
    params = {"hidden": hidden, "vocab": c.int("vocab_size")}
    if "conv" in types:
        params[CONV_KERNEL.name] = c.int_or_default("conv_L_cache", 3)
    if "full_attention" in types:
        params.update(gqa_params(c))  # Lfm2Attention: getattr(config, "head_dim", h / heads)
    return Decoder(
        # operator_norm and ffn_norm per layer, q/k_layernorm (RMSNorms of the head width), the final
        # embedding_norm; tie_word_embeddings (or its kwarg tie_embedding) true by default.
        params=params, flags=GATED_LM | {"swiglu"} | weight_flags(c, tied=True, extra=QK_NORM.flags), attention=renamed(types, NAMES),
        mlps=Layers.uniform("dense", layers), mlp_kinds={"dense": dense_mlp(_ffn_width(c))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="lfm2", title="LFM2", read=lfm2, aliases={"block_ff_dim": "intermediate_size", "tie_embedding": "tie_word_embeddings"},
                 summary="Lfm2Config: gated short conv / GQA per layer_types or full_attn_idxs, SwiGLU MLPs of the adjusted width"),
    ]
