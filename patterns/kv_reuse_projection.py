"""Cross-layer key/value sharing (Gemma 3n/4 ``num_kv_shared_layers``): a layer that reuses an
earlier layer's keys and values has no key or value projection, but attends as usual."""

from flopsreg.patterns.gqa_projection import HEAD_DIM, d_h
from flopsreg.plugin import Pattern, hookimpl

KV_REUSE_PROJECTION = Pattern(
    name="kv_reuse_projection",
    slot="attention.projection",
    flags={"kv_reuse"},
    # Above k_eq_v (42): a reusing layer projects nothing whatever its own K/V would have been.
    precedence=45,
    params=(HEAD_DIM,),
    formula=0,
    provides={"qk_dim": d_h, "v_dim": d_h},
    weights=0,
    cache=0,  # the earlier layer holds the keys and values this one reads
    summary="no K or V projection: the keys and values of an earlier layer of the same type are reused",
    reference="Google 2026, Gemma 4; transformers models/gemma4/modeling_gemma4.py (kv_sharing_modes 'reuse': no k_proj, v_proj)",
)


@hookimpl
def flopsreg_register_patterns():
    return [KV_REUSE_PROJECTION]
