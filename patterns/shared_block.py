"""Shared transformer blocks (Zamba): one attention + MLP block whose weights several layers run.

The block reads the concatenation of the residual stream and the input embedding (2h wide): its
query, key and value projections take 2h inputs (flag ``concat_input``), its input RMSNorm is 2h
wide and the norm before its MLP h wide. Its weights are held once per copy (a reader sets the
layer kind's ``weight_copies``; FLOPs stay per use). Each use then projects the block's output
through a linear of its own (h -> h, flag ``shared_block_output``) into the next layer's input.
Stacks run again and again (HRM-Text's H and L stacks) are shared blocks too; the L stack starts
from a learned state (flag ``initial_state``: h weights at model level, no FLOPs).
Zamba2's blocks add low-rank adapters of each use's own (slot ``shared_block.adapters``): on the
MLP's fused gate and up projection always, on q, k and v with ``use_shared_attention_adapter``.
"""

import sympy

from flopsreg.patterns.dense_mlp import FFN_HIDDEN
from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS, d_h, n_kv
from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Constraint, Param, Pattern, h, hookimpl, n_h, s

CONCAT_INPUT = "concat_input"
OUTPUT = "shared_block_output"
PRECEDENCE = 60  # above every other attention projection and norm layout: the flag is the block's own
REFERENCE = "Glorioso et al. 2024, 'Zamba' (arXiv:2405.16712), fig. 2; transformers 5.24 modeling_zamba.py ZambaAttentionDecoderLayer"

CONCAT_QUERY = Pattern(
    name="concat_input_query",
    slot="attention.query",
    flags={CONCAT_INPUT},
    precedence=PRECEDENCE,
    formula=2 * s * 2 * h * n_h * d_qk,
    weights=2 * h * n_h * d_qk,
    summary="Q from the concatenated input [residual, embedding]: 2h -> heads x qk width",
    reference=REFERENCE,
)
CONCAT_PROJECTION = Pattern(
    name="concat_input_projection",
    slot="attention.projection",
    flags={CONCAT_INPUT},
    precedence=PRECEDENCE,
    params=(KV_HEADS, HEAD_DIM),
    formula=2 * s * 2 * h * 2 * n_kv * d_h,
    weights=2 * h * 2 * n_kv * d_h,
    provides={"qk_dim": d_h, "v_dim": d_h},
    constraints=(Constraint(condition=sympy.Eq(sympy.Mod(n_h, n_kv), 0), message="heads must be a multiple of kv_heads"),),
    summary="K and V from the concatenated input: 2h -> kv_heads x head_dim each",
    reference=REFERENCE,
)
CONCAT_NORMS = Pattern(
    name="concat_input_norms",
    slot="norms",
    flags={"norms", CONCAT_INPUT},
    precedence=PRECEDENCE,
    formula=0,
    weights=3 * h,
    summary="an RMSNorm of width 2h on the concatenated input and one of width h before the MLP (no FLOPs counted)",
    reference=REFERENCE + " input_layernorm, pre_ff_layernorm",
)
OUTPUT_LINEAR = Pattern(
    name="shared_block_output",
    slot="shared_block.output",
    flags={OUTPUT},
    precedence=10,
    formula=2 * s * h * h,
    weights=h * h,
    summary="each use's own linear h -> h on the shared block's output, added to the next mixer's input",
    reference="transformers 5.24 modeling_zamba.py ZambaHybridLayer.linear",
)

ADAPTERS = "shared_block_adapters"
ATTENTION_ADAPTERS = "shared_block_attention_adapters"
ADAPTER_RANK = Param(name="adapter_rank", latex="r", meaning="rank of a shared block's per-use low-rank adapters (adapter_rank)")
ZAMBA2 = "transformers 5.24 modeling_zamba2.py Zamba2MLP.gate_up_proj_adapter_list"
r, F = ADAPTER_RANK.symbol, FFN_HIDDEN.symbol
MLP_ADAPTER_MACS = h * r + r * 2 * F  # h -> r -> 2F, added to the fused gate and up projection
QKV_ADAPTER_MACS = 3 * (2 * h * r + r * 2 * h)  # 2h -> r -> 2h, added to each of q, k and v

MLP_ADAPTER = Pattern(
    name="shared_block_mlp_adapter",
    slot="shared_block.adapters",
    flags={ADAPTERS},
    precedence=10,
    params=(ADAPTER_RANK, FFN_HIDDEN),
    formula=2 * s * MLP_ADAPTER_MACS,
    weights=MLP_ADAPTER_MACS,
    summary="each use's own low-rank adapter h -> r -> 2F on the shared block's gate and up projection",
    reference=ZAMBA2,
)
QKV_ADAPTERS = Pattern(
    name="shared_block_qkv_adapters",
    slot="shared_block.adapters",
    flags={ADAPTERS, ATTENTION_ADAPTERS},
    precedence=20,
    params=(ADAPTER_RANK, FFN_HIDDEN),
    formula=2 * s * (MLP_ADAPTER_MACS + QKV_ADAPTER_MACS),
    weights=MLP_ADAPTER_MACS + QKV_ADAPTER_MACS,
    summary="each use's own low-rank adapters: h -> r -> 2F on the MLP's gate and up, 2h -> r -> 2h on each of q, k and v",
    reference=ZAMBA2 + ", Zamba2Attention.linear_q_adapter_list (k, v)",
)

INITIAL_STATE = Pattern(
    name="initial_state",
    slot="initial_state",
    flags={"initial_state"},
    precedence=10,
    scope="model",
    formula=0,
    weights=h,
    summary="a learned initial state of width h for a recurrent stack, broadcast over the positions (weights only)",
    reference="transformers 5.24 modeling_hrm_text.py HrmTextModel.z_L_init",
)


@hookimpl
def flopsreg_register_patterns():
    return [CONCAT_QUERY, CONCAT_PROJECTION, CONCAT_NORMS, MLP_ADAPTER, QKV_ADAPTERS, OUTPUT_LINEAR, INITIAL_STATE]
