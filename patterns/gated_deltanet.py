"""Gated DeltaNet (Qwen3-Next, Qwen3.5, OLMo-Hybrid): projections, short conv, the delta-rule
recurrence (its recurrent minimum, or the chunked scan transformers' torch reference runs) and
the output projection; no softmax attention in its layers."""

from flopsreg.patterns._mixer_common import CHUNKS, PADDED_LATEX, SCAN_CHUNK, VARIANT, Q, short_conv
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

PRECEDENCE = 10  # this mixer's own: see _mixer_common
FLAG = "gated_deltanet"
REFERENCE = "Yang et al. 2024, 'Gated Delta Networks' (arXiv:2412.06464); transformers 5.24 modeling_qwen3_next.py GatedDeltaNet"

KEY_HEADS = Param(name="linear_key_heads", latex=r"n_{\mathrm{gk}}", meaning="Gated DeltaNet query/key heads (linear_num_key_heads)")
VALUE_HEADS = Param(name="linear_value_heads", latex=r"n_{\mathrm{gv}}", meaning="Gated DeltaNet value heads (linear_num_value_heads)")
KEY_DIM = Param(name="linear_key_head_dim", latex=r"d_{\mathrm{gk}}", meaning="Gated DeltaNet query/key head width (linear_key_head_dim)")
VALUE_DIM = Param(name="linear_value_head_dim", latex=r"d_{\mathrm{gv}}", meaning="Gated DeltaNet value head width (linear_value_head_dim)")
PARAMS = (KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM)
H_k, H_v, d_k, d_v = (p.symbol for p in PARAMS)

CONV_CHANNELS = 2 * H_k * d_k + H_v * d_v  # q, k and v are convolved; z, b and a are not

PROJECTION = Pattern(
    name="gated_deltanet_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * h * (2 * H_k * d_k + 2 * H_v * d_v + 2 * H_v),
    weights=h * (2 * H_k * d_k + 2 * H_v * d_v + 2 * H_v),
    latex=r"2 s h \left(2 n_{\mathrm{gk}} d_{\mathrm{gk}} + 2 n_{\mathrm{gv}} d_{\mathrm{gv}} + 2 n_{\mathrm{gv}}\right)",
    summary="q, k (H_k d_k each), v and the output gate z (H_v d_v each), beta and decay a (H_v each): fused or not, the same matmuls",
    reference=REFERENCE + " (in_proj_qkvz + in_proj_ba); modeling_qwen3_5.py (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a)",
)
CORE = Pattern(
    name="gated_deltanet_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(VALUE_HEADS, KEY_DIM, VALUE_DIM),
    formula=6 * s * H_v * d_k * d_v,
    weights=2 * H_v,  # A_log and dt_bias, one per value head
    state=H_v * d_k * d_v,  # the recurrent state kept per sequence, whatever the context length
    summary="recurrent minimum per token and value head: S^T k, the rank-1 update k (beta delta)^T and the readout S^T q, d_k d_v multiply-adds each",
    reference=REFERENCE + "; the recurrence S_t = a_t S_{t-1} + k_t (beta_t (v_t - a_t S_{t-1}^T k_t))^T, o_t = S_t^T q_t",
)
CHUNKED_CORE = Pattern(
    name="gated_deltanet_chunked_core",
    slot="mixer.core",
    flags={FLAG, "chunked_scan"},
    precedence=PRECEDENCE + VARIANT,
    params=(VALUE_HEADS, KEY_DIM, VALUE_DIM, SCAN_CHUNK),
    # per chunk: 2 Q^2 d_k + Q^2 d_v + 3 Q d_k d_v multiply-adds, and (Q - 1) Q (d_k + d_v) / 2 in the solves
    formula=2 * H_v * Q**2 * (2 * d_k + d_v) * CHUNKS + 6 * H_v * Q * d_k * d_v * CHUNKS + H_v * Q * (Q - 1) * (d_k + d_v) * CHUNKS,
    weights=2 * H_v,
    state=H_v * d_k * d_v,  # the recurrent state kept per sequence, whatever the context length
    latex=r"2 n_{\mathrm{gv}} L \left(2 Q d_{\mathrm{gk}} + Q d_{\mathrm{gv}} + 3 d_{\mathrm{gk}} d_{\mathrm{gv}}\right) + n_{\mathrm{gv}} L (Q - 1)(d_{\mathrm{gk}} + d_{\mathrm{gv}}),\ " + PADDED_LATEX,
    summary="torch_chunk_gated_delta_rule over s padded to chunks of Q: two Q x Q x d_k products, Q x Q x d_v and three d_k x d_v per chunk, plus its two triangular solves",
    reference="transformers 5.24 modeling_qwen3_next.py torch_chunk_gated_delta_rule; the solve_triangular term is invisible to torch's FlopCounterMode",
)
OUTPUT = Pattern(
    name="gated_deltanet_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(VALUE_HEADS, VALUE_DIM),
    formula=2 * s * H_v * d_v * h,
    weights=H_v * d_v * h + d_v,  # out_proj, and the gated RMSNorm's weight over one value head
    summary="out_proj: H_v d_v -> hidden (the z-gated RMSNorm before it is elementwise)",
    reference=REFERENCE,
)

PATTERNS = [
    PROJECTION,
    *short_conv(FLAG, "Gated DeltaNet", CONV_CHANNELS, PARAMS, bias=False, reference=REFERENCE, precedence=PRECEDENCE),
    CORE,
    CHUNKED_CORE,
    OUTPUT,
]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a Gated DeltaNet layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
