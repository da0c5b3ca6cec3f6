"""Latent mixture-of-experts (Nemotron 3): tokens are projected hidden -> latent, routed through
top-k experts of the latent width, and projected back; the router reads the hidden state."""

from flopsreg.patterns.moe import EXPERT_HIDDEN, EXPERTS, MOE, TOP_K, E, F_e, k
from flopsreg.patterns.quantities import f
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, s

FLAG = "latent_experts"
REFERENCE = "NVIDIA 2025, Nemotron 3 (latent MoE); transformers 5.24 modeling_nemotron_h.py NemotronHMoE (fc1_latent_proj, fc2_latent_proj)"

LATENT = Param(name="latent_width", latex=r"d_{\mathrm{lat}}", meaning="latent width the routed experts run on (moe_latent_size)")
lat = LATENT.symbol

LATENT_PROJECTION = Pattern(
    name="latent_projection",
    slot="mlp.latent",
    flags={FLAG},
    precedence=10,
    params=(LATENT,),
    formula=2 * s * h * lat * 2,
    weights=2 * h * lat,
    summary="fc1_latent_proj hidden -> latent before the routed experts and fc2_latent_proj latent -> hidden after, once per token",
    reference=REFERENCE,
)
LATENT_EXPERTS = Pattern(
    name="latent_experts",
    slot="mlp",
    flags=MOE.flags | {FLAG},
    precedence=40,
    params=(EXPERTS, TOP_K, EXPERT_HIDDEN, LATENT),
    formula=2 * s * h * E + 2 * s * k * lat * F_e * f,
    weights=E * h + E * lat * F_e * f,
    active_weights=E * h + k * lat * F_e * f,
    routed_weights=E * lat * F_e * f,
    constraints=(Constraint(condition=k <= E, message="top_k must not exceed experts"),),
    summary="router hidden -> E, then k routed experts of width F_e on the latent width per token",
    reference=REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [LATENT_PROJECTION, LATENT_EXPERTS]
