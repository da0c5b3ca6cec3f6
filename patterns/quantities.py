"""The quantities the built-in patterns pass between slots, declared like any plugin's.

A ``layer_positions`` pattern gives the positions a layer runs over when they are not the s input
tokens (the engine then counts every slot of that layer over them). Mask patterns produce ``pairs`` for the attention core (and ``kv_tokens``, the keys a layer
keeps, for the projections' KV cache); projection patterns ``qk_dim`` and
``v_dim``; the FFN activation ``ffn_matrices`` for every MLP pattern. Patterns import the
symbols from here.
"""

from flopsreg.plugin import Quantity, hookimpl

PAIRS = Quantity(
    name="pairs",
    latex="P",
    meaning="attended (query, key) pairs of one sequence; from the attention.mask slot",
    # Every built-in mask is query-local: after c cached tokens the s new queries see exactly the
    # keys they would see in one pass over c + s tokens, so their pairs are F(c + s) - F(c).
    cached="difference",
)
QK_DIM = Quantity(
    name="qk_dim",
    latex=r"d_{\mathrm{qk}}",
    meaning="per-head query/key width of the attention core; from attention.projection",
)
V_DIM = Quantity(
    name="v_dim",
    latex=r"d_{\mathrm{v}}",
    meaning="per-head value width of the attention core; from attention.projection",
)
KV_TOKENS = Quantity(
    name="kv_tokens",
    latex=r"s_{\mathrm{kv}}",
    meaning=(
        "tokens whose keys and values one layer keeps for a sequence of s tokens, at most: s under a causal mask, "
        "min(s, W) under a window; from attention.mask (Registry.memory reads it, FLOPs never do)"
    ),
    # After c cached tokens, s new ones add the keys kept at c + s less those kept at c.
    cached="difference",
)
POSITIONS = Quantity(
    name="layer_positions",
    latex=r"s_{\mathrm{layer}}",
    meaning=(
        "positions one layer runs over for an input of s tokens, where a pattern of the layer_positions slot says it is not s "
        "(a prompt prepended inside the model); every slot of that layer counts over it"
    ),
    replaces_seq_len=True,
)
FFN_MATRICES = Quantity(
    name="ffn_matrices",
    latex="f",
    meaning="hidden-width matmuls per feed-forward network: 2, or 3 when gated (SwiGLU, GeGLU)",
)

pairs, d_qk, d_v, f, kv_tokens = PAIRS.symbol, QK_DIM.symbol, V_DIM.symbol, FFN_MATRICES.symbol, KV_TOKENS.symbol
layer_positions = POSITIONS.symbol


@hookimpl
def flopsreg_register_quantities():
    return [PAIRS, QK_DIM, V_DIM, KV_TOKENS, FFN_MATRICES, POSITIONS]
