"""Shared transformer blocks (Zamba): one attention + MLP block whose weights several layers run.

The block reads the concatenation of the residual stream and the input embedding (2h wide): its
query, key and value projections take 2h inputs (flag ``concat_input``), its input RMSNorm is 2h
wide and the norm before its MLP h wide. Its weights are held once per copy (a reader sets the
layer kind's ``weight_copies``; FLOPs stay per use). Each use then projects the block's output
through a linear of its own (h -> h, flag ``shared_block_output``) into the next layer's input.
Stacks run again and again (HRM-Text's H and L stacks) are shared blocks too; the L stack starts
from a learned state (flag ``initial_state``: h weights at model level, no FLOPs).
"""

import sympy

from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS, d_h, n_kv
from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Constraint, Pattern, h, hookimpl, n_h, s

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
    return [CONCAT_QUERY, CONCAT_PROJECTION, CONCAT_NORMS, OUTPUT_LINEAR, INITIAL_STATE]
