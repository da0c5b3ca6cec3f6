"""A third-party pattern plugin: a sliding window plus S "attention sink" tokens.

Query q sees key k iff k <= q and (q - k < W or k < S) (Xiao et al. 2023, StreamingLLM).

Derivation of the pair count of one sequence of s tokens. Query q sees min(q + 1, W) keys of
its window, plus the sink keys that lie before the window: k < S and k <= q - W, i.e.
max(0, min(S, q - W + 1)) more. The window part sums to the sliding-window count. For the sink
part put n = s - W: the queries q = W .. s - 1 add min(S, t) for t = 1 .. n, which is
n(n + 1)/2 while n <= S and S(S + 1)/2 + (n - S) S after that. So

    s <= W:          s(s + 1)/2
    s <= W + S:      W(W + 1)/2 + (s - W) W + (s - W)(s - W + 1)/2
    otherwise:       W(W + 1)/2 + (s - W) W + S(S + 1)/2 + (s - W - S) S
"""

import sympy

import flopsreg
from flopsreg.declarations.symbols import s
from flopsreg.patterns.sliding_window import WINDOW

SINKS = flopsreg.Param(name="sinks", latex="S", meaning="leading tokens every query sees", minimum=0)
W, S = WINDOW.symbol, SINKS.symbol
_n = s - W

SINK_WINDOW = flopsreg.Pattern(
    name="sink_window",
    slot="attention.mask",
    flags={"sliding_window", "sinks"},
    precedence=25,
    produces="pairs",
    params=(WINDOW, SINKS),
    formula=sympy.Piecewise(
        (s * (s + 1) / 2, s <= W),
        (W * (W + 1) / 2 + _n * W + _n * (_n + 1) / 2, s <= W + S),
        (W * (W + 1) / 2 + _n * W + S * (S + 1) / 2 + (_n - S) * S, True),
    ),
    summary="sliding window of W keys plus the first S tokens, which every query sees",
    reference="Xiao et al. 2023, 'Efficient Streaming Language Models with Attention Sinks'",
)


@flopsreg.hookimpl
def flopsreg_register_patterns():
    return [SINK_WINDOW]
