"""Hugging Face reader of ``glm4_moe_lite`` (GLM-4.7-Flash): DeepSeek-V3's multi-head latent
attention and MoE with shared experts, the sparse layers listed in ``mlp_layer_types``."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._traits import dense_first
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def glm4_moe_lite(c: Fields) -> Decoder:
    """Glm4MoeLiteConfig: MLA on every layer; ``mlp_layer_types`` (default: layer 0 dense, the
    others sparse) picks a dense MLP or n_routed_experts experts of moe_intermediate_size with a
    shared MLP of n_shared_experts of them (modeling_glm4_moe_lite.py)."""
    layers = c.int("num_hidden_layers")
    if c.bool("attention_bias", default=False):
        # q_a_proj (or q_proj), kv_a_proj_with_mqa and o_proj would hold biases no MLA pattern holds
        raise c.error("attention_bias", " = true: the biases it adds to the MLA projections are not counted by flopsreg; expected false")
    params, mla_flags = mla(c)
    mlps = dense_first(1, listed="mlp_layer_types")(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int_or_default("n_shared_experts", 1, minimum=0) * width
        kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    # The router's e_score_correction_bias is a buffer (not a parameter); tie_word_embeddings false.
    return Decoder(
        params=params,
        flags=silu_gated(c) | weight_flags(c, tied=False) | mla_flags,
        attention=Layers.uniform(FULL, layers),
        mlps=mlps,
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="glm4_moe_lite",
            title="GLM-4.7-Flash",
            read=glm4_moe_lite,
            summary="Glm4MoeLiteConfig: MLA, MoE with shared experts on the layers mlp_layer_types marks sparse",
            aliases={"num_local_experts": "n_routed_experts", "head_dim": "qk_rope_head_dim"},  # Glm4MoeLiteConfig.attribute_map
        ),
    ]
