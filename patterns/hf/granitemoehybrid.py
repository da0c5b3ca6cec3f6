"""Hugging Face reader of ``granitemoehybrid`` (Granite 4.0-H): Mamba2 or GQA attention per
``layer_types``, then on every layer a gated shared MLP and, when ``num_local_experts`` > 0, a
MoE of gated experts of width ``intermediate_size`` beside it."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import mamba_params, refuse_unless, renamed, type_list
from flopsreg.patterns.hf.layer_types import FULL, MAMBA2_LAYER
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

NAMES = {"linear_attention": MAMBA2_LAYER.name, "full_attention": FULL}


def granitemoehybrid(c: Fields) -> Decoder:
    """GraniteMoeHybridConfig: Mamba2 inner width mamba_expand x hidden_size."""
    layers = c.int("num_hidden_layers")
    types = type_list(c, "layer_types", NAMES, layers)
    if types is None:
        raise c.missing("layer_types", "the config class then makes every layer Mamba2, which no Granite 4.0-H checkpoint is")
    hidden = c.int("hidden_size")
    refuse_unless(c, "attention_bias", False, False, "the attention patterns hold no biases")
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
        params=params, flags=silu_gated(c) | weight_flags(c, tied=False), attention=renamed(types, NAMES),
        mlps=Layers.uniform("moe" if experts > 0 else "dense", layers), mlp_kinds={"moe" if experts > 0 else "dense": mlp},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="granitemoehybrid", title="Granite 4.0-H", read=granitemoehybrid, aliases={"layers_block_type": "layer_types"},
                 summary="GraniteMoeHybridConfig: Mamba2 / GQA per layer_types, a gated shared MLP and MoE on every layer"),
    ]
