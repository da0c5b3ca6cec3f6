"""Hugging Face reader of ``jamba`` (Jamba): GQA attention on the layers
``i % attn_layer_period == attn_layer_offset``, Mamba1 on the others; a MoE of gated experts on
the layers ``i % expert_layer_period == expert_layer_offset``, a gated MLP on the others."""

import math

from flopsreg.patterns._mixer_common import CONV_KERNEL
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless
from flopsreg.patterns.hf.layer_types import FULL, MAMBA1_LAYER
from flopsreg.patterns.mamba1 import DT_RANK, INNER
from flopsreg.patterns.mamba2 import STATE
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl


def _every(c: Fields, period: str, offset: str, layers: int) -> Layers[bool]:
    """Layer i is chosen iff i % period == offset (JambaConfig.layers_block_type, layers_num_experts)."""
    step, at = c.int(period), c.int(offset, minimum=0)
    if at >= step:
        raise c.error(offset, f" = {at}: expected below {period} = {step}")
    return Layers.rule(layers, lambda i: i % step == at, period=step)


def _mamba(c: Fields, hidden: int) -> dict[str, int]:
    """Mamba1 of inner width mamba_expand x hidden_size; mamba_dt_rank "auto" is ceil(hidden / 16)."""
    refuse_unless(c, "mamba_proj_bias", False, False, "in_proj and out_proj biases are not in the mamba1 patterns' weights")
    refuse_unless(c, "mamba_conv_bias", True, True, "the mamba1 conv pattern holds a bias per channel")
    rank = math.ceil(hidden / 16) if c.data.get("mamba_dt_rank", "auto") == "auto" else c.int("mamba_dt_rank")
    return {
        INNER.name: c.int("mamba_expand") * hidden,
        DT_RANK.name: rank,
        STATE.name: c.int("mamba_d_state"),
        CONV_KERNEL.name: c.int("mamba_d_conv"),
    }


def jamba(c: Fields) -> Decoder:
    """JambaConfig: attention / Mamba1 per attn_layer_period and _offset, MoE / MLP per expert_layer_period and _offset."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    attention = _every(c, "attn_layer_period", "attn_layer_offset", layers)
    experts = c.int("num_experts")
    sparse = _every(c, "expert_layer_period", "expert_layer_offset", layers) if experts > 1 else Layers.uniform(False, layers)
    params = {"hidden": hidden, "vocab": c.int("vocab_size")}
    if True in attention:
        params.update(gqa_params(c))  # JambaAttention: getattr(config, "head_dim", hidden / heads)
    if False in attention:
        params.update(_mamba(c, hidden))
    width = c.int("intermediate_size")
    kinds = {}
    if False in sparse:
        kinds["dense"] = dense_mlp(width)
    if True in sparse:
        kinds["moe"] = moe_mlp(experts, c.int("num_experts_per_tok"), width)
    return Decoder(
        params=params,
        # JambaConfig: tie_word_embeddings false by default; attention and MLPs without biases.
        flags=silu_gated(c) | weight_flags(c, tied=False),
        attention=attention.map(lambda a: FULL if a else MAMBA1_LAYER.name),
        mlps=sparse.map(lambda m: "moe" if m else "dense"),
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="jamba", title="Jamba", read=jamba,
                 summary="JambaConfig: attention / Mamba1 per attn_layer_period, MoE / MLP per expert_layer_period"),
    ]
