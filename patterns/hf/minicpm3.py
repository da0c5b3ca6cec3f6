"""Hugging Face reader of ``minicpm3`` (MiniCPM3): multi-head latent attention and a dense gated
MLP in every layer; the embedding, residual and logit scalings run no matmul."""

from flopsreg.patterns.biases import MLP_BIAS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def minicpm3(c: Fields) -> Decoder:
    """MiniCPM3Config: MLA (v_head_dim null: hidden / heads, as __post_init__ sets it); mlp_bias
    biases gate/up/down_proj; tie_word_embeddings true by default (modeling_minicpm3.py)."""
    layers = c.int("num_hidden_layers")
    if c.bool("attention_bias", default=False):
        # q_a_proj (or q_proj), kv_a_proj_with_mqa and o_proj would hold biases no MLA pattern holds
        raise c.error("attention_bias", " = true: the biases it adds to the MLA projections are not counted by flopsreg; expected false")
    params, mla_flags = mla(c, v_head_dim=c.int("hidden_size") // c.int("num_attention_heads"))
    biases = MLP_BIAS.flags if c.bool("mlp_bias", default=False) else frozenset()
    return Decoder(
        params=params,
        flags=silu_gated(c) | weight_flags(c, tied=True, extra=biases) | mla_flags,
        attention=Layers.uniform(FULL, layers),
        mlps=Layers.uniform("dense", layers),
        mlp_kinds={"dense": dense_mlp(c.int("intermediate_size"))},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [HFReader(name="minicpm3", title="MiniCPM3", read=minicpm3, summary="MiniCPM3Config: MLA, dense gated MLP, scaled embeddings and residuals")]
