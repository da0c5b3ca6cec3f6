"""A mixture of experts beside the dense MLP (Gemma 4 ``enable_moe_block``): every token goes
through the dense MLP and through its top-k experts, and the two outputs are added."""

from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, TOP_K, E, F_e, k
from flopsreg.patterns.quantities import f
from flopsreg.plugin import Constraint, Pattern, h, hookimpl, s

PARALLEL_EXPERTS = Pattern(
    name="parallel_experts",
    slot="mlp.parallel_experts",
    flags={"parallel_moe"},
    precedence=10,
    params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
    formula=2 * s * h * E + 2 * s * k * h * F_e * f,
    constraints=(Constraint(condition=k <= E, message="top_k must not exceed experts"),),
    # The router's projection (h x E), its input scale (h) and per-expert scale (E); the experts.
    weights=h * E + h + E + E * f * h * F_e,
    active_weights=h * E + h + E + k * f * h * F_e,
    routed_weights=E * f * h * F_e,
    summary="router hidden -> E, then k routed experts of width F_e per token, added to the dense MLP's output",
    reference="Google 2026, Gemma 4; transformers models/gemma4/modeling_gemma4.py Gemma4TextRouter, Gemma4TextExperts",
)


@hookimpl
def flopsreg_register_patterns():
    return [PARALLEL_EXPERTS]
