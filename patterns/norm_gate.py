"""Gated RMSNorms (A.X K2, Megatron's GatedNormWrapper): y = RMSNorm(x) * sigmoid(fc2(silu(fc1(y)))),
a low-rank gate MLP hidden -> R -> hidden on the normed input. The norm's scale stays in the
``norms`` slot; these patterns hold the gate MLPs: one on the input norm, and one more on the
post-attention norm where the layer says so (A.X K2's MoE layers)."""

from flopsreg.plugin import Param, Pattern, h, hookimpl, s

NORM_GATE_RANK = Param(name="norm_gate_rank", latex=r"r_{\mathrm{g}}", meaning="bottleneck of a gated norm's gate MLP (gated_norm_rank)")
FLAG, POST_FLAG = "norm_gate", "post_norm_gate"
r_g = NORM_GATE_RANK.symbol
_REFERENCE = "Hugging Face AXK2GatedRMSNorm, AXK2GateMLP (fc1 hidden -> gated_norm_rank, fc2 back, no biases; modeling_axk2.py)"

INPUT_NORM_GATE = Pattern(
    name="input_norm_gate",
    slot="norms.gate",
    flags={FLAG},
    precedence=10,
    params=(NORM_GATE_RANK,),
    formula=2 * s * 2 * h * r_g,
    weights=2 * h * r_g,
    summary="the gate MLP of the gated input norm: hidden -> r_g -> hidden (SiLU between, a sigmoid after: elementwise)",
    reference=_REFERENCE,
)
BOTH_NORM_GATES = Pattern(
    name="both_norm_gates",
    slot="norms.gate",
    flags={FLAG, POST_FLAG},
    precedence=20,
    params=(NORM_GATE_RANK,),
    formula=2 * (2 * s * 2 * h * r_g),
    weights=2 * 2 * h * r_g,
    summary="the gate MLPs of the gated input and post-attention norms: two of hidden -> r_g -> hidden",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [INPUT_NORM_GATE, BOTH_NORM_GATES]
