"""Gated DeltaNet-2 (Megatron-LM ``experimental_attention_variant gdn2``): Gated DeltaNet with
channel-wise decay, erase and write gates, on a layer flagged ``gated_deltanet`` and
``gated_deltanet2``.

    S_t = (I - k_t (b_t * k_t)^T) Diag(exp(g_t)) S_{t-1} + k_t (w_t * v_t)^T,   o_t = S_t^T q_t

Its in_proj adds the decay f and the erase gate b (H_k d_k each) and the write gate w (H_v d_v)
to q, k, v and the output gate z; the convolution and out_proj are Gated DeltaNet's. The
recurrent minimum is Gated DeltaNet's: (b * k)^T S, one rank-1 update k (w * v - u)^T and the
readout S^T q, d_k d_v multiply-adds each per token and value head; the gates and the diagonal
decay are elementwise.
"""

from flopsreg.patterns._mixer_common import CHUNKS, PADDED_LATEX, SCAN_CHUNK, VARIANT, Q
from flopsreg.patterns.gated_deltanet import FLAG as GATED_DELTANET
from flopsreg.patterns.gated_deltanet import KEY_DIM, KEY_HEADS, PARAMS, VALUE_DIM, VALUE_HEADS
from flopsreg.plugin import Pattern, h, hookimpl, s

FLAG = "gated_deltanet2"
PRECEDENCE = 15  # above Gated DeltaNet's own (10), below the other mixers'
REFERENCE = (
    "Megatron-LM megatron/core/ssm/gated_delta_net/gdn2.py GatedDeltaNet2 @ d98e8a64ddf3 "
    "('Gated DeltaNet-2: Decoupling Erase and Write in Linear Attention', github.com/NVlabs/GatedDeltaNet-2)"
)
H_k, H_v, d_k, d_v = (p.symbol for p in PARAMS)
GATE_WEIGHTS = H_k + H_k * d_k  # A_log per key head, dt_bias per key channel

PROJECTION = Pattern(
    name="gated_deltanet2_projection",
    slot="mixer.projection",
    flags={GATED_DELTANET, FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * h * (4 * H_k * d_k + 3 * H_v * d_v),
    weights=h * (4 * H_k * d_k + 3 * H_v * d_v),
    latex=r"2 s h \left(4 n_{\mathrm{gk}} d_{\mathrm{gk}} + 3 n_{\mathrm{gv}} d_{\mathrm{gv}}\right)",
    summary="in_proj: q, k, decay f and erase gate b (H_k d_k each), v, output gate z and write gate w (H_v d_v each)",
    reference=REFERENCE,
)
CORE = Pattern(
    name="gated_deltanet2_core",
    slot="mixer.core",
    flags={GATED_DELTANET, FLAG},
    precedence=PRECEDENCE,
    params=(KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM),
    formula=6 * s * H_v * d_k * d_v,
    weights=GATE_WEIGHTS,
    state=H_v * d_k * d_v,  # the recurrent state kept per sequence, whatever the context length
    summary="recurrent minimum per token and value head: (b k)^T S, the rank-1 update k (w v - u)^T and the readout S^T q, d_k d_v multiply-adds each",
    reference=REFERENCE + "; the recurrence in the GatedDeltaNet2 docstring",
)
CHUNKED_CORE = Pattern(
    name="gated_deltanet2_chunked_core",
    slot="mixer.core",
    flags={GATED_DELTANET, FLAG, "chunked_scan"},
    precedence=PRECEDENCE + VARIANT,
    params=(KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM, SCAN_CHUNK),
    formula=2 * H_v * CHUNKS * Q * (3 * Q * d_k + 2 * Q * d_v + 3 * d_k * d_v) + H_v * CHUNKS * (Q - 1) * Q * (2 * Q - 1) / 3,
    weights=GATE_WEIGHTS,
    state=H_v * d_k * d_v,  # the recurrent state kept per sequence, whatever the context length
    latex=r"2 n_{\mathrm{gv}} L \left(3 Q d_{\mathrm{gk}} + 2 Q d_{\mathrm{gv}} + 3 d_{\mathrm{gk}} d_{\mathrm{gv}}\right) + n_{\mathrm{gv}} \frac{L}{Q} \frac{(Q - 1) Q (2 Q - 1)}{3},\ " + PADDED_LATEX,
    summary="torch_chunk_gdn2 over s padded to chunks of Q: three Q x Q x d_k and two Q x Q x d_v products and three d_k x d_v ones per chunk, plus its forward substitution",
    reference=REFERENCE + " torch_chunk_gdn2 (the deterministic-mode kernel; row i of the substitution is i^2 multiply-adds)",
)


@hookimpl
def flopsreg_register_patterns():
    return [PROJECTION, CORE, CHUNKED_CORE]
