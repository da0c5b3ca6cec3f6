"""The short-convolution mixer (LFM2 ``conv`` layers): in_proj to B, C and x, a depthwise causal
conv of B x, gated by C, and out_proj; no softmax attention in its layers."""

from flopsreg.patterns._mixer_common import short_conv
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Pattern, h, hookimpl, s

PRECEDENCE = 40  # this mixer's own: see _mixer_common
FLAG = "short_conv"
REFERENCE = "Liquid AI 2025, LFM2 technical report (arXiv:2511.23404); transformers 5.24 modeling_lfm2.py Lfm2ShortConv"

PROJECTION = Pattern(
    name="short_conv_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    formula=2 * s * h * 3 * h,
    weights=3 * h * h,
    summary="in_proj: hidden -> B, C and x (hidden each); the B x and C y gates are elementwise",
    reference=REFERENCE,
)
OUTPUT = Pattern(
    name="short_conv_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    formula=2 * s * h * h,
    weights=h * h,
    summary="out_proj: hidden -> hidden",
    reference=REFERENCE,
)

PATTERNS = [
    PROJECTION,
    *short_conv(FLAG, "short-convolution", h, (), bias=False, reference=REFERENCE, precedence=PRECEDENCE),
    OUTPUT,
]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a short-convolution layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
