"""The query projection: hidden -> heads x qk width in one matmul."""

from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Pattern, h, hookimpl, n_h, s

QUERY_PROJECTION = Pattern(
    name="query_projection",
    slot="attention.query",
    precedence=10,
    formula=2 * s * h * n_h * d_qk,
    summary="Q: hidden -> heads x qk width in one matmul",
    reference="Vaswani et al. 2017, 'Attention Is All You Need'",
    weights=h * n_h * d_qk,
)


@hookimpl
def flopsreg_register_patterns():
    return [QUERY_PROJECTION]
