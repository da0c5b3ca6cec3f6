"""One key/value head that is both key and value (DeepSeek-V4's shared-KV MQA): a single
projection hidden -> head_dim and its RMSNorm, read by every query head."""

from flopsreg.patterns.gqa_projection import HEAD_DIM, d_h
from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Pattern, h, hookimpl, s

SHARED_KV_PROJECTION = Pattern(
    name="shared_kv_projection",
    slot="attention.projection",
    flags={"shared_kv"},
    precedence=44,
    params=(HEAD_DIM,),
    formula=2 * s * h * d_h,
    provides={"qk_dim": d_h, "v_dim": d_h},
    # kv_proj and the kv_norm scale of head_dim.
    weights=h * d_h + d_h,
    cache=d_h * kv_tokens,  # one head, key and value alike
    summary="kv_proj: hidden -> head_dim, one head serving as key and value of every query head",
    reference="DeepSeek-AI 2026, DeepSeek-V4; transformers models/deepseek_v4/modeling_deepseek_v4.py DeepseekV4Attention.kv_proj",
)


@hookimpl
def flopsreg_register_patterns():
    return [SHARED_KV_PROJECTION]
