"""The attention output projection: heads x value width -> hidden."""

from flopsreg.patterns.quantities import d_v
from flopsreg.plugin import Pattern, h, hookimpl, n_h, s

OUTPUT_PROJECTION = Pattern(
    name="output_projection",
    slot="attention.output",
    precedence=10,
    formula=2 * s * n_h * d_v * h,
    summary="O: heads x v width -> hidden",
    reference="Vaswani et al. 2017, 'Attention Is All You Need'",
    weights=n_h * d_v * h,
)


@hookimpl
def flopsreg_register_patterns():
    return [OUTPUT_PROJECTION]
