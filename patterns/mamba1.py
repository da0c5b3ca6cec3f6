"""Mamba1's selective scan (Jamba, Mamba, Falcon-Mamba): in_proj, short conv, x_proj and dt_proj,
the per-channel selective recurrence (its recurrent minimum) and out_proj; no softmax attention in
its layers. Jamba's mixer holds RMSNorm weights on dt, B and C; Mamba's has no such norms and
Falcon-Mamba's are weightless (flag ``mamba1_no_norm_weights``), which changes parameters only.

transformers runs the recurrence as a scan (no chunked form), so the ``chunked_scan`` convention
counts it at its recurrent minimum too.
"""

import attrs

from flopsreg.patterns._mixer_common import VARIANT, short_conv
from flopsreg.patterns.mamba2 import STATE
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

PRECEDENCE = 50  # this mixer's own: see _mixer_common
FLAG = "mamba1"
REFERENCE = "Gu & Dao 2023, 'Mamba' (arXiv:2312.00752); transformers 5.24 modeling_jamba.py JambaMambaMixer"

INNER = Param(name="mamba_inner", latex="I", meaning="Mamba1 inner width (mamba_expand x hidden_size)")
DT_RANK = Param(name="mamba_dt_rank", latex="R", meaning="rank of Mamba1's time-step projection (mamba_dt_rank; auto: ceil(hidden / 16))")
PARAMS = (INNER, DT_RANK, STATE)
I, R, N = (p.symbol for p in PARAMS)  # noqa: E741 - the inner width, as the Mamba papers write it

PROJECTION = Pattern(
    name="mamba1_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * h * 2 * I + 2 * s * I * (R + 2 * N) + 2 * s * R * I,
    # in_proj, x_proj, dt_proj with its bias, and the RMSNorms of dt, B and C (Jamba)
    weights=h * 2 * I + I * (R + 2 * N) + R * I + I + R + 2 * N,
    summary="in_proj hidden -> x and gate z (I each); x_proj I -> dt rank R, B and C (N each); dt_proj R -> I",
    reference=REFERENCE,
)
NO_NORM_WEIGHTS = "mamba1_no_norm_weights"
PROJECTION_WITHOUT_NORM_WEIGHTS = attrs.evolve(
    PROJECTION,
    name="mamba1_projection_without_norm_weights",
    flags={FLAG, NO_NORM_WEIGHTS},
    precedence=PRECEDENCE + VARIANT,
    weights=h * 2 * I + I * (R + 2 * N) + R * I + I,  # in_proj, x_proj, dt_proj with its bias
    summary="in_proj, x_proj and dt_proj as Jamba's, without weights on dt, B and C (Mamba: no norms; Falcon-Mamba: weightless RMSNorms)",
    reference="transformers 5.24 modeling_mamba.py MambaMixer, modeling_falcon_mamba.py FalconMambaMixer (FalconMambaWeightlessRMSNorm)",
)
CORE = Pattern(
    name="mamba1_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(INNER, STATE),
    formula=4 * s * I * N,
    weights=I * N + I,  # A_log per channel and state, D per channel
    state=I * N,  # the recurrent state kept per sequence, whatever the context length
    summary="recurrent minimum per token and channel: the state update dt B x (N multiply-adds) and the readout h C (N)",
    reference=REFERENCE + "; h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t, y_t = C_t h_t + D x_t",
)
OUTPUT = Pattern(
    name="mamba1_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(INNER,),
    formula=2 * s * I * h,
    weights=I * h,
    summary="out_proj: inner width I -> hidden (the z gate before it is elementwise)",
    reference=REFERENCE,
)

PATTERNS = [
    PROJECTION,
    PROJECTION_WITHOUT_NORM_WEIGHTS,
    *short_conv(FLAG, "Mamba1", I, (INNER,), bias=True, reference=REFERENCE, precedence=PRECEDENCE),
    CORE,
    OUTPUT,
]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a Mamba1 layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
