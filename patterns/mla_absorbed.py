"""Multi-head latent attention in its absorbed form (FlashMLA, DSA): the core attends in the
latent, queries and outputs pass through the absorbed up-projections; chosen by ``mla_absorbed``."""

from flopsreg.patterns.mla_projection import (
    KV_LORA_RANK,
    QK_NOPE_HEAD_DIM,
    QK_ROPE_HEAD_DIM,
    V_HEAD_DIM,
    d_nope,
    d_rope,
    d_vh,
    r_kv,
)
from flopsreg.patterns.quantities import kv_tokens, pairs
from flopsreg.plugin import Pattern, h, hookimpl, n_h, s

_REFERENCE = (
    "DeepSeek-AI 2024, 'DeepSeek-V2' (arXiv:2405.04434), section 2.1.2 (absorbing W_UK into W_Q and "
    "W_UV into W_O); deepseek-ai/FlashMLA (MQA over the latent, head width 576 = 512 + 64, value 512)"
)

MLA_ABSORBED_PROJECTION = Pattern(
    name="mla_absorbed_projection",
    slot="attention.projection",
    flags={"mla", "mla_absorbed"},
    precedence=35,
    params=(KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM),
    # hidden -> latent + rope key once per token; per token and head the query's nope part into
    # the latent (W_UK) and the latent output back to the value width (W_UV).
    formula=2 * s * (h * (r_kv + d_rope) + n_h * d_nope * r_kv + n_h * r_kv * d_vh),
    # The query and output projections keep the head widths; the core below uses the latent's.
    provides={"qk_dim": d_nope + d_rope, "v_dim": d_vh},
    weights=h * (r_kv + d_rope) + r_kv * n_h * (d_nope + d_vh),
    cache=(r_kv + d_rope) * kv_tokens,  # the compressed latent and the shared rope key of every kept token
    summary="kv_a once per token, then per query W_UK (d_nope -> r_kv) and per output W_UV (r_kv -> d_v), each head",
    reference=_REFERENCE,
)

MLA_ABSORBED_CORE = Pattern(
    name="mla_absorbed_core",
    slot="attention.core",
    flags={"mla", "mla_absorbed"},
    precedence=20,
    params=(KV_LORA_RANK, QK_ROPE_HEAD_DIM),
    # QK^T over the latent plus the shared rope key (r_kv + d_rope), PV over the latent (r_kv).
    formula=2 * n_h * (2 * r_kv + d_rope) * pairs,
    weights=0,  # the core multiplies activations only
    summary="QK^T of width r_kv + d_rope and PV of width r_kv per head over the attended pairs (MQA in the latent)",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [MLA_ABSORBED_PROJECTION, MLA_ABSORBED_CORE]
