"""Learned scalars of an MLP's activation: weights only.

xIELU (Huang et al. 2024, arXiv:2411.13010) is x -> alpha_p x^2 + beta x for x > 0 and
alpha_n (expm1(min(x, eps)) - x) + beta x otherwise, with two learned scalars per activation
module (alpha_p, alpha_n; beta and eps are buffers). It is elementwise (not counted), so the
pattern holds the two weights and no FLOPs; the MLP's matmuls are the plain FFN's.
"""

from flopsreg.plugin import Pattern, hookimpl

XIELU = Pattern(
    name="xielu",
    slot="mlp.learned_activation",
    flags={"xielu"},
    precedence=10,
    formula=0,
    weights=2,
    summary="xIELU's two learned scalars (alpha_p, alpha_n) in each layer's MLP activation (no FLOPs counted)",
    reference="Huang et al. 2024, 'Deriving Activation Functions Using Integration' (arXiv:2411.13010); Hugging Face XIELUActivation (activations.py)",
)


@hookimpl
def flopsreg_register_patterns():
    return [XIELU]
