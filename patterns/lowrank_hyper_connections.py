"""Qwen4-Exp's gated residual: n residual streams of hidden, read around each sublayer through a
low-rank mixer (n h -> r -> n h per-channel weights) and written back with n learned injection
weights; after the last layer the same mixer without injection collapses the streams."""

from flopsreg.patterns.hyper_connections import HC_MULT
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

HC_LOWRANK = Param(name="hc_lowrank", latex=r"r_{\mathrm{hc}}", meaning="rank of the hyper-connection input mixer (hc_lowrank)")
FLAG = "lowrank_hc"
n, r = HC_MULT.symbol, HC_LOWRANK.symbol
_REFERENCE = "transformers 5.24 models/qwen4_exp/modeling_qwen4_exp.py Qwen4ExpTextGatedResidual"

LOWRANK_HC = Pattern(
    name="lowrank_hc",
    slot="residual_mixer",
    flags={FLAG},
    precedence=25,
    params=(HC_MULT, HC_LOWRANK),
    # Around attention and around the MLP: input_mix_weight_down (n h -> r), input_mix_weight_up
    # (r -> n h) and block_inject_weight (n h -> n). Weighting and averaging the streams with the
    # mixer's output and adding the injected output to each are elementwise.
    formula=2 * (2 * s * n * h * (2 * r + n)),
    # Per sublayer: hc_norm (n h), the two mixer matrices and block_inject_weight.
    weights=2 * (n * h + 2 * n * h * r + n * n * h),
    summary="two low-rank gated residuals per layer: n h -> r -> n h stream weights and n h -> n injection weights",
    reference=_REFERENCE,
)
LOWRANK_HC_HEAD = Pattern(
    name="lowrank_hc_head",
    slot="residual_mixer.head",
    flags={FLAG},
    precedence=25,
    scope="model",
    params=(HC_MULT, HC_LOWRANK),
    # hyper_connection_mixer (use_combine=False): n h -> r -> n h, then the weighted mean of the streams.
    formula=2 * s * 2 * n * h * r,
    weights=n * h + 2 * n * h * r,
    summary="after the last layer: the low-rank mixer (n h -> r -> n h) collapsing the n streams to one",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [LOWRANK_HC, LOWRANK_HC_HEAD]
