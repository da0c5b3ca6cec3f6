"""Hugging Face reader of ``axk2`` (A.X K2): DeepSeek-V3.2's MLA with DSA on every layer, whose
query and output gate come from one ``q_gate_proj`` over the query latent, gated RMSNorms, and
dense or MoE layers as A.X K1 (``mlp_layer_types``, else the popped first_k_dense_replace / moe_layer_freq)."""

from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf.axk1 import mlp_layer_types
from flopsreg.patterns.hf.deepseek_v32 import indexed_layers
from flopsreg.patterns.hf.layer_types import INDEXED
from flopsreg.patterns.latent_query_gate import LATENT_GATE_QUERY, LATENT_OUTPUT_GATE
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norm_gate import INPUT_NORM_GATE, NORM_GATE_RANK, POST_FLAG
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl


def axk2(c: Fields) -> Decoder:
    """AXK2Config: MLA (head_dim forced to qk_rope_head_dim: never read) with a q_lora_rank it
    requires, a DSA indexer on every layer, gated input norms everywhere and gated post-attention
    norms on MoE layers (gate rank gated_norm_rank, default 16), MoE with shared experts; the
    router's e_score_correction_bias is a buffer; tie_word_embeddings false by default."""
    layers = c.int("num_hidden_layers")
    indexed_layers(c, layers)
    if not c.given("q_lora_rank"):
        raise c.error("q_lora_rank", " = null: AXK2Config requires it (the indexer and the output gate read the query latent); expected an integer >= 1")
    if c.bool("attention_bias", default=False):
        raise c.error("attention_bias", " = true: the biases it adds to A.X K2's MLA are not counted by flopsreg; expected false")
    params, mla_flags = mla(c)
    params |= {
        INDEX_HEADS.name: c.int("index_n_heads"),
        INDEX_HEAD_DIM.name: c.int("index_head_dim"),
        NORM_GATE_RANK.name: c.int_or_default("gated_norm_rank", 16),
    }
    mlps = mlp_layer_types(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int_or_default("n_shared_experts", 1, minimum=0) * width
        flags, moe_params = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
        kinds["moe"] = (flags | {POST_FLAG}, moe_params)  # AXK2DecoderLayer: a gated post-attention norm on MoE layers
    flags = silu_gated(c) | weight_flags(c, tied=False) | mla_flags
    return Decoder(
        params=params,
        flags=flags | LATENT_GATE_QUERY.flags | LATENT_OUTPUT_GATE.flags | INPUT_NORM_GATE.flags,
        attention=Layers.uniform(INDEXED, layers),
        mlps=mlps,
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="axk2",
            title="A.X K2",
            read=axk2,
            summary="AXK2Config: MLA with DSA on every layer, query and output gate from one q_gate_proj, gated RMSNorms, dense or MoE by mlp_layer_types",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
