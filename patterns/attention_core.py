"""The attention core: QK^T and PV over the attended (query, key) pairs."""

from flopsreg.patterns.quantities import d_qk, d_v, pairs
from flopsreg.plugin import Pattern, hookimpl, n_h

ATTENTION_CORE = Pattern(
    name="attention_core",
    slot="attention.core",
    precedence=10,
    formula=2 * n_h * (d_qk + d_v) * pairs,
    summary="QK^T (qk width) and PV (v width) per head over the attended pairs, 2 FLOPs per multiply-add",
    reference="Vaswani et al. 2017; pairs from the attention.mask slot, widths from attention.projection",
)


@hookimpl
def flopsreg_register_patterns():
    return [ATTENTION_CORE]
