"""The ``eager`` convention the recorded-forward tests count with: transformers' eager attention
computes every (query, key) pair of the rectangle and masks afterwards, which is what torch's
FlopCounterMode sees. Each test adds the other masks and indexers its family's eager path runs."""

from __future__ import annotations

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.patterns.block_sparse import BLOCK_INDEXER
from flopsreg.patterns.dsa_indexer import DSA_INDEXER, DSA_INDEXER_FROM_HIDDEN, p_idx

EAGER = flopsreg.Convention(name="eager", summary="full s x s scores", reference="transformers eager attention")
RECTANGLE = flopsreg.Pattern(
    name="eager_rectangle",
    slot="attention.mask",
    flags={EAGER.name},
    precedence=1000,
    produces="pairs",
    formula=s**2,
    summary="every (query, key) pair is computed, then masked",
    reference="transformers eager_attention_forward",
)

# DeepseekV32Indexer.forward (and the indexers built on it) scores every (query, key) pair, then masks.
DSA_INDEXER_RECTANGLE = flopsreg.Pattern(
    name="eager_indexer", slot="attention.topk_indexer", flags={EAGER.name, *DSA_INDEXER.flags}, precedence=1000,
    params=DSA_INDEXER.params, formula=DSA_INDEXER.formula.xreplace({p_idx: s**2}),
    summary="the indexer scores every (query, key) pair, then masks", reference="DeepseekV32Indexer.forward",
)

# MistralLarge4TextIndexer.forward: the same, its queries from the hidden state.
DSA_INDEXER_FROM_HIDDEN_RECTANGLE = flopsreg.Pattern(
    name="eager_indexer_from_hidden", slot="attention.topk_indexer", flags={EAGER.name, *DSA_INDEXER_FROM_HIDDEN.flags},
    precedence=1001, params=DSA_INDEXER_FROM_HIDDEN.params, formula=DSA_INDEXER_FROM_HIDDEN.formula.xreplace({p_idx: s**2}),
    summary="the same with its queries from the hidden state", reference="MistralLarge4TextIndexer.forward",
)

# MiniMaxM3VLIndexer.forward scores every (query, key) pair, masks the future, then max-pools blocks.
BLOCK_INDEXER_RECTANGLE = flopsreg.Pattern(
    name="eager_block_indexer", slot="attention.topk_indexer", flags={EAGER.name, *BLOCK_INDEXER.flags}, precedence=1001,
    params=BLOCK_INDEXER.params, formula=BLOCK_INDEXER.formula.xreplace({p_idx: s**2}),
    summary="the block indexer scores every (query, key) pair, then masks", reference="MiniMaxM3VLIndexer.forward",
)


class _EagerPlugin:
    def __init__(self, patterns: list[flopsreg.Pattern]) -> None:
        self._patterns = patterns

    @flopsreg.hookimpl
    def flopsreg_register_conventions(self):
        return [EAGER]

    @flopsreg.hookimpl
    def flopsreg_register_patterns(self):
        return self._patterns


def eager_registry(*patterns: flopsreg.Pattern) -> flopsreg.Registry:
    """The built-ins and the ``eager`` convention: the full rectangle, and *patterns*."""
    return flopsreg.Registry(plugins=[_EagerPlugin([RECTANGLE, *patterns])], load_entry_points=False)
