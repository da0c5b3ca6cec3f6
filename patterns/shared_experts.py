"""Shared experts of a mixture-of-experts layer: every token goes through them."""

from flopsreg.patterns.quantities import f
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

SHARED_HIDDEN = Param(
    name="shared_hidden",
    latex=r"d_{\mathrm{sh}}",
    meaning="total inner width of the shared experts (n_shared_experts x moe_intermediate_size)",
)

SHARED_EXPERTS = Pattern(
    name="shared_experts",
    slot="mlp.shared",
    flags={"shared_experts"},
    precedence=10,
    params=(SHARED_HIDDEN,),
    formula=2 * s * h * SHARED_HIDDEN.symbol * f,
    summary="f matmuls of hidden x F_sh per token, besides the routed experts",
    reference="Dai et al. 2024, 'DeepSeekMoE' (arXiv:2401.06066), shared expert isolation",
    weights=f * h * SHARED_HIDDEN.symbol,
)


@hookimpl
def flopsreg_register_patterns():
    return [SHARED_EXPERTS]
