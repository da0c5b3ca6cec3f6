"""Inkling's router and MLP extras: the router scores the shared experts beside the routed ones
(a row of router weights per shared expert, their scores a sink in the softmax over the expert
weights), and a learned scalar ``global_scale`` on the dense MLP's output or on the router's weights."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

SHARED_COUNT = Param(name="shared_count", latex=r"n_{\mathrm{sh}}", meaning="shared experts the router scores beside the routed ones (n_shared_experts)")
REFERENCE = "transformers 5.24 modeling_inkling.py"

SHARED_EXPERT_SINK = Pattern(
    name="shared_expert_sink",
    slot="mlp.shared_gate",
    flags={"shared_expert_sink"},
    precedence=20,  # shared_expert_gate's is 10; a layer never has both
    params=(SHARED_COUNT,),
    formula=2 * s * h * SHARED_COUNT.symbol,
    weights=h * SHARED_COUNT.symbol,
    summary="the router's logits of the shared experts: hidden -> n_sh beside the routed experts' hidden -> E",
    reference=REFERENCE + " InklingTopkRouter.weight (n_routed_experts + n_shared_experts rows)",
)
MLP_GLOBAL_SCALE = Pattern(
    name="mlp_global_scale",
    slot="mlp.scale",
    flags={"mlp_global_scale"},
    precedence=10,
    formula=0,
    weights=1,
    summary="one learned scalar per layer: on the dense MLP's output, or on the router's expert weights (no FLOPs counted)",
    reference=REFERENCE + " InklingMLP.global_scale, InklingTopkRouter.global_scale",
)


@hookimpl
def flopsreg_register_patterns():
    return [SHARED_EXPERT_SINK, MLP_GLOBAL_SCALE]
