"""A gate on the attention output (Qwen3-Next gated attention): one more hidden -> heads x v matmul;
with a learned bias per head added to the gate's logits (Beam) it holds n_h more weights."""

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

ATTENTION_OUTPUT_GATE_HEAD_BIAS = Pattern(
    name="attention_output_gate_head_bias",
    slot="attention.gate",
    flags={"output_gate", "output_gate_head_bias"},
    precedence=20,
    formula=2 * s * h * n_h * d_v,
    summary="the elementwise output gate with a learned bias per head added to its logits (the add is not counted)",
    reference="Hugging Face BeamAttention: gate_proj (no bias) plus gate_bias of num_attention_heads (modeling_beam.py)",
    weights=h * n_h * d_v + n_h,
)


@hookimpl
def flopsreg_register_patterns():
    return [ATTENTION_OUTPUT_GATE, ATTENTION_OUTPUT_GATE_HEAD_BIAS]
