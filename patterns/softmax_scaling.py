"""Learned scalings of Mistral Large 4's attention: a scale and a bias per head on the softmax's
queries, and a learned exponent per RoPE frequency. They rescale elementwise (no matmul), so
they hold weights and count no FLOPs; each is chosen by its flag, which the reader sets.
Their slots are declared in :mod:`flopsreg.patterns.slots`."""

import sympy

from flopsreg.plugin import Param, Pattern, hookimpl, n_h

ROTARY_DIM = Param(name="rotary_dim", latex=r"d_{\mathrm{rot}}", meaning="the width rotary position embedding (RoPE) rotates: its inverse frequencies are ceil(d_rot / 2)")


SOFTMAX_SCALING = Pattern(
    name="softmax_scaling",
    slot="attention.softmax_scaling",
    flags={"softmax_scaling"},
    precedence=10,
    formula=0,
    weights=2 * n_h,
    summary="a learned scale and bias per head, applied to the queries by position (no FLOPs counted)",
    reference="Hugging Face MistralLarge4TextSoftmaxScaling (scale and bias of num_attention_heads) in MistralLarge4TextAttention",
)
ROPE_ALPHA = Pattern(
    name="rope_alpha",
    slot="rope_scaling",
    flags={"rope_alpha"},
    precedence=10,
    scope="model",
    params=(ROTARY_DIM,),
    formula=0,
    weights=sympy.ceiling(ROTARY_DIM.symbol / 2),
    summary="one learned exponent per RoPE inverse frequency, inv_freq x exp(alpha) (no FLOPs counted)",
    reference="Hugging Face MistralLarge4TextRotaryEmbedding.alpha (zeros_like(inv_freq)), shared by all layers",
)



@hookimpl
def flopsreg_register_patterns():
    return [SOFTMAX_SCALING, ROPE_ALPHA]
