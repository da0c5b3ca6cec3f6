"""A.X K2's query and output gate from one projection of the query latent: hidden -> q_lora_rank,
then [RMSNorm(latent), latent] (2 r_q wide) -> heads x (qk width + v width), split into the queries
and a sigmoid gate on each head's output (``q_gate_proj``, one matrix, counted in two slots)."""

from flopsreg.patterns.low_rank_query import Q_LORA_RANK, r_q
from flopsreg.patterns.quantities import d_qk, d_v
from flopsreg.plugin import Pattern, h, hookimpl, n_h, s

FLAG = "q_gate_latent"
_REFERENCE = "Hugging Face AXK2Attention: q_a_proj, q_a_layernorm and q_gate_proj over torch.cat([q_resid, q_compressed]) (modeling_axk2.py)"

LATENT_GATE_QUERY = Pattern(
    name="latent_gate_query",
    slot="attention.query",
    flags={"q_lora", FLAG},
    precedence=30,
    params=(Q_LORA_RANK,),
    # q_a_proj, then the query columns of q_gate_proj over the normed and the raw latent (2 r_q).
    formula=2 * s * (h * r_q + 2 * r_q * n_h * d_qk),
    weights=h * r_q + r_q + 2 * r_q * n_h * d_qk,
    summary="Q through a latent read twice: hidden -> r_q, then [norm(latent), latent] (2 r_q) -> heads x qk width",
    reference=_REFERENCE,
)
LATENT_OUTPUT_GATE = Pattern(
    name="latent_output_gate",
    slot="attention.gate",
    flags={"output_gate", FLAG},
    precedence=30,
    params=(Q_LORA_RANK,),
    # the gate columns of q_gate_proj: [norm(latent), latent] (2 r_q) -> heads x v width; the sigmoid is elementwise.
    formula=2 * s * 2 * r_q * n_h * d_v,
    weights=2 * r_q * n_h * d_v,
    summary="an elementwise sigmoid gate on each head's output, projected from [norm(latent), latent] (2 r_q) -> heads x v width",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [LATENT_GATE_QUERY, LATENT_OUTPUT_GATE]
