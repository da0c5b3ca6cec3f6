"""Exact-integer code from sympy expressions, compiled once per expression.

``sympy.lambdify`` prints ``n*(n+1)/2`` with float division. Here an expression becomes a formula
tree (:mod:`flopsreg.formula.tree`) with exact division instead (an ``int`` when it divides, a
``Fraction`` otherwise), integer division for ``floor`` of a quotient and ``%`` for ``Mod``, so
results stay exact at any size; the runtime writes and compiles the code. A result that is not an
integer is a formula bug and raises :class:`~flopsreg.errors.PatternError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import attrs
import sympy
from sympy.printing.numpy import NumPyPrinter

from flopsreg.errors import PatternError
from flopsreg.formula.tree import Formula

__all__ = ["CompiledFormula", "compile_exact", "compile_numpy", "tree_of", "trial_function"]


def _combined(expression: sympy.Expr) -> sympy.Expr:
    """Each sum over one common denominator, so evaluation divides once and stays in ints."""
    if isinstance(expression, sympy.Piecewise):
        return sympy.Piecewise(*((_combined(e), c) for e, c in expression.args))
    if expression.has(sympy.Piecewise):
        return expression.func(*(_combined(arg) for arg in expression.args)) if expression.args else expression
    return sympy.together(expression)


_RELATIONS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_N_ARY = {sympy.Add: "add", sympy.Min: "min", sympy.Max: "max", sympy.And: "and", sympy.Or: "or"}


class _Tree:
    """A sympy expression as a formula tree (:mod:`flopsreg.formula.tree`) with no float anywhere:
    rationals and denominators become exact divisions, ``floor``/``ceiling`` of a quotient integer
    divisions, a ``Piecewise`` nested conditionals."""

    def __init__(self, argnames: tuple[str, ...]) -> None:
        self.index = {name: i for i, name in enumerate(argnames)}

    def __call__(self, expr: Any) -> Any:
        if expr.is_Integer:
            return int(expr)
        if expr.is_Rational:
            return ["div", int(expr.p), int(expr.q)]
        if expr.is_Float:
            raise PatternError(f"formula contains the float {expr}; use sympy.Rational for exact results")
        if expr.is_Symbol:
            return ["arg", self.index[expr.name]]
        if expr is sympy.true or expr is sympy.false:
            return [str(expr).lower()]
        if expr.is_Mul:
            numerator, denominator = sympy.fraction(expr, exact=True)
            if denominator != 1:
                return ["div", self(numerator), self(denominator)]
            return ["mul", *map(self, expr.args)]
        if expr.is_Pow:
            base, exp = expr.as_base_exp()
            if not exp.is_Integer:
                raise PatternError(f"cannot evaluate {expr} exactly: only integer powers are supported")
            if exp < 0:
                return ["div", 1, self(base**-exp)]
            return ["pow", self(base), int(exp)]
        if isinstance(expr, (sympy.floor, sympy.ceiling)):
            numerator, denominator = sympy.fraction(sympy.together(expr.args[0]), exact=True)
            operation = "floordiv" if isinstance(expr, sympy.floor) else "ceildiv"
            return [operation, self(numerator), self(denominator)]
        if isinstance(expr, sympy.Mod):
            return ["mod", *map(self, expr.args)]
        if isinstance(expr, sympy.Piecewise):
            tree: Any = ["undefined"]
            for value, condition in reversed(expr.args):
                tree = self(value) if condition is sympy.true else ["if", self(condition), self(value), tree]
            return tree
        if isinstance(expr, sympy.core.relational.Relational) and expr.rel_op in _RELATIONS:
            return [_RELATIONS[expr.rel_op], self(expr.lhs), self(expr.rhs)]
        if isinstance(expr, sympy.ITE):  # a condition that is itself a choice (a Piecewise compared with another)
            return ["if", *map(self, expr.args)]
        if isinstance(expr, sympy.Not):
            return ["not", self(expr.args[0])]
        if isinstance(expr, sympy.Abs):
            return ["abs", self(expr.args[0])]
        operation = next((name for kind, name in _N_ARY.items() if isinstance(expr, kind)), None)
        if operation is None:
            raise PatternError(f"cannot evaluate {expr} exactly: {type(expr).__name__} has no exact integer form")
        return [operation, *map(self, expr.args)]


@attrs.frozen
class CompiledFormula(Formula):
    """A sympy expression compiled to exact Python; call with one int per free symbol."""

    expression: sympy.Expr = attrs.field(kw_only=True)


def _argnames(expression: sympy.Expr) -> tuple[str, ...]:
    return tuple(sorted(sym.name for sym in expression.free_symbols))


def _compiled(expression: sympy.Expr, written: sympy.Expr) -> CompiledFormula:
    """*expression* compiled from the tree of *written* (itself, or an equal form of it)."""
    argnames = _argnames(expression)
    text = str(expression)  # printing a large sum sorts its terms: once
    try:
        tree = _Tree(argnames)(written)
        return CompiledFormula.from_tree(text, argnames, tree, expression=expression)  # type: ignore[return-value]
    except (RecursionError, ValueError, SyntaxError, MemoryError) as exc:
        if isinstance(exc, PatternError):
            raise
        raise PatternError(f"cannot compile formula {text[:200]}: {type(exc).__name__}: {exc}") from None


def tree_of(expression: sympy.Basic) -> tuple[tuple[str, ...], Any]:
    """(argument names, formula tree) of *expression* as written (a condition too): what the
    manifest stores of a built-in's formulas, for composition without sympy."""
    argnames = _argnames(expression)
    return argnames, _Tree(argnames)(expression)


@functools.lru_cache(maxsize=4096)
def compile_exact(expression: sympy.Expr) -> CompiledFormula:
    """Compile *expression* once; later calls with an equal expression reuse the code."""
    return _compiled(expression, _combined(expression))


@functools.lru_cache(maxsize=4096)
def trial_function(expression: sympy.Expr) -> tuple[tuple[str, ...], Callable[..., int | Fraction]]:
    """(argument names, exact function) of *expression*, compiled cheaply for a few calls.

    For the registry's load-time trial evaluation: the same exact code as :func:`compile_exact`,
    without the common denominator, which pays off only over many calls.
    """
    compiled = _compiled(expression, expression)
    return compiled.argnames, compiled.function


class _WherePrinter(NumPyPrinter):
    """numpy code in which a Piecewise is nested ``numpy.where``: what one writes by hand, where
    sympy's ``numpy.select`` builds every branch and condition as separate arrays first."""

    def _print_Piecewise(self, expr: sympy.Piecewise) -> str:
        *pairs, (last, condition) = expr.args
        code = self._print(last) if condition == sympy.true else f"numpy.where({self._print(condition)}, {self._print(last)}, numpy.nan)"
        for value, condition in reversed(pairs):
            code = f"numpy.where({self._print(condition)}, {self._print(value)}, {code})"
        return code


@functools.lru_cache(maxsize=256)
def compile_numpy(expression: sympy.Expr, argument: sympy.Symbol) -> Callable[[Any], Any]:
    """*expression* as one vectorised numpy function of *argument* (float64 arrays)."""
    return sympy.lambdify(argument, expression, modules="numpy", printer=_WherePrinter({"fully_qualified_modules": False}))
