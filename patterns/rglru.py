"""Griffin's recurrent block (RecurrentGemma): the RG-LRU as a token mixer of the ``mixer`` slots.

Two branches from the input, y = act(W_y x) and x = W_x x (hidden -> L each, with biases); x runs
through a depthwise causal conv and the Real-Gated Linear Recurrent Unit; their product goes out
through W_out (L -> hidden). The RG-LRU's input and recurrence gates are block-diagonal linears of
n_b blocks of w x w (L = n_b w, num_attention_heads blocks); its recurrence is diagonal: per token
and channel h_t = a_t h_{t-1} + x~_t, one multiply-add (its recurrent minimum). The gate
sigmoids, a_t = exp(-8 r_t softplus(Lambda)), the sqrt(1 - a_t^2) normalisation, the gating
products and the branches' product are elementwise and not counted, like every mixer's decay.
"""

from flopsreg.patterns._mixer_common import short_conv
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

FLAG = "rglru"
PRECEDENCE = 90  # this mixer's own: see _mixer_common
REFERENCE = "De et al. 2024, 'Griffin' (arXiv:2402.19427), section 2.4; transformers 5.24 modeling_recurrent_gemma.py"

BLOCKS = Param(name="rglru_blocks", latex=r"n_{\mathrm{b}}", meaning="RG-LRU gate blocks (num_attention_heads)")
BLOCK_WIDTH = Param(name="rglru_block_width", latex="w", meaning="RG-LRU channels per gate block; width L = blocks x width (lru_width / num_attention_heads)")
PARAMS = (BLOCKS, BLOCK_WIDTH)
n_b, w = BLOCKS.symbol, BLOCK_WIDTH.symbol
L = n_b * w

PROJECTION = Pattern(
    name="rglru_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * h * 2 * L,
    weights=2 * h * L + 2 * L,
    summary="linear_y and linear_x: hidden -> L each, with biases (y then through the activation)",
    reference=REFERENCE + " RecurrentGemmaRecurrentBlock",
)
CORE = Pattern(
    name="rglru_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    # two block-diagonal gates (n_b blocks of w x w: L w multiply-adds each), one multiply-add of the recurrence
    formula=2 * s * (2 * L * w + L),
    weights=2 * n_b * w * w + 2 * L + L,  # the gates' weights and biases, recurrent_param (Lambda)
    state=L,  # h_t per channel, kept per sequence
    summary="RG-LRU: input and recurrence gates (block-diagonal, 2 L w per token) and h_t = a_t h_{t-1} + x~_t (L per token)",
    reference=REFERENCE + " RecurrentGemmaRglru",
)
OUTPUT = Pattern(
    name="rglru_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * L * h,
    weights=L * h + h,
    summary="linear_out: L -> hidden, with a bias, after the product of the two branches (elementwise)",
    reference=REFERENCE + " RecurrentGemmaRecurrentBlock.linear_out",
)
CONVS = short_conv(FLAG, "RG-LRU", L, PARAMS, True, REFERENCE + " RecurrentGemmaRecurrentBlock.conv_1d", PRECEDENCE)


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a Griffin recurrent block (RG-LRU) runs instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return [PROJECTION, *CONVS, CORE, OUTPUT]
