"""Mamba2 / SSD (Nemotron-H, Falcon-H1, Granite 4.0-H): in_proj, short conv, the selective
state-space recurrence (its recurrent minimum, or the chunked SSD scan transformers' torch
fallback runs) and out_proj; no softmax attention in its layers (unless ``parallel_attention``)."""

import attrs
import sympy

from flopsreg.patterns._mixer_common import CHUNKS, PADDED_LATEX, SCAN_CHUNK, VARIANT, Q, short_conv
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, s

PRECEDENCE = 30  # this mixer's own: see _mixer_common
FLAG = "mamba2"
REFERENCE = "Dao & Gu 2024, 'Transformers are SSMs' (arXiv:2405.21060); transformers 5.24 modeling_nemotron_h.py NemotronHMamba2Mixer"

HEADS = Param(name="mamba_heads", latex=r"n_{\mathrm{m}}", meaning="Mamba2 heads (mamba_num_heads, mamba_n_heads)")
HEAD_DIM = Param(name="mamba_head_dim", latex=r"d_{\mathrm{m}}", meaning="Mamba2 head width; inner width I = heads x head width (mamba_head_dim, mamba_d_head)")
STATE = Param(name="mamba_state", latex="N", meaning="Mamba2 state size per head (ssm_state_size, mamba_d_state)")
GROUPS = Param(name="mamba_groups", latex="G", meaning="Mamba2 groups sharing B and C (n_groups, mamba_n_groups)")
PARAMS = (HEADS, HEAD_DIM, STATE, GROUPS)
H_m, P, N, G = (p.symbol for p in PARAMS)
I = H_m * P  # noqa: E741 - the inner width, as the Mamba2 papers write it

GROUPS_DIVIDE = Constraint(condition=sympy.Eq(sympy.Mod(H_m, G), 0), message="mamba_heads must be a multiple of mamba_groups")
CONV_CHANNELS = I + 2 * G * N  # x, B and C are convolved; z and dt are not

PROJECTION = Pattern(
    name="mamba2_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    constraints=(GROUPS_DIVIDE,),
    formula=2 * s * h * (2 * I + 2 * G * N + H_m),
    weights=h * (2 * I + 2 * G * N + H_m),
    latex=r"2 s h \left(2 n_{\mathrm{m}} d_{\mathrm{m}} + 2 G N + n_{\mathrm{m}}\right)",
    summary="in_proj: hidden -> gate z and x (I = H_m P each), B and C (G N each), dt (H_m)",
    reference=REFERENCE,
)
CORE = Pattern(
    name="mamba2_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(HEADS, HEAD_DIM, STATE),
    formula=4 * s * H_m * P * N,
    weights=3 * H_m,  # A_log, D and dt_bias, one per head
    state=H_m * P * N,  # the recurrent state kept per sequence, whatever the context length
    summary="recurrent minimum per token and head: the state update dt x B^T (P N multiply-adds) and the readout h C (P N)",
    reference=REFERENCE + "; h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T, y_t = h_t C_t + D x_t",
)
CHUNKED_CORE = Pattern(
    name="mamba2_chunked_core",
    slot="mixer.core",
    flags={FLAG, "chunked_scan"},
    precedence=PRECEDENCE + VARIANT,
    params=(HEADS, HEAD_DIM, STATE, SCAN_CHUNK),
    # per chunk: Q^2 (N + P) + 2 Q P N multiply-adds; (c + 1)^2 P N for the all-pairs inter-chunk einsum
    formula=2 * H_m * Q**2 * (N + P) * CHUNKS + 4 * H_m * Q * P * N * CHUNKS + 2 * H_m * P * N * (CHUNKS + 1) ** 2,
    weights=3 * H_m,
    state=H_m * P * N,  # the recurrent state kept per sequence, whatever the context length
    latex=r"2 n_{\mathrm{m}} \left(L Q (N + d_{\mathrm{m}}) + 2 L d_{\mathrm{m}} N + (L/Q + 1)^{2} d_{\mathrm{m}} N\right),\ " + PADDED_LATEX,
    summary="torch_chunk_scan over s padded to chunks of Q: C B^T and its product with x per chunk, chunk states, readout, and the all-pairs inter-chunk einsum",
    reference="transformers 5.24 modeling_nemotron_h.py NemotronHMamba2Mixer.torch_forward (segment_sum, the (c+1) x (c+1) inter-chunk einsum)",
)
OUTPUT = Pattern(
    name="mamba2_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(HEADS, HEAD_DIM),
    formula=2 * s * I * h,
    weights=I * h + I,  # out_proj, and the gated RMSNorm's weight over the inner width
    latex=r"2 s n_{\mathrm{m}} d_{\mathrm{m}} h",
    summary="out_proj: inner width I = H_m P -> hidden (the z-gated RMSNorm before it is elementwise)",
    reference=REFERENCE,
)

NO_NORM = "mamba2_no_norm"
OUTPUT_WITHOUT_NORM = attrs.evolve(
    OUTPUT,
    name="mamba2_output_without_norm",
    flags={FLAG, NO_NORM},
    precedence=PRECEDENCE + VARIANT,
    weights=I * h,
    summary="out_proj: inner width I = H_m P -> hidden, with no gated RMSNorm before it (Falcon-H1 mamba_rms_norm false)",
)

PATTERNS = [
    PROJECTION,
    *short_conv(FLAG, "Mamba2", CONV_CHANNELS, PARAMS, bias=True, reference=REFERENCE, precedence=PRECEDENCE),
    CORE,
    CHUNKED_CORE,
    OUTPUT,
    OUTPUT_WITHOUT_NORM,
]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a Mamba2 layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
