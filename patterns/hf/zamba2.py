"""Hugging Face reader of ``zamba2`` (Zamba2): Mamba2 layers, and hybrid layers that first run one of
``num_mem_blocks`` shared transformer blocks (in turn) on [residual, embedding], with low-rank
adapters of each use's own, then a linear of their own and their Mamba2 layer. As for Zamba, a
hybrid layer is listed as two layers: the shared block (weights held once per block) and the
Mamba2 layer with its linear and its use's adapters (held per use)."""

from flopsreg.patterns._mixer_common import CONV_KERNEL, SCAN_CHUNK
from flopsreg.patterns.dense_mlp import FFN_HIDDEN, dense_mlp
from flopsreg.patterns.hf._common import silu_gated, weight_flags
from flopsreg.patterns.hf._linear import refuse_unless, type_list
from flopsreg.patterns.mamba2 import FLAG, GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.norms import SINGLE_NORM
from flopsreg.patterns.shared_block import ADAPTER_RANK, ADAPTERS, ATTENTION_ADAPTERS, CONCAT_INPUT, OUTPUT
from flopsreg.plugin import Decoder, Fields, HFReader, Layers, gqa_params, hookimpl

HYBRID, MAMBA, SHARED = "hybrid", "linear_attention", "shared"
# Zamba2Config.__post_init__: the layout of Zamba2-2.7B when layers_block_type is null (54 layers).
DEFAULT_TYPES = [MAMBA] + ([MAMBA] * 5 + [HYBRID]) * 7 + [MAMBA] * 4 + [HYBRID] + [MAMBA] * 3 + [HYBRID] + [MAMBA] * 2


def _block_types(c: Fields, layers: int) -> list[str]:
    """layers_block_type (legacy "mamba" is "linear_attention"), else the class's 54-layer layout."""
    types = type_list(c, "layers_block_type", (HYBRID, MAMBA), layers)
    if types is None and layers != len(DEFAULT_TYPES):
        raise c.error("layers_block_type", f" is null: Zamba2Config's default layout has {len(DEFAULT_TYPES)} layers, but num_hidden_layers = {layers}")
    return types or DEFAULT_TYPES


def _adapter_flags(c: Fields, heads: int, kv_heads: int, head_dim: int, hidden: int) -> frozenset[str]:
    """The MLP's adapter always; q, k and v adapters (2h -> r -> 2h, added to q, k and v) with
    use_shared_attention_adapter, which transformers runs only when heads x head_dim is 2h for
    every one of q, k and v."""
    if not c.bool("use_shared_attention_adapter", default=False):
        return frozenset({ADAPTERS})
    if kv_heads != heads or heads * head_dim != 2 * hidden:
        raise c.error("use_shared_attention_adapter", f" = true: the adapters add 2 x hidden_size = {2 * hidden} features to q, k and v, "
                      f"but num_key_value_heads x head_dim = {kv_heads * head_dim}; expected num_key_value_heads = num_attention_heads and 2 x hidden_size a multiple of them")
    return frozenset({ADAPTERS, ATTENTION_ADAPTERS})


def zamba2(c: Fields) -> Decoder:
    """Zamba2Config: attention head_dim always 2 x hidden / heads, kv heads default to heads,
    intermediate_size null is 4 x hidden, mamba head width mamba_expand x hidden / n_mamba_heads;
    tie_word_embeddings true; the conv always has its bias (use_conv_bias is not read)."""
    layers, hidden = c.int("num_hidden_layers"), c.int("hidden_size")
    refuse_unless(c, "add_bias_linear", False, False, "the Mamba2, MLP and adapter patterns hold no biases")
    refuse_unless(c, "tie_word_embeddings", True, True, "untied, transformers ties no shared block and every hybrid layer holds "
                  "the adapters of every use of its block id, only one of which it runs (not counted)")
    heads = c.int("num_attention_heads")
    kv_heads = c.optional_int("num_key_value_heads") or heads
    head_dim = 2 * hidden // heads
    inner, mamba_heads = c.int("mamba_expand") * hidden, c.int("n_mamba_heads")
    if inner % mamba_heads:
        raise c.error("n_mamba_heads", f" = {mamba_heads}: mamba_expand x hidden_size = {inner} is not a multiple of it")
    ffn = c.optional_int("intermediate_size") or 4 * hidden
    params = {
        **gqa_params(c, heads=heads, kv_heads=kv_heads, head_dim=head_dim),
        "vocab": c.int("vocab_size"),
        HEADS.name: mamba_heads,
        HEAD_DIM.name: inner // mamba_heads,
        STATE.name: c.int("mamba_d_state"),
        GROUPS.name: c.int("mamba_ngroups"),
        CONV_KERNEL.name: c.int("mamba_d_conv"),
        SCAN_CHUNK.name: c.int("chunk_size"),
    }
    types = _block_types(c, layers)
    attention = []
    for kind in types:
        attention += [SHARED, HYBRID] if kind == HYBRID else ["mamba"]
    mamba = frozenset({FLAG} | SINGLE_NORM.flags)
    adapters = {ADAPTER_RANK.name: c.int_or_default("adapter_rank", 128), FFN_HIDDEN.name: ffn}
    mlp_flags, mlp_params = dense_mlp(ffn)
    # Hybrid use k runs block k % num_mem_blocks; transformers builds min(num_mem_blocks, uses) blocks
    # and ties every later use's block to one of them (Zamba2Model.get_layers), each block holding
    # the adapters of its own uses: so the blocks are held once each and the adapters once per use.
    blocks = min(c.int_or_default("num_mem_blocks", 1), types.count(HYBRID))
    return Decoder(
        params=params,
        flags=weight_flags(c, tied=True, extra=silu_gated(c, default="gelu")),
        attention=Layers.of(attention),
        attention_kinds={
            SHARED: (frozenset({CONCAT_INPUT}) | mlp_flags, mlp_params),
            "mamba": (mamba, {}),
            HYBRID: (mamba | {OUTPUT} | _adapter_flags(c, heads, kv_heads, head_dim, hidden), adapters),
        },
        mlps=Layers.uniform("none", len(attention)),
        mlp_kinds={"none": (frozenset(), {})},
        weight_copies={SHARED: blocks} if blocks else {},
    )


@hookimpl
def flopsreg_register_hf_readers():
    return [
        HFReader(name="zamba2", title="Zamba2", read=zamba2,
                 summary="Zamba2Config: Mamba2 layers; hybrid layers run one of num_mem_blocks shared transformer blocks on [residual, embedding] with per-use LoRA adapters, a linear, then Mamba2"),
    ]
