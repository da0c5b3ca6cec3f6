"""Differential attention (DiffLlama): each head's softmax map weighs the values of two KV-head
halves, so PV runs over twice the value width, and head h's output minus lambda times head
h + H/2's is the pair's result. Its four lambda vectors per layer are weights without a matmul."""

from flopsreg.patterns.quantities import d_qk, d_v, pairs
from flopsreg.plugin import Pattern, hookimpl, n_h

FLAG = "differential_attention"
REFERENCE = (
    "Ye et al. 2024, 'Differential Transformer' (arXiv:2410.05258); transformers 5.24 modeling_diffllama.py "
    "DiffLlamaAttention.forward (two attention calls sharing Q and K over the two value halves)"
)

DIFFERENTIAL_CORE = Pattern(
    name="differential_attention_core",
    slot="attention.core",
    flags={FLAG},
    precedence=30,
    formula=2 * n_h * (d_qk + 2 * d_v) * pairs,
    weights=4 * d_qk,  # lambda_q1, lambda_k1, lambda_q2, lambda_k2 (the group norm has no weight)
    summary="QK^T once per head (the two calls share Q and K) and PV over both value halves (2 d_v) per head, 2 FLOPs per multiply-add",
    reference=REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [DIFFERENTIAL_CORE]
