"""Cached-prefix forms: a unit's FLOPs for ``seq_len`` new tokens after ``cached`` ones.

Derived from the selected patterns' formulas, generically: each :class:`~flopsreg.Quantity`
says how it extends over a cached prefix (``"fixed"``; ``"difference"``: F(c + s) - F(c); or
``"rectangle"``: s G(c + s) where F = s G), and every FLOPs formula must be a sum of terms
proportional to ``seq_len`` (token-linear work on the new tokens) or to one such extended quantity. Nothing here names a quantity or slot.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import sympy

from flopsreg.declarations.symbols import cached, s

__all__ = ["PrefixForms", "difference", "prefix_forms", "rectangle"]


@attrs.frozen
class PrefixForms:
    """The cached-prefix form of each FLOPs slot of a unit, or why there is none."""

    terms: Mapping[str, sympy.Expr]  # slot -> FLOPs of seq_len new tokens after cached ones
    fault: str | None  # why the unit has no cached-prefix form (None: it has one)


def difference(expr: sympy.Expr) -> sympy.Expr:
    """The ``"difference"`` rule: *expr* of ``seq_len`` tokens as the share of ``seq_len`` new
    tokens after ``cached`` ones, F(cached + seq_len) - F(cached)."""
    return expr.xreplace({s: s + cached}) - expr.xreplace({s: cached})


def rectangle(expr: sympy.Expr) -> sympy.Expr:
    """The ``"rectangle"`` rule: *expr* = s G(s), s rows of G(s) keys each, as the share of
    ``seq_len`` new rows after ``cached`` ones when every row is as wide as the last: s G(c + s)."""
    return s * sympy.piecewise_fold(expr / s).xreplace({s: s + cached})


EXTENSIONS = {"difference": difference, "rectangle": rectangle}  # the rules that extend a quantity over a prefix


def _resolve(expr: sympy.Expr, values: Mapping[sympy.Symbol, sympy.Expr]) -> sympy.Expr:
    """*expr* with *values* substituted until none is left (quantities may use quantities)."""
    for _ in range(len(values) + 1):
        expr = expr.xreplace(values)
    return expr


def _is_proportional(expr: sympy.Expr, variables: set[sympy.Symbol]) -> bool:
    """Whether *expr* is a sum of terms each proportional to one of *variables*, with
    coefficients free of all of them (so it counts the new tokens' work, and nothing per pass)."""
    present = [v for v in variables if v in expr.free_symbols]
    slopes = [sympy.diff(expr, v) for v in present]
    if any(slope.free_symbols & variables for slope in slopes):
        return False
    return sympy.expand(expr - sympy.Add(*(v * slope for v, slope in zip(present, slopes)))) == 0


def prefix_forms(
    where: str,
    formulas: Mapping[str, tuple[str, sympy.Expr]],
    quantities: Mapping[sympy.Symbol, tuple[str, str, sympy.Expr]],
    engine: Mapping[sympy.Symbol, sympy.Expr],
) -> PrefixForms:
    """The cached-prefix forms of a unit.

    Args:
        where: the unit, for messages.
        formulas: ``{slot: (pattern name, FLOPs formula)}`` with quantities still as symbols.
        quantities: ``{symbol: (name, cached rule, formula)}`` of the quantities the unit's
            patterns produce.
        engine: ``{symbol: cached-prefix form}`` of quantities the engine computes (blocks).
    """
    full = {q: formula for q, (_, _, formula) in quantities.items()}
    fixed: dict[sympy.Symbol, sympy.Expr] = {}
    extended: dict[sympy.Symbol, sympy.Expr] = dict(engine)
    for q, (name, rule, formula) in quantities.items():
        value = _resolve(formula, full)
        if rule in EXTENSIONS:
            extended[q] = EXTENSIONS[rule](value)
        elif s in value.free_symbols:
            return PrefixForms({}, f"{where}: quantity {name!r} depends on seq_len but declares cached='fixed' "
                               "(declare cached='difference' if its new tokens' share is F(cached + s) - F(cached), "
                               "or cached='rectangle' if it is s G(cached + s) for F = s G)")
        else:
            fixed[q] = value
    variables = {s, *extended}
    terms = {}
    for slot, (pattern, formula) in formulas.items():
        local = _resolve(formula, fixed)
        if not _is_proportional(local, variables):
            return PrefixForms({}, f"{where}, slot {slot}: pattern {pattern!r} is not a sum of terms proportional to "
                               "seq_len or to a cached='difference' or 'rectangle' quantity, so its cost after a cached prefix is unknown")
        terms[slot] = local.xreplace(extended)
    return PrefixForms(terms, None)
