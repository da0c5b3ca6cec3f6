"""Attention sinks (GPT-OSS): one learned logit per head that every query also attends to.

The sink joins the softmax's denominator only (no key, no value, no matmul), so it holds
weights and counts no FLOPs.
"""

from flopsreg.plugin import Pattern, hookimpl, n_h

ATTENTION_SINKS = Pattern(
    name="attention_sinks",
    slot="attention.sinks",
    flags={"sinks"},
    precedence=10,
    formula=0,
    weights=n_h,
    summary="one learned sink logit per head in the softmax denominator: weights, no matmul",
    reference="OpenAI 2025, gpt-oss model card; Hugging Face GptOssAttention.sinks",
)


@hookimpl
def flopsreg_register_patterns():
    return [ATTENTION_SINKS]
