"""Hugging Face reader of ``axk1`` (A.X K1): DeepSeek-V3's MLA, always with a low-rank query,
dense or MoE layers by ``mlp_layer_types``, and an RMSNorm on the output of every MoE block."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import MOE_OUTPUT_NORMS
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def mlp_layer_types(c: Fields, layers: int) -> Layers[str]:
    """``mlp_layer_types``, else AXK1Config.__post_init__'s rule from the kwargs it pops: layer i is
    MoE iff i >= first_k_dense_replace (default 1) and i % moe_layer_freq == 0 (default 1)."""
    given = type_list(c, "mlp_layer_types", ("dense", "sparse"), layers)
    if given is not None:
        return Layers.of("moe" if t == "sparse" else "dense" for t in given)
    first = c.int_or_default("first_k_dense_replace", 1, minimum=0)
    freq = c.int_or_default("moe_layer_freq", 1)
    return Layers.rule(layers, lambda i: "moe" if i >= first and i % freq == 0 else "dense", period=freq, start=min(first, layers))


def axk1(c: Fields) -> Decoder:
    """AXK1Config: MLA (q_a_proj, q_b_proj; no direct q_proj), MoE with shared experts on the sparse layers."""
    layers = c.int("num_hidden_layers")
    if not c.given("q_lora_rank"):
        raise c.error("q_lora_rank", " = null: AXK1Attention always builds q_a_proj of q_lora_rank (transformers fails without it); expected an integer >= 1")
    if c.bool("attention_bias", default=False):
        # AXK1Config (DeepseekV3Config) defaults it to false; it biases q_a_proj, kv_a_proj_with_mqa and o_proj.
        raise c.error("attention_bias", " = true: the biases it adds to A.X K1's MLA are not counted by flopsreg; expected false")
    params, mla_flags = mla(c)
    mlps = mlp_layer_types(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int_or_default("n_shared_experts", 1, minimum=0) * width
        flags, moe_params = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
        kinds["moe"] = (flags | MOE_OUTPUT_NORMS.flags, moe_params)
    # The experts and the dense MLP have no biases (mlp_bias is read by no module); the router's
    # e_score_correction_bias is a buffer; tie_word_embeddings false by default; no MTP layers.
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
            name="axk1",
            title="A.X K1",
            read=axk1,
            summary="AXK1Config: MLA with a low-rank query, MoE with shared experts and a post-MoE norm by mlp_layer_types",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
