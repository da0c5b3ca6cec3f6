"""MiniMax-01's lightning attention (MiniMax-Text-01 / M1 ``linear_attention`` layers): the fused
q/k/v projection, the sigmoid output gate, the linear-attention core (its recurrent minimum, or
the block algorithm transformers' torch path runs) and out_proj; no softmax attention in its layers.

Recurrent minimum, per token and head with a d x d state S (heads H = num_attention_heads, width
d = head_dim): S = lambda S (a scalar decay per head: elementwise, not counted) + k v^T (d^2
multiply-adds), then the readout o = S^T q (d^2). 2 d^2 multiply-adds: 4 d^2 FLOPs.
"""

import sympy

from flopsreg.patterns._mixer_common import VARIANT
from flopsreg.patterns.gqa_projection import HEAD_DIM
from flopsreg.patterns.token_mixers import selects_mixer
from flopsreg.plugin import Param, Pattern, h, hookimpl, n_h, s

PRECEDENCE = 60  # this mixer's own: see _mixer_common
FLAG = "lightning"
REFERENCE = "MiniMax 2025, 'MiniMax-01: Scaling Foundation Models with Lightning Attention' (arXiv:2501.08313); transformers 5.24 modeling_minimax.py MiniMaxLightningAttention"

BLOCK = Param(name="lightning_block", latex="B", meaning="tokens per lightning-attention block (block_size, 256 in MiniMaxConfig)")
d, B = HEAD_DIM.symbol, BLOCK.symbol

FULL_BLOCKS = sympy.floor(s / B)
BLOCK_SQUARES = FULL_BLOCKS * B**2 + (s - FULL_BLOCKS * B) ** 2
"""The sum of B_k^2 over the blocks of s tokens: floor(s/B) whole blocks and a last partial one (no padding)."""

PROJECTION = Pattern(
    name="lightning_projection",
    slot="mixer.projection",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(HEAD_DIM,),
    formula=2 * s * h * 4 * n_h * d,
    weights=4 * h * n_h * d,
    latex=r"2 s h \cdot 4 n_{\mathrm{h}} d_{\mathrm{h}}",
    summary="qkv_proj (hidden -> 3 H d, fused q, k, v) and output_gate (hidden -> H d), no biases",
    reference=REFERENCE,
)
CORE = Pattern(
    name="lightning_core",
    slot="mixer.core",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(HEAD_DIM,),
    formula=4 * s * n_h * d**2,
    state=n_h * d * d,  # S, d x d per head, kept per sequence whatever the context length
    summary="recurrent minimum per token and head: the rank-1 update k v^T and the readout S^T q, d^2 multiply-adds each (the decay is elementwise)",
    reference=REFERENCE + "; S_t = lambda_h S_{t-1} + k_t v_t^T, o_t = S_t^T q_t",
)
CHUNKED_CORE = Pattern(
    name="lightning_chunked_core",
    slot="mixer.core",
    flags={FLAG, "chunked_scan"},
    precedence=PRECEDENCE + VARIANT,
    params=(HEAD_DIM, BLOCK),
    # per block of B_k tokens and head: Q K^T and (Q K^T o decay) V, B_k^2 d each; (Q o decay) S and (K o decay)^T V, B_k d^2 each
    formula=4 * n_h * d * (BLOCK_SQUARES + s * d),
    state=n_h * d * d,
    latex=r"4 n_{\mathrm{h}} d_{\mathrm{h}} \left(\sum_{k} B_{k}^{2} + s\, d_{\mathrm{h}}\right),\ \sum_{k} B_{k}^{2} = \left\lfloor s/B \right\rfloor B^{2} + \left(s - \left\lfloor s/B \right\rfloor B\right)^{2}",
    summary="the block algorithm: per block the intra-block B_k x B_k scores and their product with V (every pair, decay-masked after), the inter-block Q S and the state update K^T V",
    reference="transformers 5.24 modeling_minimax.py MiniMaxLightningAttention.forward (blocks of block_size, the last one partial, no padding)",
)
OUTPUT = Pattern(
    name="lightning_output",
    slot="mixer.output",
    flags={FLAG},
    precedence=PRECEDENCE,
    params=(HEAD_DIM,),
    formula=2 * s * n_h * d * h,
    weights=n_h * d * h + n_h * d,  # out_proj, and the RMSNorm over H d before the gate
    summary="out_proj: H d -> hidden (the RMSNorm and the sigmoid gate before it are elementwise)",
    reference=REFERENCE,
)

PATTERNS = [PROJECTION, CORE, CHUNKED_CORE, OUTPUT]


@hookimpl
def flopsreg_register_group_selectors():
    return [selects_mixer({FLAG}, "a lightning attention layer runs its mixer instead of softmax attention")]


@hookimpl
def flopsreg_register_patterns():
    return PATTERNS
