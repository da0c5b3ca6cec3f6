"""Block-sparse attention (MiniMax-M3): a small indexer scores every causal (query, key) pair,
max-pools the scores over aligned blocks of B keys and keeps, per query, the top K blocks, its
own block and the L - 1 before it always among them (1 <= L <= K). Which blocks win depends on
the data, how many does not: query q (block b = floor(q/B)) keeps min(K, b + 1) blocks, all whole
but its own, of which it sees q - bB + 1 keys."""

import sympy

from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS, INDEX_PAIRS, d_idx, n_idx, p_idx
from flopsreg.plugin import Param, Pattern, h, hookimpl, s

FLAG, INDEXER_FLAG = "block_topk", "block_indexer"
BLOCK = Param(name="index_block", latex=r"B_{\mathrm{idx}}", meaning="keys per scored block of block-sparse attention (index_block_size)")
TOP_BLOCKS = Param(name="index_top_blocks", latex=r"K_{\mathrm{b}}", meaning="blocks each query keeps, its own included (index_topk_blocks)")
B, K = BLOCK.symbol, TOP_BLOCKS.symbol
_REFERENCE = "transformers models/minimax_m3_vl/modeling_minimax_m3_vl.py MiniMaxM3VLIndexer.forward and build_block_mask"

_WHOLE = sympy.floor(s / B)  # n: the blocks the s queries fill
_REST = s - B * _WHOLE  # m: queries in the last, partial block
_SATURATED = sympy.Min(_WHOLE, K)
# sum_q (q - bB + 1): each whole block's queries see 1..B keys of their own block, the rest 1..m;
# plus B keys for each earlier block kept, min(K - 1, b) of them for the queries of block b.
_EARLIER = _SATURATED * (_SATURATED - 1) / 2 + (_WHOLE - _SATURATED) * (K - 1)
BLOCK_TOPK = Pattern(
    name="block_topk",
    slot="attention.mask",
    flags={FLAG},
    precedence=38,  # above the token and pool top-k masks (35-37)
    produces="pairs",
    params=(BLOCK, TOP_BLOCKS),
    formula=_WHOLE * B * (B + 1) / 2 + _REST * (_REST + 1) / 2 + B * B * _EARLIER + B * _REST * sympy.Min(K - 1, _WHOLE),
    latex=(
        r"n \frac{B(B+1)}{2} + \frac{m(m+1)}{2} + B^2 \Big(\frac{t(t-1)}{2} + (n - t)(K_{\mathrm{b}} - 1)\Big)"
        r" + B m \min(K_{\mathrm{b}} - 1, n),\ n = \lfloor s/B \rfloor,\ m = s - nB,\ t = \min(n, K_{\mathrm{b}})"
    ),
    provides={"kv_tokens": s},  # any earlier block may be chosen: every key is kept
    weights=0,  # the indexer that picks the blocks has its own pattern
    summary="query q keeps min(K, floor(q/B) + 1) blocks of B keys, its own (partial) block always among them",
    reference=_REFERENCE,
)
BLOCK_INDEXER = Pattern(
    name="block_indexer",
    slot="attention.topk_indexer",
    flags={INDEXER_FLAG},
    precedence=40,
    params=(INDEX_HEADS, INDEX_HEAD_DIM),
    # q_proj: hidden -> n_idx x d_idx; k_proj: hidden -> d_idx (one key head); q.k per head over
    # every causal pair; the max-pool over blocks and the top-k are not matmuls.
    formula=2 * s * (h * n_idx * d_idx + h * d_idx) + 2 * p_idx * n_idx * d_idx,
    provides={INDEX_PAIRS.name: s * (s + 1) / 2},
    latex=r"2s\,(h\,n_{\mathrm{idx}} d_{\mathrm{idx}} + h\,d_{\mathrm{idx}}) + 2 P_{\mathrm{idx}} n_{\mathrm{idx}} d_{\mathrm{idx}},\ P_{\mathrm{idx}} = \frac{s(s+1)}{2}",
    # q_proj, k_proj and the RMSNorms of the index query and key (d_idx each); no biases.
    weights=h * n_idx * d_idx + h * d_idx + 2 * d_idx,
    summary="block indexer: q_proj (n_idx heads) and k_proj (one head) from the hidden state, scores over every causal pair",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_patterns():
    return [BLOCK_TOPK, BLOCK_INDEXER]
