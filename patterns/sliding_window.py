"""Sliding-window causal attention: each query sees the last W keys, itself included."""

import sympy

from flopsreg.plugin import Param, Pattern, hookimpl, s

WINDOW = Param(
    name="window",
    latex="W",
    meaning="keys a query sees in a sliding window, itself included (Hugging Face sliding_window)",
)
W = WINDOW.symbol

SLIDING_WINDOW = Pattern(
    name="sliding_window",
    slot="attention.mask",
    flags={"sliding_window"},
    precedence=20,
    produces="pairs",
    params=(WINDOW,),
    # Query q sees min(q + 1, W) keys: a causal triangle until the window fills, then W each.
    formula=sympy.Piecewise(
        (s * (s + 1) / 2, s <= W),
        (W * (W + 1) / 2 + (s - W) * W, True),
    ),
    provides={"kv_tokens": sympy.Min(s, W)},  # later queries see only the last W keys: a layer keeps at most W
    # m = min(s, W): the triangle while the window fills, then W pairs for each later query.
    latex=r"\frac{m(m+1)}{2} + (s - m)\,W,\ m = \min(s, W)",
    summary="key k visible to query q iff 0 <= q - k < W: s(s+1)/2 pairs if s <= W, else W(W+1)/2 + (s-W)W",
    reference=(
        "Beltagy et al. 2020, Longformer; Jiang et al. 2023, Mistral 7B; Hugging Face "
        "transformers masking_utils (sliding_window counts the query itself)"
    ),
)


@hookimpl
def flopsreg_register_patterns():
    return [SLIDING_WINDOW]
