"""A gate on the attention output (Qwen3-Next gated attention): one more hidden -> heads x v matmul."""

from flopsreg.patterns.quantities import d_v
from flopsreg.plugin import Pattern, h, hookimpl, n_h, s

ATTENTION_OUTPUT_GATE = Pattern(
    name="attention_output_gate",
    slot="attention.gate",
    flags={"output_gate"},
    precedence=10,
    formula=2 * s * h * n_h * d_v,
    summary="an elementwise sigmoid gate on each head's output, projected hidden -> heads x v width",
    reference="Qiu et al. 2025, 'Gated Attention for Large Language Models' (arXiv:2505.06708); Megatron-LM attention_output_gate",
    weights=h * n_h * d_v,
)


@hookimpl
def flopsreg_register_patterns():
    return [ATTENTION_OUTPUT_GATE]
