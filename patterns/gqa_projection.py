"""Key and value projections of multi-, grouped- and multi-query attention."""

import sympy

from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, n_h, s

KV_HEADS = Param(
    name="kv_heads",
    latex=r"n_{\mathrm{kv}}",
    meaning="key/value heads (= heads for MHA, 1 for MQA; num_key_value_heads)",
)
HEAD_DIM = Param(
    name="head_dim",
    latex=r"d_{\mathrm{h}}",
    meaning="width of one attention head (head_dim / kv_channels; not always hidden / heads)",
)
n_kv, d_h = KV_HEADS.symbol, HEAD_DIM.symbol

GQA_PROJECTION = Pattern(
    name="gqa_projection",
    slot="attention.projection",
    precedence=10,
    params=(KV_HEADS, HEAD_DIM),
    formula=2 * s * h * 2 * n_kv * d_h,
    provides={"qk_dim": d_h, "v_dim": d_h},
    constraints=(
        Constraint(condition=sympy.Eq(sympy.Mod(n_h, n_kv), 0), message="heads must be a multiple of kv_heads"),
    ),
    summary="K and V: hidden -> kv_heads x head_dim each; the core then uses head_dim for q, k and v",
    reference="Ainslie et al. 2023, 'GQA' (arXiv:2305.13245); Shazeer 2019, 'Fast Transformer Decoding' (MQA)",
    weights=2 * h * n_kv * d_h,
    cache=2 * n_kv * d_h * kv_tokens,  # K and V of every kept token, cached apart
)


@hookimpl
def flopsreg_register_patterns():
    return [GQA_PROJECTION]
