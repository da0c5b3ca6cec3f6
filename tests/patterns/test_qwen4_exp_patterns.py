"""Qwen4-Exp's patterns against brute force: the QSA mask (transformers' per-query selection
re-enacted with an arbitrary score) and the QSA indexer, the low-rank gated residual and the n-gram
PLE counted by literal loops over tokens, heads, streams and channels; the n-gram tables' rows
against the modeling code's own prime search (copied as an oracle)."""

from __future__ import annotations

import math

import pytest

import flopsreg
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.dsa_kpool import KPOOL_TOPK_TAIL
from flopsreg.patterns.hf.qwen4_exp import ngram_rows
from flopsreg.patterns.lowrank_hyper_connections import LOWRANK_HC, LOWRANK_HC_HEAD
from flopsreg.patterns.ngram_ple import NGRAM_PLE
from flopsreg.patterns.qsa_indexer import QSA_INDEXER
from flopsreg.plugins.testing import check_mask_pattern, check_prefix_form


def _score(q: int, block: int) -> int:
    """An arbitrary deterministic score of a block for query q (what the indexer would compute)."""
    return (q * 7919 + block * 104729) % 1009


def qsa_selected(q: int, p: dict) -> set[int]:
    """The keys query q attends to, as Qwen4ExpTextQSAIndexer.forward picks them: its visible keys
    0..q cut into complete blocks of compress_ratio from the first, the top budget / ratio blocks by
    score, and the visible keys after the last complete block (the tail)."""
    ratio, budget = p["index_kpool"], p["index_topk"]
    visible = list(range(q + 1))
    complete = len(visible) // ratio
    blocks = [visible[b * ratio : (b + 1) * ratio] for b in range(complete)]
    ranked = sorted(range(complete), key=lambda b: (-_score(q, b), b))[: min(budget // ratio, complete)]
    return {k for b in ranked for k in blocks[b]} | set(visible[complete * ratio :])


def qsa_visible(q: int, k: int, p: dict) -> bool:
    return k in qsa_selected(q, p)


PARAMS = [{"index_kpool": ratio, "index_topk": ratio * blocks} for ratio in (1, 2, 3, 4, 8) for blocks in (1, 2, 3)]


def test_the_qsa_mask_is_the_kpool_mask_with_its_tail():
    check_mask_pattern(KPOOL_TOPK_TAIL, qsa_visible, params=PARAMS, max_len=30)


def test_the_qsa_mask_after_a_cached_prefix():
    check_prefix_form(KPOOL_TOPK_TAIL, qsa_visible, params=PARAMS[::2], max_len=10, max_cached=12)


H, N_IDX, D_IDX, RATIO, BUDGET = 12, 3, 5, 4, 8
QSA_MODEL = {"hidden": H, "heads": 4, "kv_heads": 2, "head_dim": 6, "index_heads": N_IDX, "index_head_dim": D_IDX,
             "index_kpool": RATIO, "index_topk": BUDGET, "vocab": 32}


def qsa_indexer_loop(seq_len: int, cached: int = 0) -> int:
    """Multiply-adds of the QSA indexer for queries cached..cached+seq_len-1, one by one, times 2."""
    macs = 0
    for q in range(cached, cached + seq_len):
        macs += H * (N_IDX + 1) * D_IDX  # index_qk_proj: the index queries and one raw key
        for _block in range((q + 1) // RATIO):  # the complete blocks of the visible keys 0..q
            for _head in range(N_IDX):
                macs += D_IDX  # q . pooled block key (ReLU and the sum over heads: no multiply)
    return 2 * macs


@pytest.mark.parametrize(("seq_len", "cached"), [(1, 0), (3, 0), (4, 0), (29, 0), (1, 40), (6, 9)])
def test_the_qsa_indexer_scores_every_complete_block_a_query_sees(registry, seq_len, cached):
    flags = {"output_gate", *KPOOL_TOPK_TAIL.flags, *QSA_INDEXER.flags}
    model = flopsreg.Model.uniform("qsa-toy", layers=1, flags=flags, **QSA_MODEL)
    unit = registry.select(model).kinds[0]
    assert unit.patterns["attention.topk_indexer"] == "qsa_indexer"
    assert unit.flops(seq_len, cached)["attention.topk_indexer"] == qsa_indexer_loop(seq_len, cached)


def test_qsa_indexer_weights():
    """index_qk_proj 12 x (3 + 1) x 5 and the q / k RMSNorms of 5 each: 250."""
    values = {"hidden": H, "index_heads": N_IDX, "index_head_dim": D_IDX}
    assert compile_exact(QSA_INDEXER.weights)(values) == 12 * 4 * 5 + 2 * 5 == 250


def _value(expr, **values) -> int:
    return compile_exact(expr)(values)


@pytest.mark.parametrize(("n", "hidden", "rank"), [(2, 8, 3), (3, 5, 7), (4, 16, 1)])
def test_the_low_rank_gated_residual_by_loops(n, hidden, rank):
    """Per token and sublayer: down (n h -> r), up (r -> n h), inject (n h -> n), each output a dot product."""
    seq_len, macs = 5, 0
    for _token in range(seq_len):
        for _sublayer in ("attention", "mlp"):
            macs += sum(n * hidden for _ in range(rank))  # input_mix_weight_down
            macs += sum(rank for _ in range(n * hidden))  # input_mix_weight_up
            macs += sum(n * hidden for _ in range(n))  # block_inject_weight
    values = {"seq_len": seq_len, "hidden": hidden, "hc_mult": n, "hc_lowrank": rank}
    assert _value(LOWRANK_HC.formula, **values) == 2 * macs
    head = sum(n * hidden * rank + rank * n * hidden for _ in range(seq_len))  # hyper_connection_mixer: down and up only
    assert _value(LOWRANK_HC_HEAD.formula, **values) == 2 * head
    # hc_norm (n h), down, up, inject per sublayer; the head without inject.
    assert _value(LOWRANK_HC.weights, **values) == 2 * (n * hidden + n * hidden * rank + rank * n * hidden + n * n * hidden)
    assert _value(LOWRANK_HC_HEAD.weights, **values) == n * hidden + 2 * n * hidden * rank


@pytest.mark.parametrize(("n", "hidden", "width", "kernel", "ngram"), [(2, 8, 6, 4, 3), (3, 4, 10, 2, 4)])
def test_the_ngram_ple_by_loops(n, hidden, width, kernel, ngram):
    """Per token: key_proj and value_proj, n gate dot products of width h, and K taps per conv channel."""
    seq_len, macs = 7, 0
    for _token in range(seq_len):
        macs += sum(width for _ in range(n * hidden))  # key_proj: E -> n h
        macs += sum(width for _ in range(hidden))  # value_proj: E -> h
        macs += sum(hidden for _ in range(n))  # each stream's gate: key . normed stream over h
        macs += sum(kernel for _ in range(n * hidden))  # the dilated depthwise conv: K taps per channel
    values = {"seq_len": seq_len, "hidden": hidden, "hc_mult": n, "ple_embed_dim": width, "ngram_dim": 2,
              "ngram_rows": 64, "ngram_size": ngram, "ple_conv_kernel": kernel}
    assert _value(NGRAM_PLE.formula, **values) == 2 * macs
    table, projections, norms, conv = 64 * 2, width * n * hidden + width * hidden, 3 * n * hidden, n * hidden * kernel
    assert _value(NGRAM_PLE.weights, **values) == table + projections + norms + conv


# Oracle: transformers 5.24 models/qwen4_exp/modeling_qwen4_exp.py, _is_prime and
# _find_nth_prime_after, copied verbatim; and the sizes Qwen4ExpTextNGramEmbedding.__init__ derives.
def _is_prime(value: int) -> bool:
    if value < 2:
        return False
    if value % 2 == 0:
        return value == 2
    for divisor in range(3, math.isqrt(value) + 1, 2):
        if value % divisor == 0:
            return False
    return True


def _find_nth_prime_after(start: int, count: int) -> int:
    prime = start
    for _ in range(count):
        prime += 1
        while not _is_prime(prime):
            prime += 1
    return prime


def _table_rows(base: int, heads: int, ple_layer_index: int, divisor: int) -> int:
    total = sum(_find_nth_prime_after(base - 1, ple_layer_index * heads + head + 1) for head in range(heads))
    return math.ceil(total / divisor) * divisor


@pytest.mark.parametrize(("base", "heads", "tables", "divisor"), [(1000, 16, 3, 64), (2, 4, 2, 1), (20_000_000, 2, 2, 128), (97, 6, 4, 128)])
def test_ngram_rows_are_the_modeling_codes_prime_sizes(base, heads, tables, divisor):
    assert ngram_rows(base, heads, tables, divisor) == [_table_rows(base, heads, index, divisor) for index in range(tables)]
