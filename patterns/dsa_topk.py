"""DeepSeek sparse attention (DSA): each query attends to the top-k keys its lightning indexer selects."""

import sympy

from flopsreg.plugin import Param, Pattern, hookimpl, s

INDEX_TOPK = Param(
    name="index_topk",
    latex=r"K_{\mathrm{t}}",
    meaning="keys per query under DSA, chosen by the indexer (index_topk)",
)
K = INDEX_TOPK.symbol

DSA_TOPK = Pattern(
    name="dsa_topk",
    slot="attention.mask",
    flags={"dsa"},
    # Above the window (20) and chunk (30) masks: a layer flagged dsa attends to its top-k keys.
    precedence=35,
    produces="pairs",
    params=(INDEX_TOPK,),
    # Query q scores its q + 1 causal keys and keeps min(q + 1, K) of them: a causal triangle up
    # to position K - 1, then K keys per query (the count of a K-key window, other keys).
    formula=sympy.Piecewise(
        (s * (s + 1) / 2, s <= K),
        (K * (K + 1) / 2 + (s - K) * K, True),
    ),
    latex=r"\sum_{j=1}^{s} \min(j, K_{\mathrm{t}})",
    provides={"kv_tokens": s},  # the indexer may pick any earlier key: all are kept
    weights=0,  # a mask holds no parameters (the indexer that picks the keys has its own pattern)
    summary="query i attends to min(i + 1, K) keys chosen by the indexer: sum_i min(i + 1, K) pairs",
    reference=(
        "DeepSeek-AI 2025, 'DeepSeek-V3.2' (DSA); transformers models/deepseek_v32/modeling_deepseek_v32.py "
        "(topk = min(index_topk, keys) over causally masked scores)"
    ),
)


@hookimpl
def flopsreg_register_patterns():
    return [DSA_TOPK]
