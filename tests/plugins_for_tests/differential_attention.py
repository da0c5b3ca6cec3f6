"""A third-party plugin with a new attention core: differential attention (Ye et al. 2024).

Each head computes two softmax maps and subtracts them before PV; counted here as two QK^T maps
at the full query/key width and one PV, 2 FLOPs per multiply-add (a test plugin, not a reference).
No framework's convention has a term for it: every built-in one must refuse it by name.
"""

import flopsreg
from flopsreg.patterns.quantities import d_qk, d_v, pairs
from flopsreg.plugin import n_h

FLAG = "differential_attention"

DIFFERENTIAL_CORE = flopsreg.Pattern(
    name="differential_attention_core",
    slot="attention.core",
    flags={FLAG},
    precedence=30,
    formula=2 * n_h * (2 * d_qk + d_v) * pairs,
    summary="two QK^T maps (their difference is the attention) and one PV per head over the attended pairs",
    reference="Ye et al. 2024, 'Differential Transformer'",
)


@flopsreg.hookimpl
def flopsreg_register_patterns():
    return [DIFFERENTIAL_CORE]
