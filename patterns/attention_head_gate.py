"""A gate of one scalar per head on the attention output (Laguna's per-head softplus g_proj, LFM3's
sigmoid g_proj): one more hidden -> heads matmul, its value broadcast over the head's width."""

from flopsreg.plugin import Pattern, h, hookimpl, n_h, s

ATTENTION_HEAD_GATE = Pattern(
    name="attention_head_gate",
    slot="attention.gate",
    flags={"head_gate"},
    precedence=15,  # never set with output_gate (one g_proj per layer); 10 is attention_output_gate's
    formula=2 * s * h * n_h,
    summary="an elementwise gate of one scalar per head on the attention output, projected hidden -> heads",
    reference="Hugging Face LagunaAttention.g_proj with gating 'per-head', Lfm3Attention.g_proj (transformers 5.24)",
    weights=h * n_h,
)


@hookimpl
def flopsreg_register_patterns():
    return [ATTENTION_HEAD_GATE]
