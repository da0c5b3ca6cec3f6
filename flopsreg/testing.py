"""Helpers for plugin authors: check a mask pattern against the mask it describes.

A mask pattern's formula counts attended (query, key) pairs; the independent computation is
the mask itself, enumerated for small sizes. Describe the mask as a predicate and let
:func:`check_mask_pattern` compare the two over every length and parameter set you give.

>>> from flopsreg.patterns.sliding_window import SLIDING_WINDOW
>>> check_mask_pattern(
...     SLIDING_WINDOW,
...     lambda q, k, p: k <= q and q - k < p["window"],
...     params=[{"window": w} for w in range(1, 12)],
...     max_len=24,
... )
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import sympy

from flopsreg.compile import compile_exact
from flopsreg.pattern import Pattern

__all__ = ["check_mask_pattern", "count_pairs"]

Visible = Callable[[int, int, Mapping[str, int]], bool]


def count_pairs(visible: Visible, seq_len: int, params: Mapping[str, int]) -> int:
    """Pairs (q, k) of one sequence for which ``visible(q, k, params)`` holds."""
    return sum(1 for q in range(seq_len) for k in range(seq_len) if visible(q, k, params))


def check_mask_pattern(
    pattern: Pattern,
    visible: Visible,
    *,
    params: Iterable[Mapping[str, int]],
    max_len: int = 40,
    quantities: Mapping[sympy.Symbol, sympy.Expr] | None = None,
) -> None:
    """Assert *pattern* counts exactly the pairs *visible* allows, for lengths 1..max_len.

    *quantities* gives the quantities the formula uses (``{symbol: formula}``), as the patterns
    that produce them do. Raises AssertionError naming the first length and parameters where
    they differ.
    """
    if pattern.produces != "pairs":
        raise ValueError(f"pattern {pattern.name!r} produces {pattern.produces!r}, not pairs")
    formula = compile_exact(pattern.formula.xreplace(dict(quantities or {})))
    for values in params:
        for seq_len in range(1, max_len + 1):
            expected = count_pairs(visible, seq_len, values)
            got = formula({**values, "seq_len": seq_len})
            if got != expected:
                raise AssertionError(
                    f"{pattern.name}: {got} pairs at seq_len={seq_len}, {dict(values)}; the mask has {expected}"
                )
