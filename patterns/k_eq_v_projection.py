"""Keys equal to values (Gemma 4 ``attention_k_eq_v``): one key projection whose output also
serves as the value, so the layer has no value projection."""

from flopsreg.patterns.gqa_projection import HEAD_DIM, KV_HEADS, d_h, n_kv
from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Pattern, h, hookimpl, s

K_EQ_V_PROJECTION = Pattern(
    name="k_eq_v_projection",
    slot="attention.projection",
    flags={"k_eq_v"},
    precedence=42,
    params=(KV_HEADS, HEAD_DIM),
    formula=2 * s * h * n_kv * d_h,
    provides={"qk_dim": d_h, "v_dim": d_h},
    weights=h * n_kv * d_h,
    cache=2 * n_kv * d_h * kv_tokens,  # one projection, but the key (normed) and the value are cached apart
    summary="K: hidden -> kv_heads x head_dim; V is the same tensor (no v_proj); the core uses head_dim for both",
    reference="Google 2026, Gemma 4; transformers models/gemma4/modeling_gemma4.py Gemma4TextAttention (v_proj None when attention_k_eq_v on full layers)",
)


@hookimpl
def flopsreg_register_patterns():
    return [K_EQ_V_PROJECTION]
