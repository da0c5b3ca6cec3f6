"""Bidirectional attention in one pass: every query sees every key of the sequence.

After a cached prefix the pairs of new queries are not the difference F(c + s) - F(c) of a
query-local mask: the cached tokens would see the new keys too, so their states change and a
cache of them is not one. A layer with this mask has no cached-prefix form (``no_prefix_form``).
"""

from flopsreg.plugin import Pattern, hookimpl, s

FULL_BIDIRECTIONAL = Pattern(
    name="full_bidirectional",
    slot="attention.mask",
    flags={"full_bidirectional"},
    precedence=13,
    produces="pairs",
    formula=s**2,
    provides={"kv_tokens": s},
    no_prefix_form="every query sees every key, so the cached tokens' states change with each new token: a bidirectional layer has no cached prefix",
    summary="no mask: each of s queries sees all s keys, s^2 pairs per sequence",
    reference="Hugging Face CpmAntModel._prepare_attention_mask (transformers 5.24): context is all ones, so every pair attends",
)


@hookimpl
def flopsreg_register_patterns():
    return [FULL_BIDIRECTIONAL]
