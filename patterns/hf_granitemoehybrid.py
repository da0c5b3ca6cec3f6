"""Hugging Face reader of ``granitemoehybrid`` (Granite 4.0-H): Mamba2 or GQA attention per
``layer_types``, then on every layer a gated shared MLP and, when ``num_local_experts`` > 0, a
MoE of gated experts of width ``intermediate_size`` beside it."""

from flopsreg import hookimpl
from flopsreg.declare import HFReader
from flopsreg.patterns._hf_common import silu_gated
from flopsreg.patterns._hf_linear import refuse_unless, renamed, type_list
from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf_layer_types import FULL, MAMBA2_LAYER
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.moe import moe_mlp
from flopsreg.readers.decoder import Decoder
from flopsreg.readers.fields import Fields, gqa_params

NAMES = {"linear_attention": MAMBA2_LAYER.name, "full_attention": FULL}


def mamba_params(c: Fields, inner: int) -> dict[str, int]:
    """Mamba2 of inner width *inner* from the mamba_* fields; mamba_d_head "auto" is inner / mamba_n_heads."""
    refuse_unless(c, "mamba_proj_bias", False, False, "in_proj and out_proj biases are not in the mamba2 patterns' weights")
    refuse_unless(c, "mamba_conv_bias", True, True, "the mamba2 conv patterns hold a bias per channel")
    heads = c.int("mamba_n_heads")
    head_dim = inner // heads if c.data.get("mamba_d_head", "auto") == "auto" else c.int("mamba_d_head")
    if heads * head_dim != inner:
        raise c.error("mamba_d_head", f" = {head_dim}: mamba_n_heads x mamba_d_head = {heads * head_dim}, but the Mamba2 inner width is {inner}")
    return {
        HEADS.name: heads,
        HEAD_DIM.name: head_dim,
        STATE.name: c.int("mamba_d_state"),
        GROUPS.name: c.int("mamba_n_groups"),
        CONV_KERNEL.name: c.int("mamba_d_conv"),
        SCAN_CHUNK.name: c.int("mamba_chunk_size"),
    }


def granitemoehybrid(c: Fields) -> Decoder:
    """GraniteMoeHybridConfig: Mamba2 inner width mamba_expand x hidden_size."""
    layers = c.int("num_hidden_layers")
    types = type_list(c, "layer_types", NAMES, layers)
    if types is None:
        raise c.missing("layer_types", "the config class then makes every layer Mamba2, which no Granite 4.0-H checkpoint is")
    hidden = c.int("hidden_size")
    params = {"hidden": hidden, "vocab": c.int("vocab_size")}
    if "full_attention" in types:
        params.update(gqa_params(c))  # GraniteMoeHybridAttention: getattr(config, "head_dim", h / heads)
    if "linear_attention" in types:
        params.update(mamba_params(c, c.int("mamba_expand") * hidden))
    shared = c.int("shared_intermediate_size")
    experts = c.int("num_local_experts", minimum=0)
    if experts > 0:
        # intermediate_size is the experts' width; the shared MLP runs beside them on every layer.
        mlp = moe_mlp(experts, c.int("num_experts_per_tok"), c.int("intermediate_size"), shared)
    else:
        mlp = dense_mlp(shared)
    return Decoder(
        params=params, flags=silu_gated(c), attention=renamed(types, NAMES),
        mlps=["moe" if experts > 0 else "dense"] * layers, mlp_kinds={"moe" if experts > 0 else "dense": mlp},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="granitemoehybrid", read=granitemoehybrid, aliases={"layers_block_type": "layer_types"},
                 summary="GraniteMoeHybridConfig: Mamba2 / GQA per layer_types, a gated shared MLP and MoE on every layer"),
    ]
