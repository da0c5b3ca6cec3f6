"""GLM-5.3-Flash's k-pool DSA: the lightning indexer scores pools of index_kpool consecutive keys
instead of single keys, and each query attends to the tokens of its top index_topk / index_kpool
complete pools (plus, by default, the incomplete pool it sits in).

Exact here: the indexer scores each query against the complete pools whose last key is causal to
it, sum_q floor((q + 1)/P) pairs for pools of P keys; transformers' torch path scores all
floor(s/P) complete pools for every query and masks afterwards, 2 s floor(s/P) heads (width + 1).
"""

import sympy

from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_topk import INDEX_TOPK
from flopsreg.patterns.low_rank_query import Q_LORA_RANK, r_q
from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Constraint, Param, Pattern, Quantity, h, hookimpl, s

INDEX_KPOOL = Param(name="index_kpool", latex=r"\ell", meaning="consecutive keys per k-pool the indexer scores (index_kpool)")
INDEX_POOL_PAIRS = Quantity(
    name="index_pool_pairs",
    latex=r"P_{\mathrm{pool}}",
    meaning="(query, pool) pairs the k-pool indexer scores: every complete pool whose last key is causal to the query",
    # Query-local: a new query scores the same complete pools with or without a cache.
    cached="difference",
)
FLAG, TAIL_FLAG = "dsa_kpool", "dsa_kpool_tail"
P, K = INDEX_KPOOL.symbol, INDEX_TOPK.symbol
n_idx, d_idx, p_pool = INDEX_HEADS.symbol, INDEX_HEAD_DIM.symbol, INDEX_POOL_PAIRS.symbol
_DIVIDES = Constraint(condition=sympy.Eq(sympy.Mod(K, P), 0), message="index_topk must be a multiple of index_kpool")
_REFERENCE = "transformers models/glm5_next/modeling_glm5_next.py Glm5NextTextIndexer (get_pooled_states, append_visible_tail)"


def complete_pools(n: sympy.Expr) -> sympy.Expr:
    """sum_{m=1}^{n} floor(m / P): the complete pools queries 0..n-1 see (query q sees floor((q+1)/P)).

    With n = aP + r: the a - 1 full runs of P queries contribute P a(a - 1)/2, the last r + 1 queries a
    each; the sum, a (n + 1) - P a (a + 1)/2, is written as a (2n + 2 - P a - P)/2 (shorter when rendered).
    """
    a = sympy.floor(n / P)
    return a * (2 * n + 2 - P * a - P) / 2


_POOLS = sympy.floor(K / P)  # pools kept per query: index_topk // index_kpool
_SATURATED = (_POOLS + 1) * P  # from this many tokens on, some queries see more complete pools than they keep
# Pool keys attended: query q keeps min(floor((q+1)/P), K/P) pools of P keys. Below _SATURATED
# tokens that is every complete pool; past it, the first _SATURATED - 1 queries keep all theirs
# (P * complete_pools(_SATURATED - 1) = P^2 K_P (K_P + 1)/2) and each later query K_P pools.
_POOL_KEYS = sympy.Piecewise(
    (P * complete_pools(s), s < _SATURATED),
    (P * P * _POOLS * (_POOLS + 1) / 2 + P * _POOLS * (s - _SATURATED + 1), True),
)
# The tail: query q also attends to the (q + 1) mod P keys of its own incomplete pool;
# sum_{m=1}^{s} (m mod P) = s(s + 1)/2 - P sum_m floor(m/P).
_TAIL_KEYS = s * (s + 1) / 2 - P * complete_pools(s)

KPOOL_INDEXER = Pattern(
    name="dsa_kpool_indexer",
    slot="attention.topk_indexer",  # declared in slots.py, in the built-in slot order
    flags={"dsa_indexer", FLAG},
    precedence=25,
    params=(Q_LORA_RANK, INDEX_HEADS, INDEX_HEAD_DIM, INDEX_KPOOL),
    # wq_b: query latent -> n_idx x d_idx; wk: hidden -> d_idx; the pool gate (F.linear with
    # index_kpool_compress_gate): hidden -> d_idx; weights_proj: hidden -> n_idx. Then per scored
    # (query, complete pool) pair q.k in every head (d_idx) and the head-weighted sum (1). The
    # softmax pooling of the keys inside a pool is elementwise (mul + sum).
    formula=2 * s * (r_q * n_idx * d_idx + 2 * h * d_idx + h * n_idx) + 2 * p_pool * n_idx * (d_idx + 1),
    provides={INDEX_POOL_PAIRS.name: complete_pools(s)},
    latex=(
        r"2s\,(r_{\mathrm{q}} n_{\mathrm{idx}} d_{\mathrm{idx}} + 2h\,d_{\mathrm{idx}} + h\,n_{\mathrm{idx}})"
        r" + 2 P_{\mathrm{pool}} n_{\mathrm{idx}} (d_{\mathrm{idx}} + 1),\ "
        # complete_pools(s) with p = floor(s / P) complete pools in the sequence, named once.
        r"P_{\mathrm{pool}} = \frac{p\,(2 s + 2 - \ell\,(p + 1))}{2},\ p = \left\lfloor s/\ell \right\rfloor"
    ),
    # wq_b, wk, k_norm (LayerNorm weight and bias), weights_proj, the pool gate (d_idx x h) and
    # the pool position bias index_kpool_compress_ape (P x d_idx); no biases.
    weights=r_q * n_idx * d_idx + h * d_idx + 2 * d_idx + h * n_idx + d_idx * h + P * d_idx,
    cache=d_idx * kv_tokens,  # the indexer key of every kept token (one per token, shared by the index heads)
    summary="k-pool indexer: wq_b, wk, the pool gate, weights_proj, and scores of each query over its causal complete pools",
    reference=_REFERENCE,
)

KPOOL_TOPK = Pattern(
    name="dsa_kpool_topk",
    slot="attention.mask",
    flags={"dsa", FLAG},
    precedence=36,  # above token top-k DSA (35): a k-pool layer selects pools, not tokens
    produces="pairs",
    params=(INDEX_TOPK, INDEX_KPOOL),
    constraints=(_DIVIDES,),
    formula=_POOL_KEYS,
    latex=r"\sum_{j=1}^{s} \min(j - r_j, K_{\mathrm{t}}),\ r_j = j \bmod \ell",
    weights=0,  # a mask holds no parameters (the indexer has its own pattern)
    provides={"kv_tokens": s},  # the indexer may pick any complete pool: every key is kept
    summary="query i attends to the L = index_kpool keys of each of its min(floor((i+1)/L), K/L) selected complete pools",
    reference=_REFERENCE,
)

KPOOL_TOPK_TAIL = Pattern(
    name="dsa_kpool_topk_tail",
    slot="attention.mask",
    flags={"dsa", FLAG, TAIL_FLAG},
    precedence=37,
    produces="pairs",
    params=(INDEX_TOPK, INDEX_KPOOL),
    constraints=(_DIVIDES,),
    # Below (K/P + 1) P tokens every query keeps all its complete pools and its tail: causal.
    formula=sympy.Piecewise((s * (s + 1) / 2, s < _SATURATED), (_POOL_KEYS + _TAIL_KEYS, True)),
    latex=r"\sum_{j=1}^{s} (\min(j - r_j, K_{\mathrm{t}}) + r_j),\ r_j = j \bmod \ell",
    weights=0,
    provides={"kv_tokens": s},
    summary="the selected complete pools plus the query's own incomplete pool (index_kpool_always_select_tail)",
    reference=_REFERENCE,
)


@hookimpl
def flopsreg_register_quantities():
    return [INDEX_POOL_PAIRS]


@hookimpl
def flopsreg_register_patterns():
    return [KPOOL_INDEXER, KPOOL_TOPK, KPOOL_TOPK_TAIL]
