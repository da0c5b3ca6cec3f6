"""A mixture-of-experts MLP: a router, then each token through its top-k routed experts."""

from flopsreg.patterns.quantities import f
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, s

EXPERTS = Param(name="experts", latex="E", meaning="routed experts per MoE layer (n_routed_experts, num_local_experts)")
TOP_K = Param(name="top_k", latex="k", meaning="routed experts each token goes through (num_experts_per_tok)")
EXPERT_HIDDEN = Param(
    name="expert_hidden", latex=r"d_{\mathrm{e}}", meaning="inner width of one routed expert (moe_intermediate_size)"
)
E, k, F_e = EXPERTS.symbol, TOP_K.symbol, EXPERT_HIDDEN.symbol

MOE = Pattern(
    name="moe",
    slot="mlp",
    flags={"moe"},
    precedence=20,
    params=(EXPERTS, TOP_K, EXPERT_HIDDEN),
    # Model FLOPs count the k experts a token is routed to, never all E, whatever a kernel runs.
    formula=2 * s * h * E + 2 * s * k * h * F_e * f,
    constraints=(Constraint(condition=k <= E, message="top_k must not exceed experts"),),
    summary="router hidden -> E, then k routed experts of width F_e per token",
    reference="Shazeer et al. 2017, 'Outrageously Large Neural Networks' (top-k gating); Fedus et al. 2021, Switch Transformer",
    # All E experts are held, k are used per token; the router h x E is both.
    weights=h * E + E * f * h * F_e,
    active_weights=h * E + k * f * h * F_e,
    routed_weights=E * f * h * F_e,  # the experts' matrices (GPT-OSS ships them in MXFP4), not the router
)


def moe_mlp(
    experts: int, top_k: int, width: int, shared: int = 0, gate: bool = False
) -> tuple[frozenset[str], dict[str, int]]:
    """The flags and parameters of a MoE MLP (what a reader gives a layer kind), with shared
    experts of total width *shared* if any, gated if *gate* (Qwen's shared-expert gate)."""
    from flopsreg.patterns.shared_expert_gate import SHARED_EXPERT_GATE
    from flopsreg.patterns.shared_experts import SHARED_EXPERTS, SHARED_HIDDEN

    flags = MOE.flags | (SHARED_EXPERTS.flags if shared else frozenset()) | (SHARED_EXPERT_GATE.flags if gate else frozenset())
    params = {EXPERTS.name: experts, TOP_K.name: top_k, EXPERT_HIDDEN.name: width}
    if shared:
        params[SHARED_HIDDEN.name] = shared
    return flags, params


@hookimpl
def flopsreg_register_patterns():
    return [MOE]
