"""Short causal depthwise convolutions beside softmax attention (Inkling): one over the keys and
one over the values after their projections, and one over each sublayer's output (the attention's
and the MLP's) before the residual add; each adds its input back (a residual, no FLOPs counted)."""

from flopsreg.patterns._mixer_common import short_conv
from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS, d_h, n_kv
from flopsreg.plugin import h, hookimpl

REFERENCE = "transformers 5.24 modeling_inkling.py InklingShortConvolution"
PRECEDENCE = 10
KV_CONV = "kv_sconv"  # the patterns kv_sconv_conv and kv_sconv_padded_conv
SUBLAYER_CONV = "sublayer_sconv"  # sublayer_sconv_conv, sublayer_sconv_padded_conv

PATTERNS = [
    # k_sconv and v_sconv: n_kv d_h channels each, after k_proj and v_proj, before the k norm.
    *short_conv(KV_CONV, "keys' and values'", 2 * n_kv * d_h, (KV_HEADS, HEAD_DIM), bias=False,
                reference=REFERENCE + " (InklingAttention.k_sconv, v_sconv)", precedence=PRECEDENCE, slot="attention.kv_conv"),
    # attn_sconv on o_proj's output and mlp_sconv on the MLP's: h channels each.
    *short_conv(SUBLAYER_CONV, "sublayer outputs'", 2 * h, (), bias=False,
                reference=REFERENCE + " (InklingDecoderLayer.attn_sconv, mlp_sconv)", precedence=PRECEDENCE, slot="sublayer_conv"),
]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
