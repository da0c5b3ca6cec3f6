"""The built-in attention.mask patterns against brute-force boolean masks.

For every sequence length 1..64 and every window / chunk size 1..s+3 the registry's counts must
equal the (query, key) pairs let through by the explicit masks of ``tests/oracles.py``. Larger,
realistic lengths are checked against a per-query Python sum (another independent oracle), and
the worked numbers of the research notes are checked literally.
"""

from __future__ import annotations

import functools

import oracles
import pytest
from helpers_models import gqa_model, mask_pairs, slot_flops, unit_of, unit_pairs, unit_slot_flops

# Small, deliberately unequal dimensions so that a swapped dimension changes the number.
DIMS = dict(hidden=6, heads=4, kv_heads=2, head_dim=3)
LENGTHS = range(1, 65)


def core_flops(attended_pairs: int) -> int:
    """QK^T plus PV over the attended pairs: 2 FLOPs per multiply-add, per head."""
    heads, head_dim = DIMS["heads"], DIMS["head_dim"]
    return 2 * heads * (head_dim + head_dim) * attended_pairs


@functools.lru_cache(maxsize=None)
def brute_pairs(kind: str, s: int, size: int = 0) -> int:
    """Pairs of an explicit boolean mask: ``kind`` is causal, sliding or chunked."""
    if kind == "causal":
        return oracles.pairs(oracles.causal_mask(s))
    if kind == "sliding":
        return oracles.pairs(oracles.sliding_window_mask(s, size))
    return oracles.pairs(oracles.chunked_mask(s, size))


def sliding(window: int, **dims: int):
    return gqa_model(**{**DIMS, **dims}, flags={"sliding_window"}, window=window)


def chunked(chunk: int, **dims: int):
    return gqa_model(**{**DIMS, **dims}, flags={"chunked"}, chunk=chunk)


def causal(**dims: int):
    return gqa_model(**{**DIMS, **dims})


@functools.lru_cache(maxsize=None)
def planned(registry, flag: str, size: int):
    """The plan of a one-layer model with mask *flag* and window/chunk *size*, built once.

    Planning is the slow step, and the plan does not depend on the sequence length, so the
    brute-force sweeps plan each size once and evaluate it at every length.
    """
    model = sliding(size) if flag == "sliding_window" else chunked(size)
    return unit_of(registry, model)


# -- every small case against brute force ------------------------------------------------------


@pytest.mark.parametrize("s", LENGTHS)
def test_full_causal_core_matches_brute_force_mask(registry, s):
    """Default mask (no flag): core FLOPs and pairs equal the explicit causal mask."""
    model = causal()
    assert registry.select(model).kinds[0].patterns["attention.mask"] == "full_causal"
    assert mask_pairs(registry, model, s) == brute_pairs("causal", s)
    assert slot_flops(registry, model, "attention.core", s) == core_flops(brute_pairs("causal", s))


@pytest.mark.parametrize("s", LENGTHS)
def test_sliding_window_core_matches_brute_force_mask_for_every_window(registry, s):
    """Flag sliding_window, window 1..s+3: core FLOPs equal the explicit sliding-window mask."""
    for window in range(1, s + 4):
        unit = planned(registry, "sliding_window", window)
        assert unit.patterns["attention.mask"] == "sliding_window"
        expected = brute_pairs("sliding", s, window)
        assert unit_pairs(unit, s) == expected, (s, window)
        assert unit_slot_flops(unit, "attention.core", s) == core_flops(expected), (s, window)


@pytest.mark.parametrize("s", LENGTHS)
def test_chunked_core_matches_brute_force_mask_for_every_chunk(registry, s):
    """Flag chunked, chunk 1..s+3: core FLOPs equal the explicit chunked mask."""
    for chunk in range(1, s + 4):
        unit = planned(registry, "chunked", chunk)
        assert unit.patterns["attention.mask"] == "chunked"
        expected = brute_pairs("chunked", s, chunk)
        assert unit_pairs(unit, s) == expected, (s, chunk)
        assert unit_slot_flops(unit, "attention.core", s) == core_flops(expected), (s, chunk)


@pytest.mark.parametrize("s", LENGTHS)
def test_evaluate_forward_matches_matmul_oracle_for_every_mask(registry, s):
    """The full ``reg.evaluate(...).forward`` path equals the matmul-by-matmul oracle layer."""
    def oracle(attended_pairs: int) -> int:
        return oracles.attention_layer_flops(s=s, **DIMS, attended_pairs=attended_pairs)

    assert registry.evaluate(causal(), seq_len=s).forward == oracle(brute_pairs("causal", s))
    for size in range(1, s + 4):
        got_sliding = registry.evaluate(sliding(size), seq_len=s)
        assert got_sliding.forward == oracle(brute_pairs("sliding", s, size)), (s, size)
        assert got_sliding.layers[0].patterns["attention.mask"] == "sliding_window"
        got_chunked = registry.evaluate(chunked(size), seq_len=s)
        assert got_chunked.forward == oracle(brute_pairs("chunked", s, size)), (s, size)
        assert got_chunked.layers[0].patterns["attention.mask"] == "chunked"


# -- sliding window and chunk against full causal ----------------------------------------------


@pytest.mark.parametrize("s", [1, 2, 3, 7, 64, 100, 4096])
def test_sliding_window_reduces_flops_only_when_window_is_shorter_than_sequence(registry, s):
    """window < s drops pairs (strictly fewer FLOPs); window >= s is exactly full causal."""
    full = registry.evaluate(causal(), seq_len=s).forward
    windows = sorted({1, 2, s // 2 or 1, s - 1 or 1, s, s + 1, 2 * s})
    for window in windows:
        got = registry.evaluate(sliding(window), seq_len=s).forward
        if window < s:
            assert got < full, (s, window)
        else:
            assert got == full, (s, window)


@pytest.mark.parametrize("s", [1, 2, 3, 7, 64, 100, 4096])
def test_chunked_reduces_flops_only_when_chunk_is_shorter_than_sequence(registry, s):
    """chunk < s drops pairs (strictly fewer FLOPs); chunk >= s is exactly full causal."""
    full = registry.evaluate(causal(), seq_len=s).forward
    for chunk in sorted({1, 2, s // 2 or 1, s - 1 or 1, s, s + 1, 2 * s}):
        got = registry.evaluate(chunked(chunk), seq_len=s).forward
        if chunk < s:
            assert got < full, (s, chunk)
        else:
            assert got == full, (s, chunk)


@pytest.mark.parametrize("s", [1, 17, 4096, 131072, 10**6])
def test_infinite_window_and_chunk_equal_full_causal(registry, s):
    """A window or chunk far beyond any sequence (10**9) is full causal, including the core."""
    full = registry.evaluate(causal(), seq_len=s).forward
    assert registry.evaluate(sliding(10**9), seq_len=s).forward == full
    assert registry.evaluate(chunked(10**9), seq_len=s).forward == full
    assert mask_pairs(registry, sliding(10**9), s) == s * (s + 1) // 2


@pytest.mark.parametrize("s", [1, 2, 5, 64, 4096, 10**6])
def test_window_of_one_and_chunk_of_one_attend_only_to_self(registry, s):
    """window = 1 and chunk = 1 let each query see only itself: exactly s pairs."""
    assert mask_pairs(registry, sliding(1), s) == s
    assert mask_pairs(registry, chunked(1), s) == s
    assert slot_flops(registry, sliding(1), "attention.core", s) == core_flops(s)


# -- realistic lengths against a per-query sum ---------------------------------------------------


@pytest.mark.parametrize("s", [4096, 4097, 8191])
@pytest.mark.parametrize("window", [128, 512, 1000, 1024, 4096, 8192])
def test_sliding_window_pairs_at_realistic_lengths_match_per_query_sum(registry, s, window):
    """Query q sees min(q + 1, W) keys (itself and the W - 1 before it)."""
    expected = sum(min(q + 1, window) for q in range(s))
    assert mask_pairs(registry, sliding(window), s) == expected
    assert slot_flops(registry, sliding(window), "attention.core", s) == core_flops(expected)


@pytest.mark.parametrize("s", [4096, 4097, 8191])
@pytest.mark.parametrize("chunk", [128, 512, 1000, 1024, 4096, 8192])
def test_chunked_pairs_at_realistic_lengths_match_per_query_sum(registry, s, chunk):
    """Query q sees the keys from the start of its chunk to itself: q mod C + 1 keys."""
    expected = sum(q % chunk + 1 for q in range(s))
    assert mask_pairs(registry, chunked(chunk), s) == expected
    assert slot_flops(registry, chunked(chunk), "attention.core", s) == core_flops(expected)


# -- the worked numbers of the research notes -----------------------------------------------------


@pytest.mark.parametrize(
    ("s", "window", "expected"),
    [
        (2048, 512, 917_760),
        (4096, 1024, 3_670_528),
        (4096, 128, 516_160),
        (32768, 1024, 33_030_656),
        (131072, 4096, 528_484_352),
    ],
)
def test_sliding_window_pairs_match_research_notes(registry, s, window, expected):
    """Worked examples from the research notes (sliding window, window counts the query)."""
    assert mask_pairs(registry, sliding(window), s) == expected


@pytest.mark.parametrize(("s", "chunk", "expected"), [(2048, 256, 263_168), (32768, 8192, 134_234_112)])
def test_chunked_pairs_match_research_notes(registry, s, chunk, expected):
    """Worked examples from the research notes (Llama 4 chunked attention)."""
    assert mask_pairs(registry, chunked(chunk), s) == expected
