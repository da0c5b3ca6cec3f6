"""Kimi Delta Attention (Kimi Linear): q/k/v, per-channel forget gate, beta and output-gate
projections, short conv, the delta-rule recurrence with a per-channel decay (its recurrent
minimum, or the chunked scan transformers' torch reference runs) and o_proj; no softmax
attention in its layers.

Recurrent minimum, per token and head with a d x d state S (d_k = d_v = d):
the decay S' = Diag(alpha_t) S scales rows (elementwise, d^2 multiplies, no sums: not counted, as
Gated DeltaNet's scalar decay); the delta rule reads u = S'^T k (d^2 multiply-adds), then
S = S' + k (beta (v - u))^T (d^2); the readout o = S^T q (d^2). 3 d^2 multiply-adds: 6 d^2 FLOPs.
"""

from flopsreg.patterns._mixer_common import CHUNKS, PADDED_LATEX, SCAN_CHUNK, VARIANT, Q, short_conv
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

PRECEDENCE = 20  # this mixer's own: see _mixer_common
FLAG = "kda"
REFERENCE = "Kimi Team 2025, 'Kimi Linear' (arXiv:2510.26692); transformers 5.24 modeling_kimi_linear.py KimiDeltaAttention"

HEADS = Param(name="kda_heads", latex=r"n_{\mathrm{kda}}", meaning="KDA heads (linear_attn_config.num_heads)")
HEAD_DIM = Param(name="kda_head_dim", latex=r"d_{\mathrm{kda}}", meaning="KDA head width (keys and values alike; linear_attn_config.head_dim)")
PARAMS = (HEADS, HEAD_DIM)
H, d = HEADS.symbol, HEAD_DIM.symbol

PROJECTION = Pattern(
    name="kda_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * (h * (3 * H * d + 2 * d + H) + 2 * d * H * d),
    weights=h * (3 * H * d + 2 * d + H) + 2 * d * H * d,
    latex=r"2 s \left(h (3 n_{\mathrm{kda}} d_{\mathrm{kda}} + 2 d_{\mathrm{kda}} + n_{\mathrm{kda}}) + 2 n_{\mathrm{kda}} d_{\mathrm{kda}}^{2}\right)",
    summary="q, k, v (H d each); forget gate f_a (hidden -> d) and f_b (d -> H d); beta b_proj (H); output gate g_a, g_b (as f)",
    reference=REFERENCE,
)
FULL_RANK_GATES = "kda_full_rank_gates"
FULL_RANK_PROJECTION = Pattern(
    name="kda_full_rank_projection",
    slot="mixer.projection",
    flags={FLAG, FULL_RANK_GATES},
    precedence=PRECEDENCE + 1,  # above kda_projection where both apply
    params=PARAMS,
    formula=2 * s * h * (5 * H * d + H),
    weights=h * (5 * H * d + H),
    summary="q, k, v, forget gate f_proj and output gate g_proj (hidden -> H d each, full rank); beta b_proj (H)",
    reference="transformers 5.24 modeling_bailing_hybrid.py BailingHybridDeltaAttention and BailingHybridForgetGate (Ling 3.0)",
)
CORE = Pattern(
    name="kda_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=6 * s * H * d * d,
    weights=H * d + H,  # the forget gate's dt_bias (per channel) and A_log (per head)
    state=H * d * d,  # the recurrent state kept per sequence, whatever the context length
    summary="recurrent minimum per token and head: S^T k, the rank-1 delta update and the readout S^T q, d^2 multiply-adds each (the per-channel decay is elementwise)",
    reference=REFERENCE + "; S_t = (I - beta_t k_t k_t^T) Diag(alpha_t) S_{t-1} + beta_t k_t v_t^T, o_t = S_t^T q_t",
)
CHUNKED_CORE = Pattern(
    name="kda_chunked_core",
    slot="mixer.core",
    flags={FLAG, "chunked_scan"},
    precedence=PRECEDENCE + VARIANT,
    params=(*PARAMS, SCAN_CHUNK),
    # per chunk: 5 Q^2 d + 3 Q d^2 multiply-adds (matmuls 3 Q^2 d + 3 Q d^2, mul-sums 2 Q^2 d) and the substitution's (Q - 1) Q (2Q - 1) / 6
    formula=2 * H * d * Q * (5 * Q + 3 * d) * CHUNKS + H * Q * (Q - 1) * (2 * Q - 1) * CHUNKS / 3,
    weights=H * d + H,
    state=H * d * d,  # the recurrent state kept per sequence, whatever the context length
    latex=r"2 n_{\mathrm{kda}} L (3 Q d_{\mathrm{kda}} + 3 d_{\mathrm{kda}}^{2}) + 4 n_{\mathrm{kda}} L Q d_{\mathrm{kda}} + \frac{n_{\mathrm{kda}} L}{Q} \frac{(Q - 1) Q (2 Q - 1)}{3},\ " + PADDED_LATEX,
    summary="chunk_kimi_delta_attention over s padded to chunks of Q: its matmuls, the decay-weighted A_kk and A_qk contractions and the forward substitution",
    reference="transformers 5.24 modeling_kimi_linear.py chunk_kimi_delta_attention; the A_kk/A_qk mul-sums and the substitution loop are invisible to torch's FlopCounterMode",
)
OUTPUT = Pattern(
    name="kda_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * H * d * h,
    weights=H * d * h + d,
    summary="o_proj: H d -> hidden (the gated RMSNorm before it is elementwise)",
    reference=REFERENCE,
)

PATTERNS = [
    PROJECTION,
    FULL_RANK_PROJECTION,
    *short_conv(FLAG, "KDA", 3 * H * d, PARAMS, bias=False, reference=REFERENCE, precedence=PRECEDENCE),
    CORE,
    CHUNKED_CORE,
    OUTPUT,
]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a KDA layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
