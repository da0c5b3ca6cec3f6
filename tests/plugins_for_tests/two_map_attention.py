"""A third-party plugin with a new attention core: two softmax maps per head, subtracted before PV.

Counted here as two QK^T maps at the full query/key width and one PV, 2 FLOPs per multiply-add (a
test plugin, not a reference: the built-in differential_attention_core counts Differential
Transformer as transformers runs it).
No framework's convention has a term for it: every built-in one must refuse it by name.
"""

import flopsreg
from flopsreg.patterns.quantities import d_qk, d_v, pairs
from flopsreg.plugin import n_h

FLAG = "two_map_attention"

TWO_MAP_CORE = flopsreg.Pattern(
    name="two_map_attention_core",
    slot="attention.core",
    flags={FLAG},
    precedence=40,
    formula=2 * n_h * (2 * d_qk + d_v) * pairs,
    summary="two QK^T maps (their difference is the attention) and one PV per head over the attended pairs",
    reference="a test plugin",
)


@flopsreg.hookimpl
def flopsreg_register_patterns():
    return [TWO_MAP_CORE]
