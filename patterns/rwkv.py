"""RWKV-4 (transformers' ``rwkv``): the time-mix block as a token mixer of the ``mixer`` slots
(receptance, key and value projections, the WKV recurrence, the output projection) and the
channel-mix block as the layer's MLP (key h -> F, relu^2, value F -> h, a sigmoid receptance h -> h).

The WKV recurrence keeps one numerator and one denominator per channel: per token and channel
its recurrent minimum is two multiply-adds, e^k v into the state and e^(u + k) v into the output;
the decays, exponentials, maxima and the division are elementwise and not counted, like every
mixer's decay. The token shift (a mix of each token with the one before) is elementwise too.
"""

from flopsreg.patterns.dense_mlp import FFN_HIDDEN
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

FLAG = "rwkv4"
CHANNEL_MIX = "rwkv4_channel_mix"
PRE_LN = "rwkv4_pre_ln"
PRECEDENCE = 80  # this mixer's own: see _mixer_common
REFERENCE = "Peng et al. 2023, 'RWKV: Reinventing RNNs for the Transformer Era' (arXiv:2305.13048); transformers 5.24 modeling_rwkv.py"

WIDTH = Param(name="rwkv_attention_width", latex="A", meaning="RWKV time-mix width (attention_hidden_size; null: hidden_size)")
A = WIDTH.symbol
F = FFN_HIDDEN.symbol

PROJECTION = Pattern(
    name="rwkv4_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(WIDTH,),
    formula=2 * s * h * 3 * A,
    weights=3 * h * A + 3 * h,  # key, value, receptance; time_mix_key, _value, _receptance
    summary="key, value and receptance: hidden -> A each, from the token mixed with the one before (the mix is elementwise)",
    reference=REFERENCE + " RwkvSelfAttention.extract_key_value",
)
CORE = Pattern(
    name="rwkv4_wkv",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(WIDTH,),
    formula=4 * s * A,
    weights=2 * A,  # time_decay, time_first
    summary="WKV recurrent minimum per token and channel: e^k v into the numerator state, e^(u+k) v into the output",
    reference=REFERENCE + " rwkv_linear_attention_cpu",
)
OUTPUT = Pattern(
    name="rwkv4_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(WIDTH,),
    formula=2 * s * A * h,
    weights=A * h,
    summary="output: A -> hidden, after the sigmoid receptance gate (elementwise)",
    reference=REFERENCE + " RwkvSelfAttention.forward",
)
CHANNEL_MIX_MLP = Pattern(
    name="rwkv4_channel_mix",
    slot="mlp",
    flags={"mlp", CHANNEL_MIX},
    precedence=55,
    params=(FFN_HIDDEN,),
    formula=2 * s * (2 * h * F + h * h),
    weights=2 * h * F + h * h + 2 * h,  # key, value, receptance; time_mix_key, _receptance
    summary="channel mix: key hidden -> F, relu^2, value F -> hidden, times sigmoid(receptance hidden -> hidden)",
    reference=REFERENCE + " RwkvFeedForward",
)
FIRST_LAYERNORMS = Pattern(
    name="rwkv4_first_layernorms",
    slot="norms",
    flags={"norms", "norm_bias", PRE_LN},
    precedence=45,
    formula=0,
    weights=6 * h,
    summary="the first block's three LayerNorms with biases: pre_ln on the embeddings, ln1 and ln2 (no FLOPs counted)",
    reference=REFERENCE + " RwkvBlock (pre_ln when layer_id == 0)",
)

PATTERNS = [PROJECTION, CORE, OUTPUT, CHANNEL_MIX_MLP, FIRST_LAYERNORMS]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "an RWKV-4 block's time mix runs instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
