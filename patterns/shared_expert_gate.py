"""The scalar gate on the shared expert's output (Qwen2-MoE): hidden -> 1 per token."""

from flopsreg.plugin import Pattern, h, hookimpl, s

SHARED_EXPERT_GATE = Pattern(
    name="shared_expert_gate",
    slot="mlp.shared_gate",
    flags={"shared_expert_gate"},
    precedence=10,
    formula=2 * s * h,
    summary="a sigmoid gate hidden -> 1 per token on the shared expert output",
    reference="Qwen team 2024, Qwen1.5-MoE / Qwen2-MoE (Hugging Face Qwen2MoeSparseMoeBlock.shared_expert_gate)",
    weights=h,
)


@hookimpl
def flopsreg_register_patterns():
    return [SHARED_EXPERT_GATE]
