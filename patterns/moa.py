"""Mixture of attention heads (JetMoE's MoA): the query and output projections are experts, each
token routed to k of E of them; keys and values are one shared projection.

Each expert projects hidden -> n_kv x d (a query for every key/value head) and back; a token's k
experts give it n_h = k n_kv query heads, each attending to the shared keys and values, so the
core, keys and values are grouped-query attention's with n_h = k n_kv. A router (hidden -> E, no
bias) picks the experts. The FLOPs of the projections are a dense attention's of n_h heads plus the
router; the weights are E experts' (see docs/hf-configs.md, "Mixture of attention heads").
"""

from flopsreg.patterns.gqa_projection import KV_HEADS
from flopsreg.patterns.quantities import d_qk, d_v
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, n_h, s

FLAG = "moa"
REFERENCE = "Shen et al. 2024, 'JetMoE' (arXiv:2404.07413); Zhang et al. 2022, 'Mixture of Attention Heads'; Hugging Face JetMoeMoA (modeling_jetmoe.py)"
ATTENTION_EXPERTS = Param(
    name="attention_experts", latex=r"E_{\mathrm{a}}", meaning="query/output experts of a mixture of attention heads (JetMoE's num_local_experts)"
)
E_a, n_kv = ATTENTION_EXPERTS.symbol, KV_HEADS.symbol
# n_h = k n_kv with k <= E_a: a token's query heads come from at most every expert
AT_MOST_EVERY_EXPERT = (Constraint(condition=n_h <= E_a * n_kv, message="heads (top_k x kv_heads) must not exceed attention_experts x kv_heads"),)

MOA_QUERY = Pattern(
    name="moa_query",
    slot="attention.query",
    flags={FLAG},
    precedence=35,  # above low_rank_query's 20 and latent_gate_query's 30 (never set together)
    params=(ATTENTION_EXPERTS, KV_HEADS),
    constraints=AT_MOST_EVERY_EXPERT,
    # the router, then each token through its k query experts of hidden -> n_kv x d (k n_kv = n_h)
    formula=2 * s * h * E_a + 2 * s * h * n_h * d_qk,
    summary="router hidden -> E_a, then each token's k query experts hidden -> n_kv x qk width (n_h = k n_kv heads)",
    reference=REFERENCE,
    weights=h * E_a + E_a * h * n_kv * d_qk,
    active_weights=h * E_a + h * n_h * d_qk,
)
MOA_OUTPUT = Pattern(
    name="moa_output",
    slot="attention.output",
    flags={FLAG},
    precedence=40,  # above grouped_output's 30 (never set together)
    params=(ATTENTION_EXPERTS, KV_HEADS),
    constraints=AT_MOST_EVERY_EXPERT,
    # each token's k output experts n_kv x d -> hidden, summed by the router's weights, plus one bias of h
    formula=2 * s * n_h * d_v * h,
    summary="each token's k output experts n_kv x v width -> hidden, plus a bias of h (JetMoeMoA.bias)",
    reference=REFERENCE,
    weights=E_a * n_kv * d_v * h + h,
    active_weights=n_h * d_v * h + h,
)


@hookimpl
def flopsreg_register_patterns():
    return [MOA_QUERY, MOA_OUTPUT]
