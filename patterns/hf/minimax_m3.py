"""Hugging Face reader of ``minimax_m3_vl_text`` (MiniMax-M3's decoder): GQA with per-head QK-norm
and partial RoPE, full or block-sparse attention per ``layer_types`` (a lightning indexer keeps
each query's top blocks of keys), and dense SwiGLU-OAI MLPs or MoE with one shared expert per
``mlp_layer_types``."""

from flopsreg.patterns.block_sparse import BLOCK, BLOCK_INDEXER, BLOCK_TOPK, TOP_BLOCKS
from flopsreg.patterns.dense_mlp import dense_mlp
from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.hf._common import GATED_LM, weight_flags
from flopsreg.patterns.hf._linear import type_list
from flopsreg.patterns.hf.layer_types import FULL
from flopsreg.patterns.moe import moe_mlp
from flopsreg.patterns.norms import QK_NORM
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

SPARSE = "minimax_m3_sparse"
# MiniMaxM3VLTextConfig.__post_init__: the legacy sparse_attention_config keys of each index field.
_LEGACY = {
    "index_n_heads": "sparse_num_index_heads",
    "index_head_dim": "sparse_index_dim",
    "index_block_size": "sparse_block_size",
    "index_topk_blocks": "sparse_topk_blocks",
    "index_local_blocks": "sparse_local_block",
}
_DEFAULTS = {"index_n_heads": 4, "index_head_dim": 128, "index_block_size": 128, "index_topk_blocks": 16, "index_local_blocks": 1}


def _flags_list(c: Fields, field: str, value: object, layers: int, yes: str, no: str) -> list[str]:
    """A legacy per-layer 0/1 list (sparse_attention_freq, moe_layer_freq) as layer-type strings."""
    if not isinstance(value, list) or len(value) != layers:
        raise c.error(field, f" = {value!r:.120}: expected one 0 or 1 per layer ({layers} layers)")
    return [yes if flag else no for flag in value]


def _index(c: Fields, legacy: dict) -> dict[str, int]:
    """The index fields, each from sparse_attention_config's legacy key over the flat one, else its class default."""
    values = {}
    for field, old in _LEGACY.items():
        where = Fields(legacy, where=c.where, model_type=c.model_type, prefix=f"{c.prefix}sparse_attention_config.")
        least = 0 if field == "index_local_blocks" else 1  # 0 local blocks is read, then refused by name
        values[field] = where.int(old, minimum=least) if old in legacy else c.int_or_default(field, _DEFAULTS[field], minimum=least)
    return values


def minimax_m3_vl_text(c: Fields) -> Decoder:
    """MiniMaxM3VLTextConfig: every layer full and MoE by default; MoE layers route to
    num_local_experts experts of intermediate_size (top num_experts_per_tok, the router's
    e_score_correction_bias a buffer) beside a shared expert of shared_intermediate_size, dense
    layers run dense_intermediate_size; head_dim 128 and tie_word_embeddings false by default."""
    layers = c.int("num_hidden_layers")
    legacy = c.data.get("sparse_attention_config") or {}
    if not isinstance(legacy, dict):
        raise c.error("sparse_attention_config", f" = {legacy!r:.120}: expected an object")
    attention = type_list(c, "layer_types", (FULL, SPARSE), layers)
    if attention is None:
        freq = legacy.get("sparse_attention_freq")
        attention = [FULL] * layers if freq is None else _flags_list(c, "sparse_attention_config.sparse_attention_freq", freq, layers, SPARSE, FULL)
    mlps = type_list(c, "mlp_layer_types", ("dense", "sparse"), layers)
    if mlps is None:
        freq = c.data.get("moe_layer_freq")
        mlps = ["sparse"] * layers if freq is None else _flags_list(c, "moe_layer_freq", freq, layers, "sparse", "dense")
    mlps = ["moe" if mlp == "sparse" else mlp for mlp in mlps]
    params = {**gqa_params(c, head_dim=c.int_or_default("head_dim", 128)), "vocab": c.int("vocab_size")}
    kinds = {FULL: (frozenset(), {})}
    if SPARSE in attention:
        index = _index(c, legacy)
        heads, index_heads = params["heads"], index["index_n_heads"]
        if heads % index_heads:
            raise c.error("index_n_heads", f" = {index_heads}: build_block_mask repeats each index head's blocks over num_attention_heads / index_n_heads = {heads} / {index_heads} heads; expected a divisor of {heads}")
        local, top = index["index_local_blocks"], index["index_topk_blocks"]
        if not 1 <= local <= top:
            # With no local block (or more than the top-k keeps), a query's own block may lose the
            # top-k to whole blocks: how many keys it sees then depends on the scores.
            raise c.error("index_local_blocks", f" = {local}: a query's own block is then kept only if its scores win, so its key count depends on the data; expected 1 to index_topk_blocks = {top}")
        params |= {INDEX_HEADS.name: index_heads, INDEX_HEAD_DIM.name: index["index_head_dim"]}
        kinds[SPARSE] = (BLOCK_TOPK.flags | BLOCK_INDEXER.flags, {BLOCK.name: index["index_block_size"], TOP_BLOCKS.name: top})
    mlp_kinds = {}
    if "dense" in mlps:
        mlp_kinds["dense"] = dense_mlp(c.int("dense_intermediate_size", why="some layers are dense"))
    if "moe" in mlps:
        mlp_kinds["moe"] = moe_mlp(
            c.int("num_local_experts"), c.int("num_experts_per_tok"), c.int("intermediate_size"), c.int("shared_intermediate_size")
        )
    # SwiGLU-OAI (a clamped gate times sigmoid(alpha gate), times up + 1): three matmuls, not SiLU's swiglu.
    return Decoder(
        params=params,
        flags=GATED_LM | weight_flags(c, tied=False, extra=QK_NORM.flags),
        attention=Layers.of(attention),
        attention_kinds=kinds,
        mlps=Layers.of(mlps),
        mlp_kinds=mlp_kinds,
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(
            name="minimax_m3_vl_text",
            title="MiniMax-M3",
            read=minimax_m3_vl_text,
            summary="MiniMaxM3VLTextConfig: GQA with QK-norm, full or block-sparse attention (top blocks by an indexer), dense or MoE with a shared expert",
        ),
    ]
