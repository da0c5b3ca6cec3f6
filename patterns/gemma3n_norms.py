"""Norm weights Gemma 3n's layers hold beyond the shared patterns': a query norm alone on layers
that reuse keys and values (the RMSNorm after the per-layer projection is per_layer_input's own)."""

from flopsreg.patterns.kv_reuse_projection import KV_REUSE_PROJECTION
from flopsreg.patterns.norms import QK_NORM
from flopsreg.patterns.quantities import d_qk
from flopsreg.plugin import Pattern, hookimpl

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
    return [REUSED_KV_Q_NORM]
