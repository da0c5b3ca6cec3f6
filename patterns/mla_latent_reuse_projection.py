"""MLA key/value projections of a layer reusing an earlier layer's latent (Mistral Large 4's
``kv_source_layers``): no down-projection, the up-projection to every head still runs."""

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
from flopsreg.plugin import Pattern, hookimpl, n_h, s

MLA_LATENT_REUSE_PROJECTION = Pattern(
    name="mla_latent_reuse_projection",
    slot="attention.projection",
    flags={"mla", "kv_reuse"},
    # Above kv_reuse_projection (45, no MLA) and mla_absorbed_projection (35).
    precedence=50,
    params=(KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM),
    formula=2 * s * r_kv * n_h * (d_nope + d_vh),
    provides={"qk_dim": d_nope + d_rope, "v_dim": d_vh},
    weights=r_kv * n_h * (d_nope + d_vh),
    cache=0,  # the earlier layer holds the latent this one reads
    summary="an earlier layer's latent and rope key reused: only r_kv -> heads x (d_nope + d_v)",
    reference=(
        "Mistral AI 2026, Mistral Large 4; transformers models/mistral_large4/modeling_mistral_large4.py "
        "MistralLarge4TextAttention (kv_source_layers: no kv_a_proj_with_mqa on sharing layers)"
    ),
)


@hookimpl
def flopsreg_register_patterns():
    return [MLA_LATENT_REUSE_PROJECTION]
