"""Independent counts for the linear-attention and SSM mixers (tests only).

Recurrent minima: the recurrence run on numbers, one token at a time, with every multiply-add
counted where it happens. Chunked forms: the chunked algorithms written out step by step (pad,
split into chunks, each product with its shapes), every multiply-add counted in loops.
"""

from __future__ import annotations

import random


class Counter:
    """Multiply-adds, counted one by one."""

    def __init__(self) -> None:
        self.macs = 0

    def dot(self, a: list[float], b: list[float]) -> float:
        total = 0.0
        for x, y in zip(a, b, strict=True):
            total += x * y
            self.macs += 1
        return total

    def product(self, m: int, k: int, n: int) -> None:
        """An m x k by k x n matrix product, counted entry by entry."""
        for _ in range(m):
            for _ in range(n):
                for _ in range(k):
                    self.macs += 1


def _vector(n: int, rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(n)]


def delta_rule_recurrent_macs(s: int, heads: int, d_k: int, d_v: int, *, per_channel_decay: bool) -> int:
    """Gated DeltaNet (scalar decay) or KDA (per-channel decay), token by token: S is d_k x d_v
    per head; decay S (elementwise), u = S^T k, S += k (beta (v - u))^T, o = S^T q."""
    rng = random.Random(0)
    count = Counter()
    for _ in range(heads):
        state = [[0.0] * d_v for _ in range(d_k)]
        for _ in range(s):
            q, k, v = _vector(d_k, rng), _vector(d_k, rng), _vector(d_v, rng)
            beta = rng.uniform(0, 1)
            decay = _vector(d_k, rng) if per_channel_decay else [rng.uniform(0, 1)] * d_k
            state = [[decay[i] * x for x in row] for i, row in enumerate(state)]  # elementwise
            u = [count.dot([state[i][j] for i in range(d_k)], k) for j in range(d_v)]
            delta = [beta * (v[j] - u[j]) for j in range(d_v)]
            for i in range(d_k):
                for j in range(d_v):
                    state[i][j] += k[i] * delta[j]
                    count.macs += 1
            [count.dot([state[i][j] for i in range(d_k)], q) for j in range(d_v)]  # o = S^T q
    return count.macs


def delta_product_recurrent_macs(s: int, heads: int, d_k: int, d_v: int, steps: int) -> int:
    """Gated Delta Product, token by token: per head a d_k x d_v state S, decayed once per token
    (elementwise), then *steps* Householder steps u = S^T k_i, S += k_i (beta_i (v_i - u))^T, then
    o = S^T q (Megatron-LM ops/gdp: keys, values and betas expanded *steps* times, the decay on the first)."""
    rng = random.Random(0)
    count = Counter()
    for _ in range(heads):
        state = [[0.0] * d_v for _ in range(d_k)]
        for _ in range(s):
            decay = rng.uniform(0, 1)
            state = [[decay * x for x in row] for row in state]  # elementwise
            for _ in range(steps):
                k, v, beta = _vector(d_k, rng), _vector(d_v, rng), rng.uniform(0, 1)
                u = [count.dot([state[i][j] for i in range(d_k)], k) for j in range(d_v)]
                delta = [beta * (v[j] - u[j]) for j in range(d_v)]
                for i in range(d_k):
                    for j in range(d_v):
                        state[i][j] += k[i] * delta[j]
                        count.macs += 1
            q = _vector(d_k, rng)
            [count.dot([state[i][j] for i in range(d_k)], q) for j in range(d_v)]  # o = S^T q
    return count.macs


def mamba2_recurrent_macs(s: int, heads: int, head_dim: int, state_size: int) -> int:
    """Mamba2, token by token: per head a head_dim x state state h; h = exp(dt A) h + dt x B^T
    (elementwise decay, then a rank-1 update), y = h C (+ D x, elementwise)."""
    rng = random.Random(0)
    count = Counter()
    for _ in range(heads):
        h = [[0.0] * state_size for _ in range(head_dim)]
        for _ in range(s):
            x, b, c = _vector(head_dim, rng), _vector(state_size, rng), _vector(state_size, rng)
            dt, decay = rng.uniform(0, 1), rng.uniform(0, 1)
            for p in range(head_dim):
                for n in range(state_size):
                    h[p][n] = decay * h[p][n] + (dt * x[p]) * b[n]
                    count.macs += 1
            [count.dot(h[p], c) for p in range(head_dim)]
    return count.macs


def padded_length(s: int, chunk: int) -> int:
    """s rounded up to whole chunks, by adding chunks."""
    length = 0
    while length < s:
        length += chunk
    return length


def gdn_chunked_macs(s: int, heads: int, d_k: int, d_v: int, chunk: int) -> tuple[int, int]:
    """transformers' torch_chunk_gated_delta_rule, step by step: (multiply-adds of its matmuls,
    multiply-adds of its two unit-lower-triangular solves)."""
    matmuls, solves = Counter(), Counter()
    for _ in range(heads):
        for _ in range(padded_length(s, chunk) // chunk):
            matmuls.product(chunk, d_k, chunk)  # k_beta @ k^T  (the UT system)
            matmuls.product(chunk, d_k, chunk)  # q @ k^T       (intra-chunk attention)
            for width in (d_v, d_k):  # solve_triangular(system, v_beta) and (system, decayed k_beta)
                for _ in range(width):
                    for row in range(chunk):
                        for _ in range(row):  # forward substitution: the unit diagonal needs no division
                            solves.macs += 1
            matmuls.product(chunk, d_k, d_v)  # k_cumdecay @ state
            matmuls.product(chunk, d_k, d_v)  # q @ state
            matmuls.product(chunk, chunk, d_v)  # intra-chunk attention @ v_new
            matmuls.product(d_k, chunk, d_v)  # k^T @ v_new (the state update)
    return matmuls.macs, solves.macs


def kda_chunked_macs(s: int, heads: int, d: int, chunk: int) -> tuple[int, int]:
    """transformers' chunk_kimi_delta_attention, step by step: (multiply-adds of its matmuls,
    multiply-adds of its mul-sum contractions and forward substitution)."""
    matmuls, other = Counter(), Counter()
    for _ in range(heads):
        for _ in range(padded_length(s, chunk) // chunk):
            other.product(chunk, d, chunk)  # A_kk: (k_beta * k * decay).sum(-1)
            for i in range(1, chunk):  # attn[i, :i] += (row[:, None] * sub).sum(-2), sub i x i
                other.product(1, i, i)
            matmuls.product(chunk, chunk, d)  # attn @ v_beta
            matmuls.product(chunk, chunk, d)  # attn @ (k_beta * exp g)
            matmuls.product(chunk, d, d)  # (q exp g) @ state
            other.product(chunk, d, chunk)  # A_qk: (q * k * decay).sum(-1)
            matmuls.product(chunk, d, d)  # k_cumdecay @ state
            matmuls.product(chunk, chunk, d)  # A_qk @ v_new
            matmuls.product(d, chunk, d)  # k^T @ v_new
    return matmuls.macs, other.macs


def mamba2_chunked_macs(s: int, heads: int, head_dim: int, state_size: int, chunk: int) -> int:
    """transformers' Mamba2 torch chunk scan, step by step (every einsum is a counted bmm)."""
    count = Counter()
    chunks = padded_length(s, chunk) // chunk
    for _ in range(heads):
        for _ in range(chunks):
            count.product(chunk, state_size, chunk)  # G = C B^T
            count.product(chunk, chunk, head_dim)  # Y_diag = (G * L) x
            count.product(head_dim, chunk, state_size)  # chunk states: sum_l B_decay x
            count.product(chunk, state_size, head_dim)  # C times the chunk's start state
        count.product(chunks + 1, chunks + 1, head_dim * state_size)  # new_states over all (z, c) chunk pairs
    return count.macs


def mamba1_recurrent_macs(s: int, inner: int, state_size: int) -> tuple[int, int]:
    """Mamba1, token by token: per channel a state of *state_size*; h = exp(dt A) h + (dt B) x
    (one multiply-add per state entry, the decay elementwise), y = h . C. Returns (update, readout)."""
    rng = random.Random(0)
    update, readout = Counter(), Counter()
    for _ in range(inner):
        h = [0.0] * state_size
        for _ in range(s):
            x, dt, decay = rng.uniform(-1, 1), rng.uniform(0, 1), rng.uniform(0, 1)
            b, c = _vector(state_size, rng), _vector(state_size, rng)
            for n in range(state_size):
                h[n] = decay * h[n] + (dt * b[n]) * x
                update.macs += 1
            readout.dot(h, c)
    return update.macs, readout.macs


def rglru_recurrent_macs(s: int, blocks: int, width: int) -> tuple[int, int]:
    """Griffin's RG-LRU, token by token: per block of *width* channels, the input and recurrence
    gates are w x w products of the block's inputs (plus a bias, then a sigmoid: elementwise); per
    channel a = exp(-8 r softplus(Lambda)) and the normalised, gated input are elementwise, then
    h = a h + x~ (one multiply-add). Returns (gates, update)."""
    rng = random.Random(0)
    gates, update = Counter(), Counter()
    h = [[0.0] * width for _ in range(blocks)]
    weights = [[[_vector(width, rng) for _ in range(width)] for _ in range(2)] for _ in range(blocks)]
    for _ in range(s):
        for b in range(blocks):
            x = _vector(width, rng)
            gate_in = [gates.dot(row, x) for row in weights[b][0]]
            gate_rec = [gates.dot(row, x) for row in weights[b][1]]
            for i in range(width):
                decay = 1 / (1 + abs(gate_rec[i]))  # stands for exp(-8 r softplus(Lambda)): elementwise
                h[b][i] = decay * h[b][i] + gate_in[i] * x[i]  # the gated, normalised input is elementwise
                update.macs += 1
    return gates.macs, update.macs


def mlstm_recurrent_macs(s: int, heads: int, d_k: int, d_v: int) -> int:
    """xLSTM's mLSTM, token by token: per head C (d_k x d_v) and n (d_k); C = f C + i k v^T,
    n = f n + i k (the forget decay elementwise), then the readout C^T q and the dot n . q."""
    rng = random.Random(0)
    count = Counter()
    for _ in range(heads):
        c, n = [[0.0] * d_v for _ in range(d_k)], [0.0] * d_k
        for _ in range(s):
            q, k, v = _vector(d_k, rng), _vector(d_k, rng), _vector(d_v, rng)
            forget, gate = rng.uniform(0, 1), rng.uniform(0, 1)
            for a in range(d_k):
                for b in range(d_v):
                    c[a][b] = forget * c[a][b] + (gate * k[a]) * v[b]
                    count.macs += 1
                n[a] = forget * n[a] + gate * k[a]
                count.macs += 1
            [count.dot([c[a][b] for a in range(d_k)], q) for b in range(d_v)]
            count.dot(n, q)
    return count.macs


def mlstm_chunked_macs(s: int, heads: int, d_k: int, d_v: int, chunk: int, piece: int) -> tuple[int, int]:
    """xLSTM's inference path written out: the sequence in pieces of *piece* tokens
    (xLSTMModel.forward), each in floor(n / chunk) chunks by the chunkwise kernel and its last
    n mod chunk tokens by the step kernel. Returns (matmuls, other): the products torch runs as
    matmuls, and the normaliser's sums it runs as elementwise products and reductions (per chunk
    the gated keys summed into n and the rows of the decay-weighted scores; per step i k into n)."""
    matmuls, other = Counter(), Counter()
    for start in range(0, s, piece):
        n = min(piece, s - start)
        for _ in range(heads):
            for _ in range(n // chunk):
                matmuls.product(d_k, chunk, d_v)  # K~^T V into the chunk's C
                other.product(d_k, chunk, 1)  # K~^T 1 into its n
                matmuls.product(chunk, d_k, chunk)  # Q K^T
                matmuls.product(chunk, chunk, d_v)  # (S o D) V
                other.product(chunk, chunk, 1)  # (S o D) 1
                matmuls.product(chunk, d_k, d_v)  # Q~ C
                matmuls.product(chunk, d_k, 1)  # Q~ n
            for _ in range(n % chunk):
                matmuls.product(d_k, 1, d_v)  # k v^T
                other.product(d_k, 1, 1)  # i k into n
                matmuls.product(1, d_k, d_v)  # q C
                matmuls.product(1, d_k, 1)  # q . n
    return matmuls.macs, other.macs


def rwkv4_recurrent_macs(s: int, width: int) -> int:
    """RWKV-4's WKV, token by token as rwkv_linear_attention_cpu runs it, per channel: a numerator
    and a denominator state; out = (num + e^(u+k) v) / (den + e^(u+k)), then num = w num + e^k v,
    den = w den + e^k. The multiply-adds of values into sums: e^(u+k) v and e^k v."""
    rng = random.Random(0)
    count = Counter()
    for _ in range(width):
        num, den = 0.0, 0.0
        decay, bonus = rng.uniform(0, 1), rng.uniform(0, 1)
        for _ in range(s):
            key, value = rng.uniform(-1, 1), rng.uniform(-1, 1)
            now = bonus * key  # e^(u + k), as a product of exponentials: elementwise
            out_num = num + now * value
            count.macs += 1
            _ = out_num / (den + now)
            num = decay * num + key * value  # the decay is elementwise; e^k v into the state
            count.macs += 1
            den = decay * den + key
    return count.macs


def differential_attention_macs(s: int, heads: int, kv_heads: int, head_dim: int) -> int:
    """Differential attention over causal pairs, as DiffLlamaAttention computes it: per head one
    score q . k per pair, then the softmax map weighs the value of its KV head in each of the two
    halves (2 x head_dim per pair); the pairs (h, h + H/2) are then subtracted (elementwise)."""
    rng = random.Random(0)
    count = Counter()
    group = heads // kv_heads
    values = [[_vector(head_dim, rng) for _ in range(s)] for _ in range(kv_heads)]
    for head in range(heads):
        kv = head // group  # repeat_kv after the halves were repeated: head h reads halves of KV head kv mod (kv/2)
        first, second = values[kv % (kv_heads // 2)], values[kv_heads // 2 + kv % (kv_heads // 2)]
        for query in range(s):
            q = _vector(head_dim, rng)
            weights = [count.dot(q, _vector(head_dim, rng)) for _ in range(query + 1)]  # causal keys
            for half in (first, second):
                for j in range(head_dim):
                    count.dot(weights, [half[key][j] for key in range(query + 1)])
    return count.macs
