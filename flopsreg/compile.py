"""Exact-integer Python code from sympy expressions, compiled once per expression.

``sympy.lambdify`` prints ``n*(n+1)/2`` with float division. This printer emits exact
division instead (an ``int`` when it divides, a ``Fraction`` otherwise), ``//`` for ``floor``
of a quotient and ``%`` for ``Mod``, so results stay exact at any size. A result that is not
an integer is a formula bug and raises :class:`~flopsreg.errors.PatternError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from fractions import Fraction

import attrs
import sympy
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from flopsreg.errors import PatternError
from flopsreg.runtime import Formula, run_source

__all__ = ["CompiledFormula", "compile_exact", "compile_numpy", "trial_function"]


def _combined(expression: sympy.Expr) -> sympy.Expr:
    """Each sum over one common denominator, so evaluation divides once and stays in ints."""
    if isinstance(expression, sympy.Piecewise):
        return sympy.Piecewise(*((_combined(e), c) for e, c in expression.args))
    if expression.has(sympy.Piecewise):
        return expression.func(*(_combined(arg) for arg in expression.args)) if expression.args else expression
    return sympy.together(expression)


class _ExactPrinter(PythonCodePrinter):
    """Python code with no float anywhere: rationals become ``_exdiv`` calls."""

    def doprint(self, expr: sympy.Expr) -> str:  # type: ignore[override]
        """One expression, no assignments: CodePrinter.doprint would import sympy.codegen first,
        a sixth of the command line's start-up, for features a formula never uses."""
        try:
            return self._print(expr)
        except NotImplementedError as exc:  # strict printers refuse functions Python lacks
            raise PatternError(f"cannot evaluate {expr} exactly: {str(exc).splitlines()[0]}") from None

    def _print_Rational(self, expr: sympy.Rational) -> str:
        return f"_exdiv({expr.p}, {expr.q})"

    def _print_Mul(self, expr: sympy.Mul) -> str:
        numerator, denominator = sympy.fraction(expr, exact=True)
        if denominator == 1:
            return super()._print_Mul(expr)
        return f"_exdiv({self._print(numerator)}, {self._print(denominator)})"

    def _print_Pow(self, expr: sympy.Pow, rational: bool = False) -> str:
        base, exp = expr.as_base_exp()
        if exp.is_Integer and exp < 0:
            return f"_exdiv(1, {self._print(base ** -exp)})"
        if not exp.is_Integer or exp < 0:
            raise PatternError(f"cannot evaluate {expr} exactly: only integer powers are supported")
        return f"({self._print(base)})**{exp}"

    def _print_floor(self, expr: sympy.floor) -> str:
        numerator, denominator = sympy.fraction(sympy.together(expr.args[0]), exact=True)
        return f"(({self._print(numerator)}) // ({self._print(denominator)}))"

    def _print_ceiling(self, expr: sympy.ceiling) -> str:
        numerator, denominator = sympy.fraction(sympy.together(expr.args[0]), exact=True)
        return f"(-((-({self._print(numerator)})) // ({self._print(denominator)})))"

    def _print_Mod(self, expr: sympy.Mod) -> str:
        a, b = expr.args
        return f"(({self._print(a)}) % ({self._print(b)}))"

    def _print_Float(self, expr: sympy.Float) -> str:
        raise PatternError(f"formula contains the float {expr}; use sympy.Rational for exact results")


@attrs.frozen
class CompiledFormula(Formula):
    """A sympy expression compiled to exact Python; call with one int per free symbol."""

    expression: sympy.Expr = attrs.field(kw_only=True)


def _argnames(expression: sympy.Expr) -> tuple[str, ...]:
    return tuple(sorted(sym.name for sym in expression.free_symbols))


def _body(expression: sympy.Expr) -> str:
    return _ExactPrinter({"fully_qualified_modules": True, "standard": "python3"}).doprint(expression)


@functools.lru_cache(maxsize=4096)
def compile_exact(expression: sympy.Expr) -> CompiledFormula:
    """Compile *expression* once; later calls with an equal expression reuse the code."""
    argnames = _argnames(expression)
    body = _body(_combined(expression))
    source = f"def _formula({', '.join(argnames)}):\n    return {body}\n"
    sweeps = "\n".join(
        f"    if _name == {arg!r}:\n        return [{body} for {arg} in _values]" for arg in argnames
    )
    others = ", ".join(["_name", "_values", *(f"{arg}=None" for arg in argnames)])
    source += f"\ndef _sweep({others}):\n{sweeps or '    pass'}\n"
    text = str(expression)  # printing a large sum sorts its terms: once
    namespace = run_source(source, text)
    return CompiledFormula(  # type: ignore[arg-type]
        text, argnames, source, namespace["_formula"], namespace["_sweep"], expression=expression
    )


@functools.lru_cache(maxsize=4096)
def trial_function(expression: sympy.Expr) -> tuple[tuple[str, ...], Callable[..., int | Fraction]]:
    """(argument names, exact function) of *expression*, compiled cheaply for a few calls.

    For the registry's load-time trial evaluation: the same exact printer as :func:`compile_exact`,
    without the common denominator and the sweep loop, which pay off only over many calls.
    """
    argnames = _argnames(expression)
    namespace = run_source(f"def _formula({', '.join(argnames)}):\n    return {_body(expression)}\n", str(expression))
    return argnames, namespace["_formula"]  # type: ignore[return-value]


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
