"""Gated Delta Product (Megatron-LM's ``GatedDeltaProductMixer``): per token n Householder
delta steps on a Mamba-shaped state, then one readout; no softmax attention in its layers.

Shapes (``megatron/core/ssm/gated_delta_product.py`` at d98e8a64): H heads of value width P
(inner width I = H P), G groups of N key channels shared by the heads of a group, n =
``gdp_num_householder``. in_proj gives z (I), n values (n I), n keys (n G N), one query (G N),
n betas (n H) and one decay (H); the depthwise convolution (4 taps, no bias) runs over the
values, keys and query. Per token and head the state S (N x P) is decayed once, then each step
i does u = beta_i (v_i - S^T k_i) and S += k_i u^T, and the output is S^T q: 2n + 1 products of
N x P multiply-adds, (4n + 2) H N P FLOPs, the recurrent minimum (Gated DeltaNet's 6 H d_k d_v
at n = 1). out_proj maps I back to hidden after a z-gated RMSNorm (elementwise).
"""

import sympy

from flopsreg.patterns._mixer_common import short_conv
from flopsreg.patterns.mamba2 import GROUPS, HEAD_DIM, HEADS, STATE
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, s

PRECEDENCE = 70  # this mixer's own: see _mixer_common
FLAG = "gated_delta_product"
REFERENCE = (
    "Megatron-LM megatron/core/ssm/gated_delta_product.py @ d98e8a64 GatedDeltaProductMixer (in_proj zVKQba, conv1d "
    "over V K Q) and ops/gdp/chunk.py (keys, values and betas Householder-expanded, the decay on the first copy); "
    "Siems et al. 2025, 'DeltaProduct' (arXiv:2502.10297)"
)

HOUSEHOLDER = Param(
    name="householder",
    latex=r"n_{\mathrm{hh}}",
    meaning="Householder (delta) steps per token of a Gated Delta Product layer (gdp_num_householder)",
)
PARAMS = (HEADS, HEAD_DIM, STATE, GROUPS, HOUSEHOLDER)
H_m, P, N, G, n = (p.symbol for p in PARAMS)
I = H_m * P  # noqa: E741 - the inner width
IN_PROJ = (1 + n) * (I + G * N + H_m)  # z and n values; n keys and a query; n betas and a decay
CONV_CHANNELS = n * I + (1 + n) * G * N  # the values, keys and query

GROUPS_DIVIDE = Constraint(condition=sympy.Eq(sympy.Mod(H_m, G), 0), message="mamba_heads must be a multiple of mamba_groups")

PATTERNS = [
    Pattern(
        name="gated_delta_product_projection",
        slot="mixer.projection",
        flags={FLAG},
        precedence=PRECEDENCE,
        params=PARAMS,
        constraints=(GROUPS_DIVIDE,),
        formula=2 * s * h * IN_PROJ,
        weights=h * IN_PROJ,
        summary="in_proj: hidden -> z (I), n values (n I), n keys and a query ((n + 1) G N), n betas and a decay ((n + 1) H)",
        reference=REFERENCE,
    ),
    *short_conv(FLAG, "Gated Delta Product", CONV_CHANNELS, PARAMS, bias=False, reference=REFERENCE, precedence=PRECEDENCE),
    Pattern(
        name="gated_delta_product_core",
        slot="mixer.core",
        flags={FLAG},
        precedence=PRECEDENCE,
        params=PARAMS,
        formula=(4 * n + 2) * s * H_m * N * P,
        weights=2 * H_m,  # A_log and dt_bias, one per head
        state=H_m * N * P,  # the recurrent state kept per sequence, whatever the context length
        summary="recurrent minimum per token and head: n steps of S^T k and k u^T, then S^T q (2n + 1 products of N x P)",
        reference=REFERENCE,
    ),
    Pattern(
        name="gated_delta_product_output",
        slot="mixer.output",
        flags={FLAG},
        precedence=PRECEDENCE,
        params=(HEADS, HEAD_DIM),
        formula=2 * s * I * h,
        weights=I * h + I,  # out_proj, and the gated RMSNorm's weight
        summary="out_proj: inner width I = H P -> hidden (the z-gated RMSNorm before it is elementwise)",
        reference=REFERENCE,
    ),
]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a Gated Delta Product layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
