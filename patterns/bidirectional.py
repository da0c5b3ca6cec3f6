"""Bidirectional attention in one pass: every query sees every key of the sequence.

After a cached prefix the pairs of new queries are not the difference F(c + s) - F(c) of a
query-local mask (earlier queries would see the new keys too); the model that uses it here
(CPM-Ant) has no cached-prefix form for another reason (its layers run over a prepended prompt).
"""

from flopsreg.plugin import Pattern, hookimpl, s

BIDIRECTIONAL = Pattern(
    name="bidirectional",
    slot="attention.mask",
    flags={"bidirectional"},
    precedence=13,
    produces="pairs",
    formula=s**2,
    provides={"kv_tokens": s},
    summary="no mask: each of s queries sees all s keys, s^2 pairs per sequence",
    reference="Hugging Face CpmAntModel._prepare_attention_mask (transformers 5.24): context is all ones, so every pair attends",
)


@hookimpl
def flopsreg_register_patterns():
    return [BIDIRECTIONAL]
