"""Causal attention within chunks that look back: the s positions are cut into chunks of C from
position 0, and each query sees the keys of its own chunk and of the B chunks before it, up to
itself (Reformer's LocalSelfAttention with a causal mask).

A query q in chunk i = floor(q / C) sees q - max(0, (i - B) C) + 1 keys. A full chunk i holds C
queries: C(C + 1)/2 pairs within it and min(i, B) C^2 to the chunks before; the last, partial chunk
of R = s - nC queries (n = floor(s / C)) has R(R + 1)/2 + min(n, B) C R. The sum of min(i, B) over
the n full chunks is m(m - 1)/2 + B(n - m) with m = min(n, B + 1).
"""

import sympy

from flopsreg.plugin import Param, Pattern, hookimpl, s

LOCAL_CHUNK = Param(name="local_chunk", latex=r"C_{\mathrm{l}}", meaning="positions of one local-attention chunk (local_attn_chunk_length)")
CHUNKS_BEFORE = Param(
    name="chunks_before", latex=r"B_{\mathrm{l}}", meaning="earlier chunks each local-attention chunk also sees (local_num_chunks_before)", minimum=0
)

_C, _B = LOCAL_CHUNK.symbol, CHUNKS_BEFORE.symbol
_FULL = sympy.floor(s / _C)
_REST = s - _FULL * _C
_LOOKED_BACK = sympy.Min(_FULL, _B + 1)

LOCAL_CHUNKS = Pattern(
    name="local_chunks",
    slot="attention.mask",
    flags={"local_chunks"},
    precedence=14,
    params=(LOCAL_CHUNK, CHUNKS_BEFORE),
    produces="pairs",
    formula=_FULL * _C * (_C + 1) / 2
    + (_LOOKED_BACK * (_LOOKED_BACK - 1) / 2 + _B * (_FULL - _LOOKED_BACK)) * _C**2
    + _REST * (_REST + 1) / 2
    + sympy.Min(_FULL, _B) * _C * _REST,
    latex=(
        r"n\frac{C_{\mathrm{l}}(C_{\mathrm{l}}+1)}{2} + \frac{r(r+1)}{2} + u\,C_{\mathrm{l}},"
        r"\ n = \lfloor s/C_{\mathrm{l}} \rfloor,\ r = s - nC_{\mathrm{l}},\ u = T C_{\mathrm{l}} + \min(n, B_{\mathrm{l}})\,r,"
        r"\ T = \sum_{i<n} \min(i, B_{\mathrm{l}})"
    ),
    provides={"kv_tokens": sympy.Min(s, (_B + 1) * _C)},  # what a query can see: its chunk and the B before, (B + 1) C keys at most
    summary="causal within chunks of C that also see the B chunks before: a query sees its chunk and B more, up to itself",
    reference="Kitaev et al. 2020, 'Reformer: The Efficient Transformer' (local attention); Hugging Face LocalSelfAttention (transformers 5.24)",
)


@hookimpl
def flopsreg_register_patterns():
    return [LOCAL_CHUNKS]
