"""Full causal attention: each query sees itself and every earlier key."""

from flopsreg.plugin import Pattern, hookimpl, s

FULL_CAUSAL = Pattern(
    name="full_causal",
    slot="attention.mask",
    precedence=10,
    produces="pairs",
    formula=s * (s + 1) / 2,
    provides={"kv_tokens": s},  # every key stays visible to later queries: all are kept
    summary="causal mask: query q sees keys 0..q, so s(s+1)/2 pairs per sequence",
    reference="Vaswani et al. 2017, 'Attention Is All You Need' (decoder self-attention mask)",
)


@hookimpl
def flopsreg_register_patterns():
    return [FULL_CAUSAL]
