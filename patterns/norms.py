"""Normalisation weights: per-layer norms, per-head query/key norms and the final norm.

Norms hold a scale vector and do no matmul (elementwise work is not counted), so these
patterns hold weights only: ``Registry.parameters`` adds them up, FLOPs are unchanged. The
built-in families use RMSNorm (one scale of the normalised width, no bias).
"""

from flopsreg import Pattern, hookimpl
from flopsreg.patterns.quantities import d_qk
from flopsreg.symbols import h

DECODER_NORMS = Pattern(
    name="decoder_norms",
    slot="norms",
    flags={"norms"},
    precedence=10,
    formula=0,
    weights=2 * h,
    summary="two RMSNorms of width h per layer, before attention and before the MLP (no FLOPs counted)",
    reference="Zhang and Sennrich 2019, RMSNorm; Hugging Face input_layernorm, post_attention_layernorm",
)
SANDWICH_NORMS = Pattern(
    name="sandwich_norms",
    slot="norms",
    flags={"norms", "sandwich_norms"},
    precedence=20,
    formula=0,
    weights=4 * h,
    summary="four RMSNorms of width h per layer: before and after attention and the MLP (Gemma 2, Gemma 3)",
    reference="Gemma Team 2024, 'Gemma 2' (arXiv:2408.00118); Hugging Face pre/post_feedforward_layernorm",
)
QK_NORM = Pattern(
    name="qk_norm",
    slot="attention.qk_norm",
    flags={"qk_norm"},
    precedence=10,
    formula=0,
    weights=2 * d_qk,
    summary="an RMSNorm of the head width on queries and one on keys, shared by all heads (no FLOPs counted)",
    reference="Dehghani et al. 2023, 'Scaling Vision Transformers to 22B' (QK-norm); Hugging Face q_norm, k_norm (Qwen3, Gemma 3)",
)
FINAL_NORM = Pattern(
    name="final_norm",
    slot="final_norm",
    flags={"norms"},
    precedence=10,
    scope="model",
    formula=0,
    weights=h,
    summary="the RMSNorm of width h after the last decoder layer (no FLOPs counted)",
    reference="Hugging Face model.norm of every decoder-only family",
)


@hookimpl
def flopsreg_register_patterns():
    return [DECODER_NORMS, SANDWICH_NORMS, QK_NORM, FINAL_NORM]
