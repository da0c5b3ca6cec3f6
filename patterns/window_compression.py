"""DeepSeek-V4's compressed attention: a sliding window over raw tokens plus compressed KV
entries, each pooled from a window of m tokens; CSA (compressed sparse attention) keeps the top-k
of them per query picked by an indexer on compressed keys, HCA (heavily compressed) sees all."""

import sympy

from flopsreg.patterns.dsa_indexer import INDEX_HEAD_DIM, INDEX_HEADS, d_idx, n_idx
from flopsreg.patterns.dsa_topk import INDEX_TOPK, K
from flopsreg.patterns.gqa_projection import HEAD_DIM, d_h
from flopsreg.patterns.low_rank_query import Q_LORA_RANK, r_q
from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import Param, Pattern, Quantity, h, hookimpl, s

CSA, HCA = "compressed_sparse", "heavily_compressed"  # the flags of the two compressed layer kinds
_REFERENCE = (
    "DeepSeek-AI 2026, DeepSeek-V4 (sections 2.3.1-2.3.2); transformers "
    "models/deepseek_v4/modeling_deepseek_v4.py"
)

CSA_RATE = Param(
    name="csa_rate",
    latex="m",
    meaning="tokens pooled into one compressed entry on CSA layers (compress_rates['compressed_sparse_attention'])",
)
HCA_RATE = Param(
    name="hca_rate",
    latex="m'",
    meaning="tokens pooled into one compressed entry on HCA layers (compress_rates['heavily_compressed_attention'])",
)
m, m_h = CSA_RATE.symbol, HCA_RATE.symbol


def entries_seen(rate: sympy.Expr) -> sympy.Expr:
    """sum over queries t < s of floor((t + 1) / rate): entry w is visible iff (w + 1) rate <= t + 1."""
    q = sympy.floor(s / rate)  # closed entries; entry w is seen by the s - (w + 1) rate + 1 last queries
    return q * (s + 1) - rate * q * (q + 1) / 2


def entries_kept(rate: sympy.Expr, topk: sympy.Expr) -> sympy.Expr:
    """sum over queries t < s of min(topk, floor((t + 1) / rate)): from query topk rate - 1 on, topk each."""
    return sympy.Piecewise(
        (entries_seen(rate), s <= topk * rate),
        (rate * topk * (topk - 1) / 2 + topk * (s - topk * rate + 1), True),
    )


_WINDOW_PAIRS = SLIDING_WINDOW.formula

CSA_MASK = Pattern(
    name="csa_mask",
    slot="attention.mask",
    flags={CSA},
    # Below the window (20): these layers have no sliding_window flag, only above full causal (10).
    precedence=15,
    produces="pairs",
    params=(WINDOW, CSA_RATE, INDEX_TOPK),
    formula=_WINDOW_PAIRS + entries_kept(m, K),
    latex=r"\sum_{j=1}^{s} [\min(j, W) + \min(K_{\mathrm{t}}, \lfloor j/m \rfloor)]",
    # The cache: the window's raw keys (= values) and every closed compressed entry (DeepseekV4CSACache).
    provides={"kv_tokens": sympy.Min(s, WINDOW.symbol) + sympy.floor(s / m)},
    weights=0,  # a mask holds no parameters
    summary="query t: the last min(t + 1, W) raw keys plus min(K, floor((t + 1)/m)) compressed entries picked by the indexer",
    reference=_REFERENCE + " (CSACompressor block_bias, Indexer causal_threshold)",
)
HCA_MASK = Pattern(
    name="hca_mask",
    slot="attention.mask",
    flags={HCA},
    precedence=16,
    produces="pairs",
    params=(WINDOW, HCA_RATE),
    formula=_WINDOW_PAIRS + entries_seen(m_h),
    latex=r"\sum_{j=1}^{s} [\min(j, W) + \lfloor j/m' \rfloor]",
    provides={"kv_tokens": sympy.Min(s, WINDOW.symbol) + sympy.floor(s / m_h)},  # DeepseekV4HCACache
    weights=0,  # a mask holds no parameters
    summary="query t: the last min(t + 1, W) raw keys plus every closed compressed entry, floor((t + 1)/m')",
    reference=_REFERENCE + " (HCACompressor block_bias)",
)

# kv_proj and gate_proj: hidden -> the entry width (two overlapping series, 2 D, on CSA); the
# softmax-gated pooling of each window is elementwise. Weights: both projections, the learned
# position bias (rate x width) and the kv_norm scale (D).
CSA_COMPRESSOR = Pattern(
    name="csa_compressor",
    slot="attention.compressor",
    flags={CSA},
    precedence=10,
    params=(HEAD_DIM, CSA_RATE),
    formula=2 * s * h * 2 * d_h * 2,
    weights=2 * h * 2 * d_h + m * 2 * d_h + d_h,
    # Between steps: up to m - 1 tokens of kv and gate (2 head_dim each) not yet pooled, and the
    # last window's Ca slice of both (head_dim each) for the overlapping window (DeepseekV4CSACache).
    state=2 * (m - 1) * 2 * d_h + 2 * d_h,
    summary="kv_proj and gate_proj hidden -> 2 head_dim (two overlapping series); pooling windows of 2m is elementwise",
    reference=_REFERENCE + " DeepseekV4CSACompressor",
)
HCA_COMPRESSOR = Pattern(
    name="hca_compressor",
    slot="attention.compressor",
    flags={HCA},
    precedence=11,
    params=(HEAD_DIM, HCA_RATE),
    formula=2 * s * h * d_h * 2,
    weights=2 * h * d_h + m_h * d_h + d_h,
    state=2 * (m_h - 1) * d_h,  # up to m' - 1 tokens of kv and gate not yet pooled (DeepseekV4HCACache)
    summary="kv_proj and gate_proj hidden -> head_dim; pooling each closed window of m' tokens is elementwise",
    reference=_REFERENCE + " DeepseekV4HCACompressor",
)

COMPRESSED_INDEX_PAIRS = Quantity(
    name="compressed_index_pairs",
    latex=r"P_{\mathrm{cidx}}",
    meaning="(query, compressed entry) pairs the CSA indexer scores: every closed entry a query may see",
    cached="difference",  # query-local, like the masks
)
p_cidx = COMPRESSED_INDEX_PAIRS.symbol

CSA_INDEX_MASK = Pattern(
    name="csa_index_mask",
    slot="attention.index_mask",
    flags={CSA},
    precedence=10,
    produces=COMPRESSED_INDEX_PAIRS.name,
    params=(CSA_RATE,),
    formula=entries_seen(m),
    latex=r"\sum_{j=1}^{s} \lfloor j/m \rfloor",
    weights=0,  # a mask holds no parameters
    summary="query t scores the floor((t + 1)/m) closed compressed entries: sum_t floor((t + 1)/m) pairs",
    reference=_REFERENCE + " (Indexer causal_threshold)",
)

CSA_INDEXER = Pattern(
    name="csa_indexer",
    slot="attention.topk_indexer",
    flags={CSA},
    precedence=30,
    params=(Q_LORA_RANK, INDEX_HEADS, INDEX_HEAD_DIM, CSA_RATE),
    # Its own compressor (kv_proj, gate_proj: hidden -> 2 d_idx), q_b_proj from the query latent,
    # weights_proj hidden -> n_idx; then per scored pair (P_cidx, from attention.index_mask) q.k in
    # every head and the head-weighted sum.
    formula=2 * s * (2 * h * 2 * d_idx + r_q * n_idx * d_idx + h * n_idx) + 2 * p_cidx * n_idx * (d_idx + 1),
    latex=(
        r"2s\,(4 h\,d_{\mathrm{idx}} + r_{\mathrm{q}} n_{\mathrm{idx}} d_{\mathrm{idx}} + h\,n_{\mathrm{idx}})"
        r" + 2 P_{\mathrm{cidx}} n_{\mathrm{idx}} (d_{\mathrm{idx}} + 1)"
    ),
    # kv_proj, gate_proj, position_bias (m x 2 d_idx), kv_norm (d_idx), q_b_proj, weights_proj.
    weights=2 * h * 2 * d_idx + m * 2 * d_idx + d_idx + r_q * n_idx * d_idx + h * n_idx,
    cache=d_idx * sympy.floor(s / m),  # a compressed index key per closed window
    state=2 * (m - 1) * 2 * d_idx + 2 * d_idx,  # its compressor's unpooled tokens and overlap, as csa_compressor's
    summary="CSA's lightning indexer on compressed keys: its compressor, q_b_proj, weights_proj, ReLU scores over visible entries",
    reference=_REFERENCE + " DeepseekV4Indexer",
)


@hookimpl
def flopsreg_register_quantities():
    return [COMPRESSED_INDEX_PAIRS]


@hookimpl
def flopsreg_register_patterns():
    return [CSA_MASK, HCA_MASK, CSA_INDEX_MASK, CSA_COMPRESSOR, HCA_COMPRESSOR, CSA_INDEXER]
