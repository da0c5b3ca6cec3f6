"""Norm weights Gemma 3n's layers hold beyond the shared patterns': the RMSNorm after the
per-layer input's projection, and a query norm alone on layers that reuse keys and values."""

from flopsreg import Pattern, hookimpl
from flopsreg.patterns.norms import QK_NORM
from flopsreg.patterns.per_layer_input import PER_LAYER_INPUT
from flopsreg.patterns.kv_reuse_projection import KV_REUSE_PROJECTION
from flopsreg.patterns.quantities import d_qk
from flopsreg.symbols import h

PER_LAYER_INPUT_NORM = "per_layer_input_norm"

PER_LAYER_INPUT_NORMED = Pattern(
    name="per_layer_input_normed",
    slot="per_layer_input",
    flags=PER_LAYER_INPUT.flags | {PER_LAYER_INPUT_NORM},
    precedence=25,
    params=PER_LAYER_INPUT.params,
    formula=PER_LAYER_INPUT.formula,
    # per_layer_input_gate, per_layer_projection and post_per_layer_input_norm (h).
    weights=PER_LAYER_INPUT.weights + h,
    summary="per_layer_input, with the RMSNorm of width h after its projection (Gemma 3n post_per_layer_input_norm)",
    reference="transformers models/gemma3n/modeling_gemma3n.py Gemma3nTextDecoderLayer.post_per_layer_input_norm",
)
REUSED_KV_Q_NORM = Pattern(
    name="reused_kv_q_norm",
    slot="attention.qk_norm",
    flags=QK_NORM.flags | KV_REUSE_PROJECTION.flags,
    precedence=13,
    formula=0,
    weights=d_qk,
    summary="a layer reusing keys and values has its query norm only: no k_norm (no FLOPs counted)",
    reference="transformers models/gemma3n/modeling_gemma3n.py Gemma3nTextAttention (k_norm only beside k_proj)",
)


@hookimpl
def flopsreg_register_patterns():
    return [PER_LAYER_INPUT_NORMED, REUSED_KV_Q_NORM]
