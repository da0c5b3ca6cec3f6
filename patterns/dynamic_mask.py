"""Doge's dynamic mask attention: every key gets a learned importance from its value (dt_proj), and
each query attends to the keep_window keys of highest importance among those its causal (or
sliding-window) mask allows.

Which keys a query keeps depends on the data, how many does not: the importances are finite while
masked keys are at the dtype's minimum, so the top keep_window of a row are its min(allowed,
keep_window) allowed keys, and query q keeps min(q + 1, K) keys (min(q + 1, W, K) in a window of W):
the pairs of a sliding window of K (of min(W, K)). The keys are ranked anew for every step, so the
cache keeps every token (the last W in a window). See docs/hf-configs.md, "Dynamic mask attention"."""

import sympy

from flopsreg.patterns.gqa_projection import KV_HEADS
from flopsreg.patterns.quantities import d_v
from flopsreg.plugin import Param, Pattern, hookimpl, s

FLAG = "dynamic_mask"
REFERENCE = "Shi et al. 2025, 'Trainable Dynamic Mask Sparse Attention' (arXiv:2508.02124); Hugging Face DogeAttention.prepare_dynamic_mask (modeling_doge.py)"
WINDOWED = "dynamic_mask_window"  # the flag of a dynamic mask inside a sliding window
KEEP_WINDOW = Param(name="keep_window", latex="K", meaning="keys each query keeps by the dynamic mask's top-k (Doge's keep_window_size)")
# Its own name, not sliding_window's `window`: the window a dynamic mask ranks within (Doge's sliding_window)
DYNAMIC_WINDOW = Param(name="dynamic_window", latex=r"W_{\mathrm{d}}", meaning="sliding window a dynamic mask ranks its keys within (Doge's sliding_window)")
K, W, n_kv = KEEP_WINDOW.symbol, DYNAMIC_WINDOW.symbol, KV_HEADS.symbol


def _kept_pairs(window: sympy.Expr) -> sympy.Expr:
    """Pairs when query q keeps min(q + 1, window) keys: sliding_window's count."""
    return sympy.Piecewise((s * (s + 1) / 2, s <= window), (window * (window + 1) / 2 + (s - window) * window, True))


DYNAMIC_MASK = Pattern(
    name="dynamic_mask",
    slot="attention.mask",
    flags={FLAG},
    precedence=55,  # above every other mask a layer could carry with it (sliding_window, chunked)
    produces="pairs",
    params=(KEEP_WINDOW,),
    formula=_kept_pairs(K),
    provides={"kv_tokens": s},  # every key is ranked again at every step: none can be dropped
    latex=r"\frac{m(m+1)}{2} + (s - m)\,K,\ m = \min(s, K)",
    summary="each query keeps the K causal keys of highest learned importance: min(q + 1, K) keys for query q",
    reference=REFERENCE,
)
DYNAMIC_MASK_IN_WINDOW = Pattern(
    name="dynamic_mask_in_window",
    slot="attention.mask",
    flags={FLAG, WINDOWED},
    precedence=56,
    produces="pairs",
    params=(KEEP_WINDOW, DYNAMIC_WINDOW),
    formula=_kept_pairs(sympy.Min(K, W)),
    provides={"kv_tokens": sympy.Min(s, W)},
    latex=r"\frac{m(m+1)}{2} + (s - m)\,M,\ M = \min(W_{\mathrm{d}}, K),\ m = \min(s, M)",
    summary="each query keeps the K keys of highest importance within its sliding window of W_d: min(q + 1, W_d, K) keys",
    reference=REFERENCE,
)
DYNAMIC_MASK_SCORES = Pattern(
    name="dynamic_mask_scores",
    slot="attention.topk_indexer",
    flags={FLAG},
    precedence=60,
    params=(KV_HEADS,),
    # dt_proj: each token's values (n_kv x v width) -> one importance per key/value head; A scales them
    formula=2 * s * n_kv * d_v * n_kv,
    summary="dt_proj: each token's values n_kv x v width -> n_kv importances, and A (n_kv), which the top-k ranks",
    reference=REFERENCE,
    weights=n_kv * d_v * n_kv + n_kv,
)
DYNAMIC_MASK_SCORES_BIASED = Pattern(
    name="dynamic_mask_scores_biased",
    slot="attention.topk_indexer",
    flags={FLAG, "attention_bias"},
    precedence=61,
    params=(KV_HEADS,),
    formula=2 * s * n_kv * d_v * n_kv,
    summary="dynamic_mask_scores with dt_proj's bias of n_kv (attention_bias biases it too)",
    reference=REFERENCE,
    weights=n_kv * d_v * n_kv + 2 * n_kv,
)


@hookimpl
def flopsreg_register_patterns():
    return [DYNAMIC_MASK, DYNAMIC_MASK_IN_WINDOW, DYNAMIC_MASK_SCORES, DYNAMIC_MASK_SCORES_BIASED]
