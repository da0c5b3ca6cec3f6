"""A dense layer before the logits: hidden -> hidden, an activation and a norm, per position
(ModernBERT's prediction head, run by ModernBERT-decoder's causal LM before its decoder matrix).

One matmul of h x h per position: 2 s h^2 FLOPs, as the logits' 2 s h V with V = h. Its weights
are the matrix and the norm's scale (and the norm's bias with ``norm_bias``); the dense layer's
own bias is a weight-only pattern of its own (``head_transform_bias``)."""

from flopsreg.plugin import Pattern, h, hookimpl, s

_SUMMARY = "hidden -> hidden per position, an activation and a norm, before the logits head"
_REFERENCE = "Warner et al. 2024, 'ModernBERT' (arXiv:2412.13663); Hugging Face ModernBertDecoderPredictionHead (dense, act, norm)"

HEAD_TRANSFORM = Pattern(
    name="head_transform",
    slot="head.transform",
    flags={"lm_head", "head_transform"},
    precedence=10,
    scope="model",
    formula=2 * s * h * h,
    weights=h * h + h,  # the dense matrix, the norm's scale
    summary=_SUMMARY + " (2 s h^2; a norm without bias)",
    reference=_REFERENCE,
)
HEAD_TRANSFORM_LAYERNORM = Pattern(
    name="head_transform_layernorm",
    slot="head.transform",
    flags={"lm_head", "head_transform", "norm_bias"},
    precedence=20,
    scope="model",
    formula=HEAD_TRANSFORM.formula,
    weights=h * h + 2 * h,  # the dense matrix, the LayerNorm's scale and bias
    summary=_SUMMARY + " (2 s h^2; a LayerNorm with bias)",
    reference=_REFERENCE,
)
HEAD_TRANSFORM_BIAS = Pattern(
    name="head_transform_bias",
    slot="head.transform_bias",
    flags={"lm_head", "head_transform", "head_transform_bias"},
    precedence=10,
    scope="model",
    formula=0,
    weights=h,
    summary="the bias of h of the dense layer before the logits (ModernBERT classifier_bias)",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [HEAD_TRANSFORM, HEAD_TRANSFORM_LAYERNORM, HEAD_TRANSFORM_BIAS]
