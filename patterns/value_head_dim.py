"""Grouped-query attention whose value heads are narrower (or wider) than its query and key heads
(MiMo-V2-Flash: head_dim 192 for queries and keys, v_head_dim 128 for values).

K: hidden -> n_kv x d, V: hidden -> n_kv x d_v; the query stays n_h x d, the core pairs queries
with keys over d and weights values over d_v, and the output projection reads n_h x d_v: the
core's and output's formulas take qk_dim = d and v_dim = d_v from this pattern."""

import sympy

from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS
from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, n_h, s

FLAG = "value_head_dim"
VALUE_HEAD_DIM = Param(
    name="value_head_dim",
    latex=r"d_{\mathrm{v}}",
    meaning="width of one value head of grouped-query attention when it differs from head_dim (MiMo-V2-Flash's v_head_dim)",
)
n_kv, d_h, d_v = KV_HEADS.symbol, HEAD_DIM.symbol, VALUE_HEAD_DIM.symbol

GQA_VALUE_HEAD_DIM_PROJECTION = Pattern(
    name="gqa_value_head_dim_projection",
    slot="attention.projection",
    flags={FLAG},
    precedence=15,
    params=(KV_HEADS, HEAD_DIM, VALUE_HEAD_DIM),
    formula=2 * s * h * n_kv * (d_h + d_v),
    provides={"qk_dim": d_h, "v_dim": d_v},
    constraints=(
        Constraint(condition=sympy.Eq(sympy.Mod(n_h, n_kv), 0), message="heads must be a multiple of kv_heads"),
    ),
    summary="K: hidden -> kv_heads x head_dim, V: hidden -> kv_heads x value_head_dim; the core and output use each width",
    reference="Xiaomi 2025, MiMo-V2-Flash; Hugging Face MiMoV2FlashAttention (k_proj of head_dim, v_proj of v_head_dim)",
    weights=h * n_kv * (d_h + d_v),
    cache=n_kv * (d_h + d_v) * kv_tokens,  # K and V of every kept token, each of its own width
)


@hookimpl
def flopsreg_register_patterns():
    return [GQA_VALUE_HEAD_DIM_PROJECTION]
