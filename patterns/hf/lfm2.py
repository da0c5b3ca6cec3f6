"""Hugging Face readers of ``lfm2`` (LFM2), ``lfm2_moe`` (LFM2-MoE) and ``lfm3`` (LFM3): gated short
convolutions in the conv layers, GQA attention in the others; LFM2 has a SwiGLU MLP on every layer
whose width the modeling code adjusts from ``intermediate_size`` when ``block_auto_adjust_ff_dim``
is true, LFM2-MoE dense SwiGLU MLPs on its first ``num_dense_layers`` layers, experts after, LFM3
sliding layers, a sigmoid gate per attention head and sandwich norms."""

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.attention_head_gate import ATTENTION_HEAD_GATE
from flopsreg.patterns.biases import ATTENTION_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import GATED_LM, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, SHORT_CONV_LAYER, SLIDING
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import QK_NORM, SANDWICH_NORMS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, head_dim_of, hookimpl

NAMES = {"conv": SHORT_CONV_LAYER.name, "full_attention": FULL}
LFM3_NAMES = {**NAMES, "sliding_attention": SLIDING}


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


def _params(c: Fields, types: Layers[str], *, kernel: int = 3, head_dim: int | None = None) -> dict[str, int]:
    """The widths the layers use: conv_L_cache taps (class default *kernel*) where some layer is
    conv; conv_bias must be false (the patterns hold no biases). The attention's head width:
    getattr(config, "head_dim", h / heads) (LFM2, LFM2-MoE), a field of class default *head_dim* (LFM3)."""
    refuse_unless(c, "conv_bias", False, False, "in_proj, conv and out_proj biases are not in the short_conv patterns' weights")
    hidden = c.int("hidden_size")
    params = {"hidden": hidden, "vocab": c.int("vocab_size")}
    if "conv" in types:
        params[CONV_KERNEL.name] = c.int_or_default("conv_L_cache", kernel)
    if any(kind != "conv" for kind in types.distinct()):
        params.update(gqa_params(c, head_dim=head_dim_of(c, hidden, c.int("num_attention_heads"), head_dim)))
    return params


def _flags(c: Fields) -> frozenset[str]:
    """SwiGLU; operator_norm and ffn_norm per layer, q/k_layernorm (RMSNorms of the head width), the
    final embedding_norm; tie_word_embeddings (or its kwarg tie_embedding) true by default."""
    return GATED_LM | {"swiglu"} | weight_flags(c, tied=True, extra=QK_NORM.flags)


def lfm2(c: Fields) -> Decoder:
    """Lfm2Config: a dense MLP of the adjusted width on every layer."""
    layers = c.int("num_hidden_layers")
    types = _types(c, layers)
    return Decoder(
        params=_params(c, types), flags=_flags(c), attention=renamed(types, NAMES),
        mlps=Layers.uniform("dense", layers), mlp_kinds={"dense": dense_mlp(_ffn_width(c))},
    )


def lfm2_moe(c: Fields) -> Decoder:
    """Lfm2MoeConfig: layer_types required (the class has no default: transformers fails without it);
    layers below num_dense_layers (default 2) dense of intermediate_size as it is, the others
    routed to num_experts experts of moe_intermediate_size (no shared expert; the expert_bias
    that shifts the choice is a buffer, not a parameter)."""
    layers = c.int("num_hidden_layers")
    types = type_list(c, "layer_types", NAMES, layers)
    if types is None:
        raise c.missing("layer_types", "Lfm2MoeConfig has no default for it and transformers fails to build the model without it")
    dense = c.int_or_default("num_dense_layers", 2, minimum=0)
    mlps = Layers.split(layers, "dense", "moe", dense)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        kinds["moe"] = moe_mlp(c.int("num_experts"), c.int("num_experts_per_tok"), c.int("moe_intermediate_size"))
    return Decoder(params=_params(c, Layers.of(types)), flags=_flags(c), attention=renamed(types, NAMES), mlps=mlps, mlp_kinds=kinds)


def lfm3(c: Fields) -> Decoder:
    """Lfm3Config: layer_types, else layer i is full iff i % 4 == 2, sliding iff i % 4 == 0 and
    i > 0, conv otherwise; conv_L_cache 7, head_dim 128; a dense SwiGLU MLP of intermediate_size
    as it is on every layer. use_attention_gate (default true): g_proj hidden -> heads, a sigmoid
    per head; use_sandwich_norm (default true): post_operator_norm and post_ffn_norm too."""
    layers = c.int("num_hidden_layers")
    given = type_list(c, "layer_types", LFM3_NAMES, layers)
    types = Layers.of(given) if given is not None else Layers.rule(
        layers, lambda i: "full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv", period=4, start=1,
    )
    flags = set(_flags(c))
    if c.bool("use_attention_gate", default=True):
        flags |= ATTENTION_HEAD_GATE.flags
    if c.bool("use_sandwich_norm", default=True):
        flags |= SANDWICH_NORMS.flags
    if c.bool("attention_bias", default=False):
        flags |= ATTENTION_BIAS.flags
    return Decoder(
        params=_params(c, types, kernel=7, head_dim=128), flags=flags, attention=renamed(types, LFM3_NAMES),
        mlps=Layers.uniform("dense", layers), mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="lfm2", title="LFM2", read=lfm2, aliases={"block_ff_dim": "intermediate_size", "tie_embedding": "tie_word_embeddings"},
                 summary="Lfm2Config: gated short conv / GQA per layer_types or full_attn_idxs, SwiGLU MLPs of the adjusted width"),
        HFReader(name="lfm2_moe", title="LFM2-MoE", read=lfm2_moe, aliases={"tie_embedding": "tie_word_embeddings"},
                 summary="Lfm2MoeConfig: gated short conv / GQA per layer_types, dense SwiGLU MLPs then MoE from num_dense_layers"),
        HFReader(name="lfm3", title="LFM3", read=lfm3, aliases={"rms_norm_eps": "norm_eps"},
                 summary="Lfm3Config: gated short conv / sliding / full GQA per layer_types, a sigmoid gate per head, sandwich norms"),
    ]
