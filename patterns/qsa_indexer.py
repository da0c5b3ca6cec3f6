"""Qwen4-Exp's QSA token indexer: one projection gives the index queries and one raw key per
token; the keys of each complete block of index_kpool tokens are averaged, and every query
scores the complete blocks it sees (ReLU, summed over the index heads, no head weights).

The attention mask it selects (the query's top index_topk / index_kpool complete blocks plus its
incomplete tail) is GLM-5.3-Flash's k-pool mask with the tail (``dsa_kpool_topk_tail``): the same
blocks, counted from the first token, the same saturation. Exact here: the scores over
sum_q floor((q + 1) / P) (query, complete block) pairs, which transformers' per-query loop also computes.
"""

from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS
from flopsreg.patterns.dsa_kpool import FLAG, INDEX_KPOOL, INDEX_POOL_PAIRS, complete_pools
from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Pattern, h, hookimpl, s

QSA_FLAG = "qsa"
n_idx, d_idx, p_pool = INDEX_HEADS.symbol, INDEX_HEAD_DIM.symbol, INDEX_POOL_PAIRS.symbol

QSA_INDEXER = Pattern(
    name="qsa_indexer",
    slot="attention.topk_indexer",  # declared in slots.py, in the built-in slot order
    flags={"dsa_indexer", FLAG, QSA_FLAG},
    precedence=35,  # above the k-pool indexer (25): a QSA layer has no query latent, gate or head weights
    params=(INDEX_HEADS, INDEX_HEAD_DIM, INDEX_KPOOL),
    # index_qk_proj: hidden -> (n_idx + 1) d_idx (the index queries and one key head). Then per
    # scored (query, complete block) pair q.k in every head (d_idx); the ReLU, the sum over the
    # heads, the block means of the keys, their norm and RoPE are elementwise.
    formula=2 * s * h * (n_idx + 1) * d_idx + 2 * p_pool * n_idx * d_idx,
    provides={INDEX_POOL_PAIRS.name: complete_pools(s)},
    latex=(
        r"2s\,h\,(n_{\mathrm{idx}} + 1)\,d_{\mathrm{idx}} + 2 P_{\mathrm{pool}} n_{\mathrm{idx}} d_{\mathrm{idx}},\ "
        r"P_{\mathrm{pool}} = \frac{p\,(2 s + 2 - \ell\,(p + 1))}{2},\ p = \left\lfloor s/\ell \right\rfloor"
    ),
    # index_qk_proj and the q / k RMSNorms (d_idx each); no biases.
    weights=h * (n_idx + 1) * d_idx + 2 * d_idx,
    cache=d_idx * kv_tokens,  # the raw index key of every kept token (cache.update_indexer)
    summary="QSA indexer: index_qk_proj (hidden -> queries and one key) and ReLU scores of each query over its causal complete blocks",
    reference="transformers 5.24 models/qwen4_exp/modeling_qwen4_exp.py Qwen4ExpTextQSAIndexer",
)


@hookimpl
def flopsreg_register_patterns():
    return [QSA_INDEXER]
