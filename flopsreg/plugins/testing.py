"""Helpers for plugin authors: check a mask pattern against the mask it describes.

A mask pattern's formula counts attended (query, key) pairs; the independent computation is
the mask itself, enumerated for small sizes. Describe the mask as a predicate and let
:func:`check_mask_pattern` compare the two over every length and parameter set you give, and
:func:`check_prefix_form` check the form the engine derives for ``seq_len`` new tokens after
``cached`` ones (serving with a KV cache) against the same mask with a cached prefix.

>>> from flopsreg.patterns.sliding_window import SLIDING_WINDOW
>>> check_mask_pattern(
...     SLIDING_WINDOW,
...     lambda q, k, p: k <= q and q - k < p["window"],
...     params=[{"window": w} for w in range(1, 12)],
...     max_len=24,
... )
>>> check_prefix_form(
...     SLIDING_WINDOW,
...     lambda q, k, p: k <= q and q - k < p["window"],
...     params=[{"window": w} for w in range(1, 12)],
...     max_len=16,
...     max_cached=16,
... )
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import sympy

from flopsreg.declarations.pattern import Pattern
from flopsreg.formula.cached_prefix import difference
from flopsreg.formula.exact import compile_exact

__all__ = ["check_mask_pattern", "check_prefix_form", "count_pairs", "count_prefix_pairs"]

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


def count_prefix_pairs(visible: Visible, seq_len: int, cached: int, params: Mapping[str, int]) -> int:
    """Pairs (q, k) with q one of the *seq_len* new queries after *cached* cached tokens and k
    any of the ``cached + seq_len`` keys, for which ``visible(q, k, params)`` holds."""
    end = cached + seq_len
    return sum(1 for q in range(cached, end) for k in range(end) if visible(q, k, params))


def check_prefix_form(
    pattern: Pattern,
    visible: Visible,
    *,
    params: Iterable[Mapping[str, int]],
    max_len: int = 24,
    max_cached: int = 24,
    quantities: Mapping[sympy.Symbol, sympy.Expr] | None = None,
) -> None:
    """Assert the cached-prefix form of *pattern* (its ``pairs`` extended by the engine's
    ``"difference"`` rule) counts exactly the pairs *visible* allows for the new queries, for
    1..max_len new tokens after 0..max_cached cached ones. Raises AssertionError at the first
    difference."""
    if pattern.produces != "pairs":
        raise ValueError(f"pattern {pattern.name!r} produces {pattern.produces!r}, not pairs")
    formula = compile_exact(difference(pattern.formula.xreplace(dict(quantities or {}))))
    for values in params:
        end = max_len + max_cached
        # seen[q][n]: keys 0..n-1 that query q sees; every count below is a sum over the mask
        seen = []
        for q in range(end):
            row = [0]
            for k in range(end):
                row.append(row[-1] + bool(visible(q, k, values)))
            seen.append(row)
        for cached in range(max_cached + 1):
            for seq_len in range(1, max_len + 1):
                expected = sum(seen[q][cached + seq_len] for q in range(cached, cached + seq_len))
                got = formula({**values, "seq_len": seq_len, "cached": cached})
                if got != expected:
                    raise AssertionError(
                        f"{pattern.name}: {got} pairs for seq_len={seq_len} new tokens after cached={cached}, "
                        f"{dict(values)}; the mask has {expected}"
                    )
