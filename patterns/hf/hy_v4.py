"""Hugging Face reader of ``hy_v4`` (Tencent Hy4): GLM-4.7-Flash's MLA and MoE with DSA on every
layer (an indexer on the ``indexer_types`` 'full' layers, the last top-k reused on the 'shared'
ones), an elementwise output gate, attention sinks and independent hyper-connections (iHC)."""

from flopsreg.patterns.attention_output_gate import ATTENTION_OUTPUT_GATE
from flopsreg.patterns.attention_sinks import ATTENTION_SINKS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dsa_indexer import DSA_INDEXER, INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_topk import DSA_TOPK, INDEX_TOPK
from flopsreg.patterns.hf._common import mla, silu_gated, weight_flags
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf._traits import dense_first
from flopsreg.patterns.hf.deepseek_v32 import indexed_layers
from flopsreg.patterns.hyper_connections import HC_MULT, IHC
from flopsreg.patterns.moe import moe_mlp
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, hookimpl

# The attention entries: DSA with the layer's own indexer, or over the last indexer's top-k (short
# names: they title the layer kinds, indexed_dense, indexed_moe and shared_moe).
INDEXED, SHARED = "indexed", "shared"
_ATTENTION = {"full": INDEXED, "shared": SHARED}
_MLPS = dense_first(1, listed="mlp_layer_types", key=None)  # HYV4Config: one dense layer, then sparse


def indexer_types(c: Fields, layers: int) -> Layers[str]:
    """``indexer_types``, else HYV4Config's rule: layer i runs its own indexer iff i == 0 or
    (i - 1) % 4 == 0, the others reuse the top-k of the layer before (a first 'shared' layer has none)."""
    given = type_list(c, "indexer_types", tuple(_ATTENTION), layers)
    if given is None:
        return Layers.rule(layers, lambda i: INDEXED if i == 0 or (i - 1) % 4 == 0 else SHARED, period=4, start=1)
    if given and given[0] == "shared":
        # HYV4Attention raises at run time: a shared layer needs top-k indices from an earlier indexer.
        raise c.error("indexer_types[0]", " = 'shared': the first layer has no earlier indexer to share; expected 'full'")
    return Layers.of(given).map(_ATTENTION.__getitem__)


def hy_v4(c: Fields) -> Decoder:
    """HYV4Config: MLA (num_key_value_heads forced to num_attention_heads, head_dim to
    qk_rope_head_dim: neither read), DSA per indexer_types, gate_proj h -> heads x v_head_dim,
    sinks, iHC of hc_mult streams with a weighted head, dense / MoE per mlp_layer_types;
    tie_word_embeddings false by default; the router's e_score_correction_bias is a buffer."""
    layers = c.int("num_hidden_layers")
    indexed_layers(c, layers)
    if c.bool("attention_bias", default=False):
        raise c.error("attention_bias", " = true: the biases it adds to the MLA projections are not counted by flopsreg; expected false")
    params, mla_flags = mla(c)
    if "q_lora" not in mla_flags:
        raise c.error("q_lora_rank", " = null: HY-V4's indexer reads the query latent, so it needs a q_lora_rank")
    params |= {INDEX_HEADS.name: c.int("index_n_heads"), INDEX_HEAD_DIM.name: c.int("index_head_dim"), HC_MULT.name: c.int("hc_mult")}
    mlps = _MLPS(c, layers)
    kinds = {}
    if "dense" in mlps:
        kinds["dense"] = dense_mlp(c.int("intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        width = c.int("moe_intermediate_size")
        shared = c.int_or_default("n_shared_experts", 1, minimum=0) * width
        kinds["moe"] = moe_mlp(c.int("n_routed_experts"), c.int("num_experts_per_tok"), width, shared)
    flags = silu_gated(c) | weight_flags(c, tied=False, extra=ATTENTION_SINKS.flags) | mla_flags
    return Decoder(
        params=params,
        flags=flags | ATTENTION_OUTPUT_GATE.flags | IHC.flags,
        attention=indexer_types(c, layers),
        attention_kinds={
            INDEXED: (DSA_TOPK.flags | DSA_INDEXER.flags, {INDEX_TOPK.name: c.int("index_topk")}),
            SHARED: (DSA_TOPK.flags, {INDEX_TOPK.name: c.int("index_topk")}),
        },
        mlps=mlps,
        mlp_kinds=kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="hy_v4",
            title="Hy4",
            read=hy_v4,
            summary="HYV4Config: MLA with DSA (indexers per indexer_types), output gate, sinks, iHC hyper-connections, dense then MoE",
            aliases={"num_local_experts": "n_routed_experts"},
        ),
    ]
