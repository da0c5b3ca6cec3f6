"""The "rectangle" cached rule: s new rows after c cached ones, each as wide as the context,
against a brute-force count of (new token, key) pairs."""

import sympy

from flopsreg.declarations.symbols import cached as c
from flopsreg.declarations.symbols import s
from flopsreg.formula.cached_prefix import rectangle
from flopsreg.formula.exact import compile_exact

W = sympy.Symbol("W", integer=True, positive=True)


def test_full_context_rows():
    assert sympy.expand(rectangle(s * s) - s * (c + s)) == 0


def test_window_rows_match_a_brute_force_count():
    """Each of the new tokens sees min(context, W) keys, the context being every token so far."""
    form = compile_exact(rectangle(s * sympy.Piecewise((s, s <= W), (W, True))))
    for window in range(1, 9):
        for prefix in range(0, 12):
            for new in range(1, 12):
                brute = sum(min(prefix + new, window) for _ in range(new))
                assert form({"seq_len": new, "cached": prefix, "W": window}) == brute, (window, prefix, new)
