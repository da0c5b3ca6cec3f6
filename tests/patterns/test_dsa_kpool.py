"""GLM-5.3-Flash's k-pool DSA (pool top-k mask, its tail, the pool indexer) against brute force.

The mask is enumerated by really ranking each query's causal complete pools by an arbitrary score
and keeping the index_topk / index_kpool best (plus the query's own incomplete pool for the tail
form); the indexer is counted by a literal loop over queries, heads and (query, pool) pairs.
"""

from __future__ import annotations

import pytest

import flopsreg
from flopsreg import Pattern
from flopsreg.patterns.dsa_kpool import INDEX_KPOOL, INDEX_POOL_PAIRS, KPOOL_INDEXER, KPOOL_TOPK, KPOOL_TOPK_TAIL
from flopsreg.plugins.testing import check_mask_pattern, check_prefix_form


def _score(q: int, pool: int) -> int:
    """An arbitrary deterministic score of a pool for query q (what the indexer would compute)."""
    return (q * 7919 + pool * 104729) % 1009


def _pool_visible(q: int, pool: int, size: int) -> bool:
    """A complete pool is a candidate iff its last key is causal to the query (modeling: pool_visible)."""
    return (pool + 1) * size - 1 <= q


def kpool_visible(q: int, k: int, p: dict) -> bool:
    """Key k is in one of the index_topk // index_kpool best-scoring causal complete pools of query q."""
    size = p["index_kpool"]
    if k > q:
        return False
    candidates = [pool for pool in range(q + 1) if _pool_visible(q, pool, size)]
    ranked = sorted(candidates, key=lambda pool: (-_score(q, pool), pool))
    return k // size in ranked[: p["index_topk"] // size]


def kpool_tail_visible(q: int, k: int, p: dict) -> bool:
    """kpool_visible, or k is in the query's own incomplete pool (keys after its last complete pool)."""
    size = p["index_kpool"]
    return kpool_visible(q, k, p) or ((q + 1) // size * size <= k <= q)


PARAMS = [{"index_kpool": size, "index_topk": size * pools} for size in (1, 2, 3, 4) for pools in (1, 2, 3)]


@pytest.mark.parametrize(("pattern", "visible"), [(KPOOL_TOPK, kpool_visible), (KPOOL_TOPK_TAIL, kpool_tail_visible)])
def test_kpool_pairs_equal_the_keys_of_the_selected_pools(pattern, visible):
    check_mask_pattern(pattern, visible, params=PARAMS, max_len=30)


@pytest.mark.parametrize(("pattern", "visible"), [(KPOOL_TOPK, kpool_visible), (KPOOL_TOPK_TAIL, kpool_tail_visible)])
def test_kpool_pairs_after_a_cached_prefix(pattern, visible):
    check_prefix_form(pattern, visible, params=PARAMS[::2], max_len=10, max_cached=12)


def test_kpool_tail_pairs_at_the_recorded_size():
    """The survey's recorded run (s = 29, index_topk 8, index_kpool 4) attended 235 pairs; by hand:
    queries 0..10 see at most 2 complete pools, so every causal key (66); queries 11..28 keep 2
    pools of 4 keys (8 x 18 = 144) plus their tail (q + 1) mod 4, which sums to 4 x 6 + 1 = 25."""
    count = sum(kpool_tail_visible(q, k, {"index_kpool": 4, "index_topk": 8}) for q in range(29) for k in range(29))
    assert count == 235 == 66 + 8 * 18 + 25


def test_pool_pairs_are_the_causal_complete_pools():
    """The quantity the indexer provides: pairs (query q, pool j) with pool j complete and causal."""
    scored = Pattern(
        name="kpool_scores_probe", slot="attention.mask", precedence=1, produces="pairs", params=(INDEX_KPOOL,),
        formula=KPOOL_INDEXER.provides[INDEX_POOL_PAIRS.name], summary="the pool pairs", reference="test",
    )
    visible = lambda q, pool, p: _pool_visible(q, pool, p["index_kpool"])  # noqa: E731
    sizes = [{"index_kpool": size} for size in range(1, 7)]
    check_mask_pattern(scored, visible, params=sizes, max_len=30)
    check_prefix_form(scored, visible, params=sizes, max_len=12, max_cached=12)


H, HEADS, R_Q, R_KV, NOPE, V = 16, 4, 12, 10, 6, 5
IDX_HEADS, IDX_DIM, POOL, TOPK = 3, 4, 4, 8
PARAMS_MODEL = {
    "hidden": H, "heads": HEADS, "q_lora_rank": R_Q, "kv_lora_rank": R_KV, "qk_nope_head_dim": NOPE,
    "qk_rope_head_dim": 0, "v_head_dim": V, "index_heads": IDX_HEADS, "index_head_dim": IDX_DIM,
    "index_topk": TOPK, "index_kpool": POOL, "vocab": 32,
}


def kpool_model(flags: set[str]) -> flopsreg.Model:
    return flopsreg.Model.uniform("kpool-toy", layers=1, flags={"mla", "q_lora", "dsa", "dsa_kpool", *flags}, **PARAMS_MODEL)


def indexer_loop(seq_len: int, cached: int = 0) -> int:
    """Multiply-adds of the k-pool indexer for queries cached..cached+seq_len-1, one by one, times 2."""
    macs = 0
    for q in range(cached, cached + seq_len):
        macs += R_Q * IDX_HEADS * IDX_DIM  # wq_b: query latent -> index heads x index width
        macs += H * IDX_DIM  # wk: hidden -> one index key
        macs += H * IDX_DIM  # the pool gate: hidden -> one gate score per key channel
        macs += H * IDX_HEADS  # weights_proj: hidden -> one weight per index head
        for pool in range(q + 1):
            if _pool_visible(q, pool, POOL):
                for _head in range(IDX_HEADS):
                    macs += IDX_DIM + 1  # q . pooled key, then weight x ReLU(score)
    return 2 * macs


@pytest.mark.parametrize(("seq_len", "cached"), [(1, 0), (3, 0), (4, 0), (29, 0), (1, 40), (6, 9)])
def test_kpool_indexer_scores_every_causal_complete_pool(registry, seq_len, cached):
    unit = registry.select(kpool_model({"dsa_indexer"})).kinds[0]
    assert unit.flops(seq_len, cached)["attention.topk_indexer"] == indexer_loop(seq_len, cached)


def test_kpool_selection_by_flags(registry):
    """The kpool flag picks the pool mask (and the pool indexer where an indexer runs); the tail flag the tail form."""
    chosen = lambda flags: {sel.slot: sel.pattern.name for sel in registry.select(kpool_model(flags)).kinds[0].selections}  # noqa: E731
    assert chosen({"dsa_indexer"})["attention.mask"] == "dsa_kpool_topk"
    assert chosen({"dsa_indexer"})["attention.topk_indexer"] == "dsa_kpool_indexer"
    assert chosen({"dsa_kpool_tail"})["attention.mask"] == "dsa_kpool_topk_tail"
    assert "attention.topk_indexer" not in chosen({"dsa_kpool_tail"})


def test_kpool_indexer_weights():
    """wq_b 12x(3x4) + wk 16x4 + k_norm 2x4 + weights_proj 16x3 + pool gate 4x16 + ape 4x4 = 344."""
    values = {"q_lora_rank": R_Q, "index_heads": IDX_HEADS, "index_head_dim": IDX_DIM, "index_kpool": POOL, "hidden": H}
    got = KPOOL_INDEXER.weights.xreplace({sym: values[sym.name] for sym in KPOOL_INDEXER.weights.free_symbols})
    assert got == 144 + 64 + 8 + 48 + 64 + 16 == 344


def test_index_topk_not_a_multiple_of_index_kpool_is_refused(registry):
    with pytest.raises(flopsreg.FlopsregError, match="index_topk must be a multiple of index_kpool"):
        registry.evaluate(flopsreg.Model.uniform("bad", layers=1, flags={"mla", "q_lora", "dsa", "dsa_kpool"}, **{**PARAMS_MODEL, "index_topk": 6}), seq_len=8)
