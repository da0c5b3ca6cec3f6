"""The lightning indexer of DeepSeek sparse attention: its projections and its scores over every
causal (query, key) pair, on the layers that run one (not those reusing another layer's top-k)."""

from flopsreg.patterns.low_rank_query import Q_LORA_RANK, r_q
from flopsreg.patterns.quantities import kv_tokens
from flopsreg.plugin import Param, Pattern, Quantity, h, hookimpl, s

INDEX_PAIRS = Quantity(
    name="index_pairs",
    latex=r"P_{\mathrm{idx}}",
    meaning="(query, key) pairs the DSA lightning indexer scores: every causal pair",
    # Query-local like the masks: the new queries score the same keys with or without a cache.
    cached="difference",
)
INDEX_HEADS = Param(name="index_heads", latex=r"n_{\mathrm{idx}}", meaning="DSA indexer heads (index_n_heads)")
INDEX_HEAD_DIM = Param(
    name="index_head_dim", latex=r"d_{\mathrm{idx}}", meaning="DSA indexer head width (index_head_dim)"
)
p_idx, n_idx, d_idx = INDEX_PAIRS.symbol, INDEX_HEADS.symbol, INDEX_HEAD_DIM.symbol

DSA_INDEXER = Pattern(
    name="dsa_indexer",
    slot="attention.topk_indexer",  # declared in slots.py, in the built-in slot order
    flags={"dsa_indexer"},
    precedence=10,
    params=(Q_LORA_RANK, INDEX_HEADS, INDEX_HEAD_DIM),
    # wq_b: query latent -> n_idx x d_idx; wk: hidden -> d_idx (one key head); weights_proj:
    # hidden -> n_idx; then per scored pair q.k in every head (d_idx) and the head-weighted sum (1).
    formula=2 * s * (r_q * n_idx * d_idx + h * d_idx + h * n_idx) + 2 * p_idx * n_idx * (d_idx + 1),
    provides={INDEX_PAIRS.name: s * (s + 1) / 2},
    latex=(
        r"2s\,(r_{\mathrm{q}} n_{\mathrm{idx}} d_{\mathrm{idx}} + h\,d_{\mathrm{idx}} + h\,n_{\mathrm{idx}})"
        r" + 2 P_{\mathrm{idx}} n_{\mathrm{idx}} (d_{\mathrm{idx}} + 1),\ P_{\mathrm{idx}} = \frac{s(s+1)}{2}"
    ),
    # wq_b, wk, its k_norm LayerNorm (weight and bias of d_idx) and weights_proj; no biases.
    weights=r_q * n_idx * d_idx + h * d_idx + 2 * d_idx + h * n_idx,
    cache=d_idx * kv_tokens,  # the indexer key of every kept token (one per token, shared by the index heads)
    summary="indexer projections (wq_b from the query latent, wk, weights_proj) and ReLU scores over every causal pair",
    reference=(
        "DeepSeek-AI 2025, 'DeepSeek-V3.2' (lightning indexer); transformers "
        "models/deepseek_v32/modeling_deepseek_v32.py DeepseekV32Indexer"
    ),
)

DSA_INDEXER_FROM_HIDDEN = Pattern(
    name="dsa_indexer_from_hidden",
    slot="attention.topk_indexer",  # declared in slots.py, in the built-in slot order
    flags={"dsa_indexer", "indexer_from_hidden"},
    precedence=20,
    params=(INDEX_HEADS, INDEX_HEAD_DIM),
    # Without a query latent (Mistral Large 4): wq_b reads the LayerNorm-ed hidden state.
    formula=2 * s * (h * n_idx * d_idx + h * d_idx + h * n_idx) + 2 * p_idx * n_idx * (d_idx + 1),
    provides={INDEX_PAIRS.name: s * (s + 1) / 2},
    # wq_b, its input LayerNorm (2h), wk, k_norm (2 d_idx), weights_proj, the per-head softmax scale and bias.
    weights=h * n_idx * d_idx + 2 * h + h * d_idx + 2 * d_idx + h * n_idx + 2 * n_idx,
    cache=d_idx * kv_tokens,  # the indexer key of every kept token (one per token, shared by the index heads)
    summary="the indexer with its queries from the hidden state (no query latent): wq_b hidden -> heads x width",
    reference="transformers models/mistral_large4/modeling_mistral_large4.py MistralLarge4TextIndexer",
)


@hookimpl
def flopsreg_register_quantities():
    return [INDEX_PAIRS]


@hookimpl
def flopsreg_register_patterns():
    return [DSA_INDEXER, DSA_INDEXER_FROM_HIDDEN]
