"""xLSTM's mLSTM layer (transformers' ``xlstm``, xLSTM 7B) as a token mixer of the ``mixer`` slots.

Per head a matrix memory C (d_k x d_v) and a normaliser n (d_k): with scalar input and forget
gates i_t, f_t (exponential and sigmoid, stabilised by a running maximum: elementwise),
C_t = f_t C_{t-1} + i_t k_t v_t^T, n_t = f_t n_{t-1} + i_t k_t, and the output
h_t = C_t^T q_t / max(|n_t . q_t|, e^(-m_t)). Its recurrent minimum per token and head: the rank-1
update (d_k d_v multiply-adds), the normaliser's update (d_k), the readout (d_k d_v) and the
normaliser's dot product (d_k). The chunkwise form transformers' inference mode runs is the
convention ``chunked_scan``: see CHUNKED_CORE.
"""

import sympy

from flopsreg.patterns._mixer_common import SCAN_CHUNK, VARIANT, Q
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

FLAG = "mlstm"
PRECEDENCE = 95  # this mixer's own: see _mixer_common
REFERENCE = "Beck et al. 2025, 'xLSTM 7B' (arXiv:2503.13427); transformers 5.24 modeling_xlstm.py xLSTMLayer"

HEADS = Param(name="mlstm_heads", latex=r"n_{\mathrm{x}}", meaning="mLSTM heads (num_heads)")
QK_DIM = Param(name="mlstm_qk_dim", latex=r"d_{k}", meaning="mLSTM query and key width per head (int(hidden x qk_dim_factor) / heads)")
V_DIM = Param(name="mlstm_v_dim", latex=r"d_{v}", meaning="mLSTM value width per head (int(hidden x v_dim_factor) / heads)")
PIECE = Param(name="mlstm_piece", latex="M", meaning="tokens per piece of transformers' inference loop (max_inference_chunksize)")
PARAMS = (HEADS, QK_DIM, V_DIM)
H, d_k, d_v, M = HEADS.symbol, QK_DIM.symbol, V_DIM.symbol, PIECE.symbol

PROJECTION = Pattern(
    name="mlstm_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * h * (2 * H * d_k + 2 * H * d_v + 2 * H),
    weights=h * (2 * H * d_k + 2 * H * d_v + 2 * H) + 2 * H,  # the gates' biases
    summary="q, k (H d_k each), v and the output gate (H d_v each), input and forget gates (H each, with biases)",
    reference=REFERENCE + " (q, k, v, ogate_preact, igate_preact, fgate_preact; or qkv_opreact, ifgate_preact fused)",
)
CORE = Pattern(
    name="mlstm_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=4 * s * H * d_k * (d_v + 1),
    weights=0,
    state=H * (d_k * d_v + d_k + 1),  # C, n and the stabiliser m per head
    summary="recurrent minimum per token and head: C += i k v^T and n += i k, then C^T q and n . q",
    reference=REFERENCE + " mlstm_recurrent_step_native",
)


PIECES = sympy.floor(s / M)
CHUNKS_RUN = PIECES * sympy.floor(M / Q) + sympy.floor((s - PIECES * M) / Q)
"""Chunks the chunkwise kernel runs: floor(n / Q) in each piece of n tokens (xLSTMModel.forward
cuts the sequence into pieces of M, wrap_chunkwise_arbitrary_sequence_length each piece into chunks
of Q); the tokens left in each piece, s - Q CHUNKS_RUN in all, run one at a time."""


CHUNKED_CORE = Pattern(
    name="mlstm_chunked_core",
    slot="mixer.core",
    flags={FLAG, "chunked_scan"},
    precedence=PRECEDENCE + VARIANT,
    params=(*PARAMS, SCAN_CHUNK, PIECE),
    # per chunk: K~^T V and K~^T 1 into the states (Q d_k d_v + Q d_k), Q K^T, M V and M 1 within
    # the chunk (Q^2 (d_k + d_v + 1)), Q~ C and Q~ n from the states (Q d_k d_v + Q d_k); per step
    # token 2 d_k (d_v + 1), as the recurrence. So: the recurrent minimum of every token, plus the
    # chunks' quadratic part Q^2 (d_k + d_v + 1) each.
    formula=4 * s * H * d_k * (d_v + 1) + 2 * H * Q**2 * (d_k + d_v + 1) * CHUNKS_RUN,
    latex=r"4 s n_{\mathrm{x}} d_{k} (d_{v} + 1) + 2 n_{\mathrm{x}} Q^{2} (d_{k} + d_{v} + 1)\, c,\ "
          r"c = \left\lfloor s/M \right\rfloor \left\lfloor M/Q \right\rfloor + \left\lfloor (s \bmod M)/Q \right\rfloor",
    weights=0,
    state=H * (d_k * d_v + d_k + 1),
    summary="the inference path: pieces of M tokens, each in floor(n/Q) chunks of Q (states, then every chunk's output) and its last n mod Q tokens stepwise",
    reference=REFERENCE + " mlstm_chunkwise_fw, mlstm_recurrent_sequence_native, wrap_chunkwise_arbitrary_sequence_length; xLSTMModel.forward",
)
OUTPUT = Pattern(
    name="mlstm_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=PARAMS,
    formula=2 * s * H * d_v * h,
    weights=H * d_v * h + H * d_v,  # out_proj, and the per-head LayerNorm's weight before it
    summary="out_proj: H d_v -> hidden, after the per-head LayerNorm and the output gate (elementwise)",
    reference=REFERENCE + " xLSTMLayer.out_proj, multihead_norm",
)


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "an xLSTM block's mLSTM layer runs instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return [PROJECTION, CORE, CHUNKED_CORE, OUTPUT]
