"""Hugging Face reader of ``zamba`` (Zamba): Mamba layers, and hybrid layers that first run ONE
shared transformer block (attention + gated MLP on [residual, embedding], 2h wide) and a linear of
their own, then their Mamba layer. flopsreg lists a hybrid layer as two layers: the shared block
(weights held once: ``weight_copies`` 1, FLOPs per use) and the Mamba layer with its linear."""

import math

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.embedding import TIED_LOGITS
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.mamba1 import DT_RANK, FLAG, INNER, NO_NORM_WEIGHTS
from flopsreg.patterns.mamba2 import STATE
from flopsreg.patterns.norms import SINGLE_NORM
from flopsreg.patterns.shared_block import CONCAT_INPUT, OUTPUT
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

HYBRID, MAMBA = "hybrid", "linear_attention"
LEGACY = {"mamba": MAMBA}  # remap_legacy_layer_types: the names configs saved before transformers 5
SHARED = "shared"
MAMBA_KINDS = {
    "mamba": (frozenset({FLAG, NO_NORM_WEIGHTS} | SINGLE_NORM.flags), {}),
    HYBRID: (frozenset({FLAG, NO_NORM_WEIGHTS, OUTPUT} | SINGLE_NORM.flags), {}),  # its own Mamba and linear
}


def _block_types(c: Fields, layers: int) -> list[str]:
    """layers_block_type, else ZambaConfig's rule: two Mamba layers, a hybrid one, then hybrid where
    i % attn_layer_period == attn_layer_offset for the remaining layers i (__post_init__)."""
    given = c.data.get("layers_block_type")
    if given is None:
        period, offset = c.int("attn_layer_period"), c.int("attn_layer_offset", minimum=0)
        return [MAMBA, MAMBA, HYBRID] + [HYBRID if i % period == offset else MAMBA for i in range(layers - 3)]
    if not isinstance(given, list) or len(given) != layers:
        raise c.error("layers_block_type", f" = {given!r}: expected a list of {layers} layer types")
    types = [LEGACY.get(t, t) for t in given]
    bad = next((t for t in types if t not in (HYBRID, MAMBA)), None)
    if bad is not None:
        raise c.error("layers_block_type", f": {bad!r} is not a Zamba layer type; expected 'hybrid' or 'mamba' ('linear_attention')")
    return types


def zamba(c: Fields) -> Decoder:
    """ZambaConfig: attention_hidden_size is 2 x hidden_size (the concatenated input), attention_head_dim
    2 x hidden / heads when null, mamba_dt_rank "auto" ceil(hidden / 16); tie_word_embeddings true."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    width = c.optional_int("attention_hidden_size")
    if width is not None and width != 2 * hidden:
        raise c.error("attention_hidden_size", f" = {width}: the shared block reads [residual, embedding], 2 x hidden_size = {2 * hidden} wide")
    refuse_unless(c, "mamba_proj_bias", False, False, "in_proj and out_proj biases are not in the mamba1 patterns' weights")
    refuse_unless(c, "mamba_conv_bias", True, True, "the mamba1 conv patterns hold a bias per channel")
    heads = c.int("num_attention_heads")
    head_dim = c.optional_int("attention_head_dim") or 2 * hidden // heads  # head_dim: an alias (attribute_map)
    inner = c.int("mamba_expand") * hidden
    if inner % c.int("n_mamba_heads"):
        raise c.error("n_mamba_heads", f" = {c.int('n_mamba_heads')}: mamba_expand x hidden_size = {inner} is not a multiple of it")
    rank = c.data.get("mamba_dt_rank", "auto")
    params = {
        **gqa_params(c, head_dim=head_dim),
        "vocab": c.int("vocab_size"),
        INNER.name: inner,
        DT_RANK.name: math.ceil(hidden / 16) if rank == "auto" else c.int("mamba_dt_rank"),
        STATE.name: c.int("mamba_d_state"),
        CONV_KERNEL.name: c.int("mamba_d_conv"),
    }
    # The per-head x_proj and dt_proj of ZambaMambaMixer hold and compute what Mamba1's do over the
    # whole inner width (heads x head width = inner), so the mamba1 patterns count them exactly.
    attention = []
    for kind in _block_types(c, layers):
        attention += [SHARED, HYBRID] if kind == HYBRID else ["mamba"]
    # The shared block's MLP rides on its attention entry (one MLP entry, "none", for every layer),
    # so the kinds are named by what varies: mamba, shared, hybrid (a hybrid layer's own Mamba and linear).
    mlp_flags, mlp_params = dense_mlp(c.int("intermediate_size"))
    flags = weight_flags(c, tied=True, extra=silu_gated(c, default="gelu"))
    return Decoder(
        params=params,
        flags=flags,
        attention=Layers.of(attention),
        attention_kinds={SHARED: (frozenset({CONCAT_INPUT}) | mlp_flags, mlp_params), **MAMBA_KINDS},
        mlps=Layers.uniform("none", len(attention)),
        mlp_kinds={"none": (frozenset(), {})},
        # transformers ties the hybrid layers' blocks to the first one only with tie_word_embeddings
        # true (PreTrainedModel.get_expanded_tied_weights_keys returns nothing otherwise): untied,
        # every hybrid layer builds a block of its own.
        weight_copies={SHARED: 1} if TIED_LOGITS.flags <= flags else {},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="zamba", title="Zamba", read=zamba, aliases={"head_dim": "attention_head_dim"},
                 summary="ZambaConfig: Mamba layers; hybrid layers run one shared transformer block on [residual, embedding] (weights once, FLOPs per use), a linear, then Mamba"),
    ]
