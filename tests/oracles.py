"""Independent oracles: attention masks as explicit boolean matrices, counted by brute force.

Nothing here imports flopsreg; each mask follows the semantics of the real implementation it
names (Hugging Face ``masking_utils``), so the tests compare formulas against enumeration.
"""

from __future__ import annotations


def causal_mask(s: int) -> list[list[bool]]:
    """Query q sees key k iff k <= q."""
    return [[k <= q for k in range(s)] for q in range(s)]


def sliding_window_mask(s: int, window: int) -> list[list[bool]]:
    """Causal, and key k visible to query q iff q - k < window (the query counts as one key)."""
    return [[k <= q and q - k < window for k in range(s)] for q in range(s)]


def chunked_mask(s: int, chunk: int) -> list[list[bool]]:
    """Causal, and query and key in the same chunk; chunks start at 0, chunk, 2*chunk, ..."""
    return [[k <= q and k // chunk == q // chunk for k in range(s)] for q in range(s)]


def causal_pairs(s: int) -> int:
    """Query q sees keys 0..q: a sum over queries, without building the mask."""
    return s * (s + 1) // 2


def window_pairs(s: int, window: int) -> int:
    """Query q sees the last ``window`` keys, itself included: min(q + 1, W) keys."""
    return sum(min(q + 1, window) for q in range(s))


def chunk_pairs(s: int, chunk: int) -> int:
    """Query q sees keys from the start of its chunk (aligned at 0) to itself: q % C + 1 keys."""
    return sum(q % chunk + 1 for q in range(s))


def pairs(mask: list[list[bool]]) -> int:
    """The number of (query, key) pairs the mask lets through."""
    return sum(sum(row) for row in mask)


def attention_layer_flops(
    *, s: int, hidden: int, heads: int, kv_heads: int, head_dim: int, attended_pairs: int
) -> int:
    """One GQA attention layer's forward FLOPs, written out matmul by matmul (2 per multiply-add)."""
    q = 2 * s * hidden * (heads * head_dim)
    k = 2 * s * hidden * (kv_heads * head_dim)
    v = 2 * s * hidden * (kv_heads * head_dim)
    scores = 2 * heads * head_dim * attended_pairs  # QK^T over attended pairs
    weighted = 2 * heads * head_dim * attended_pairs  # PV over attended pairs
    out = 2 * s * (heads * head_dim) * hidden
    return q + k + v + scores + weighted + out


def prefix_pair_table(mask: list[list[bool]]) -> list[list[int]]:
    """``table[c][c + n]``: pairs of the mask for the n queries c .. c+n-1 against keys 0 .. c+n-1
    (n new tokens after c cached ones), for every c < c + n <= len(mask), by summing the mask."""
    size = len(mask)
    seen = [[0] * (size + 1) for _ in range(size)]  # seen[q][e]: keys 0..e-1 that query q sees
    for q in range(size):
        for k in range(size):
            seen[q][k + 1] = seen[q][k] + mask[q][k]
    table = [[0] * (size + 1) for _ in range(size + 1)]
    for end in range(1, size + 1):
        total = 0
        for start in range(end - 1, -1, -1):
            total += seen[start][end]
            table[start][end] = total
    return table
