"""flopsreg.formula.exact: sympy expressions to exact-integer Python.

Every expected value is computed in the test with Python ints (``//``, ``%``, explicit sums),
never with floats. The failure modes matter as much: a non-integer result and a float in a
formula must raise, not round.
"""

from __future__ import annotations

import re

import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from flopsreg.declarations.symbols import integer_symbol
from flopsreg.errors import PatternError
from flopsreg.formula.exact import compile_exact
from flopsreg.patterns.chunked import CHUNKED
from flopsreg.patterns.sliding_window import SLIDING_WINDOW

x, y, z = integer_symbol("x"), integer_symbol("y"), integer_symbol("z")
s = integer_symbol("seq_len")

FLOAT_DIVISION = re.compile(r"(?<!/)/(?!/)")  # a single '/', not part of '//'


def test_huge_values_are_exact_python_ints():
    """s around 10**7 with wide dims: totals above 10**25, identical to Python int arithmetic."""
    heads, head_dim, hidden = 10**6 + 1, 10**5 + 3, 10**7 + 9
    expr = 2 * integer_symbol("n") * 2 * integer_symbol("d") * s * (s + 1) / 2 + 8 * s * integer_symbol("h") ** 2
    seq = 10**7 + 7
    got = compile_exact(expr)({"n": heads, "d": head_dim, "h": hidden, "seq_len": seq})
    expected = 2 * heads * 2 * head_dim * (seq * (seq + 1) // 2) + 8 * seq * hidden**2
    assert expected > 10**25
    assert got == expected
    assert type(got) is int
    assert got != int(float(expected))  # a float route would have lost the low digits


@pytest.mark.parametrize("seq", [10**7, 10**7 + 1, 12_345_677, 2**40 + 3])
@pytest.mark.parametrize("window", [1, 4096, 131_071, 10**9])
def test_sliding_window_formula_is_exact_at_huge_lengths(seq, window):
    """The built-in sliding formula at huge lengths, against the two-piece sum done in ints."""
    got = compile_exact(SLIDING_WINDOW.formula)({"seq_len": seq, "window": window})
    if seq <= window:
        expected = seq * (seq + 1) // 2
    else:
        expected = window * (window + 1) // 2 + (seq - window) * window
    assert got == expected and type(got) is int


@pytest.mark.parametrize("seq", [10**7, 10**7 + 1, 12_345_677, 2**40 + 3])
@pytest.mark.parametrize("chunk", [1, 3, 8192, 10**9])
def test_chunked_formula_is_exact_at_huge_lengths(seq, chunk):
    """The built-in chunked formula: full chunks' triangles plus the remainder's, in ints."""
    got = compile_exact(CHUNKED.formula)({"seq_len": seq, "chunk": chunk})
    full, rest = divmod(seq, chunk)
    assert got == full * (chunk * (chunk + 1) // 2) + rest * (rest + 1) // 2
    assert type(got) is int


@pytest.mark.parametrize(
    "expr",
    [x * y, x * (x + 1) / 2, sympy.floor(x / 3), sympy.Mod(x, 7), sympy.Piecewise((x, x <= y), (y, True))],
    ids=["product", "triangle", "floor", "mod", "piecewise"],
)
def test_results_are_int_never_float_or_fraction(expr):
    """Whatever the expression's shape, an integer value comes back as a plain int."""
    for values in ({"x": 1, "y": 1}, {"x": 6, "y": 4}, {"x": 10**30, "y": 3}):
        result = compile_exact(expr)(values)
        assert type(result) is int, (expr, values, type(result))


@pytest.mark.parametrize("value", [1, 2, 3, 4, 99, 100, 10**20 + 1, 10**20 + 2])
def test_rational_coefficient_triangle_number_for_odd_and_even(value):
    """x (x + 1) / 2 is exact for odd and even x (the half is exact, not 0.5 * ...)."""
    assert compile_exact(x * (x + 1) / 2)({"x": value}) == value * (value + 1) // 2


@pytest.mark.parametrize("value", [1, 2, 3, 10**20 + 1])
def test_expanded_triangle_number_is_an_int(value):
    """x**2/2 + x/2 (the expanded triangle) is an integer for every x; each half term is not.

    sympy keeps the expanded form as a sum of two halves, and a plugin formula written or
    simplified this way is valid, so the sum must come back as its integer value.
    """
    expr = sympy.expand(x * (x + 1) / 2)
    assert expr == x**2 / 2 + x / 2
    got = compile_exact(expr)({"x": value})
    assert got == value * (value + 1) // 2
    assert type(got) is int


@pytest.mark.parametrize("value", range(1, 40))
@pytest.mark.parametrize("divisor", [1, 2, 3, 7, 16])
def test_floor_and_mod_match_python_floor_division_and_remainder(value, divisor):
    """floor(x / d) is x // d and Mod(x, d) is x % d, also inside other expressions."""
    assert compile_exact(sympy.floor(x / divisor))({"x": value}) == value // divisor
    assert compile_exact(sympy.Mod(x, divisor))({"x": value}) == value % divisor
    assert compile_exact(sympy.floor(x / y))({"x": value, "y": divisor}) == value // divisor
    assert compile_exact(sympy.Mod(x, y))({"x": value, "y": divisor}) == value % divisor
    combined = sympy.floor(x / y) * y + sympy.Mod(x, y)
    assert compile_exact(combined)({"x": value, "y": divisor}) == value


def test_floor_of_huge_quotient_is_exact():
    """floor(x / y) for 30-digit x: true integer division, no float rounding."""
    big = 10**30 + 12345
    assert compile_exact(sympy.floor(x / y))({"x": big, "y": 7}) == big // 7
    assert compile_exact(sympy.Mod(x, y))({"x": big, "y": 7}) == big % 7


@pytest.mark.parametrize("xv", range(1, 12))
@pytest.mark.parametrize("yv", range(1, 12))
def test_piecewise_takes_the_first_true_branch(xv, yv):
    """Piecewise((triangle, x <= y), (y (y + 1)/2 + (x - y) y, True)): the sliding-window shape."""
    expr = sympy.Piecewise((x * (x + 1) / 2, x <= y), (y * (y + 1) / 2 + (x - y) * y, True))
    expected = xv * (xv + 1) // 2 if xv <= yv else yv * (yv + 1) // 2 + (xv - yv) * yv
    assert compile_exact(expr)({"x": xv, "y": yv}) == expected


def test_non_integer_result_is_a_pattern_error_saying_how_to_run_without_plugins():
    """x / 2 at x = 3 is 3/2: a formula bug, reported in one line (not an ArithmeticError), never rounded."""
    formula = compile_exact(x / 2)
    assert formula({"x": 4}) == 2
    with pytest.raises(PatternError) as info:
        formula({"x": 3})
    assert not isinstance(info.value, ArithmeticError)
    assert str(info.value) == (
        "formula x/2 is not an integer at {'x': 3}: 3/2; a pattern's formula is wrong (to run without installed "
        "plugins, set FLOPSREG_DISABLE_PLUGIN_AUTOLOAD=1 or use Registry(load_entry_points=False))"
    )
    with pytest.raises(PatternError, match=r"is not an integer at \{'x': 5\}: 5/2"):
        formula.sweep("x", [4, 5], {})


def test_float_in_expression_is_a_pattern_error():
    """A float coefficient would make results inexact: refused when compiling."""
    with pytest.raises(PatternError, match="float"):
        compile_exact(sympy.Float(0.5) * x)
    with pytest.raises(PatternError, match="Rational"):
        compile_exact(x + sympy.Float(1.5))


def test_equal_expressions_share_one_compiled_formula():
    """The cache: an equal expression built separately returns the very same object."""
    first = compile_exact(x * (x + 1) / 2 + y)
    second = compile_exact(y + sympy.Rational(1, 2) * x * (1 + x))
    assert first is second
    assert compile_exact(x * (x + 1) / 2 + z) is not first


@pytest.mark.parametrize(
    "expr",
    [
        x * (x + 1) / 2,
        x / 3 + y / 6,
        sympy.floor(x / 3) * y * (y + 1) / 2,
        sympy.ceiling(x / y),
        sympy.Mod(x * (x + 1) / 2, y),
        sympy.Piecewise((x * (x + 1) / 2, x <= y), (y * (y + 1) / 2 + (x - y) * y, True)),
        1 / x,
        SLIDING_WINDOW.formula,
        CHUNKED.formula,
    ],
    ids=["triangle", "sum_of_fractions", "floor", "ceiling", "mod", "piecewise", "reciprocal", "sliding", "chunked"],
)
def test_generated_source_has_no_float_division(expr):
    """The generated code divides only with ``//`` or ``_exdiv``: a lone '/' would be a float."""
    source = compile_exact(expr).source
    assert not FLOAT_DIVISION.search(source), source
    assert "def _formula(" in source


def test_argument_names_are_the_sorted_free_symbols_and_extra_values_are_ignored():
    """Callers pass a superset of values (a model's whole params); unused ones are ignored."""
    formula = compile_exact(2 * y * x + z)
    assert formula.argnames == ("x", "y", "z")
    assert formula({"z": 1, "y": 3, "x": 5, "unused": 10**6}) == 2 * 3 * 5 + 1


def test_constant_expression_needs_no_values():
    """An expression with no symbols compiles to a constant."""
    assert compile_exact(sympy.Integer(6) * sympy.Rational(7, 2))({}) == 21


def test_symbols_with_latex_compile_by_name_like_plain_symbols():
    """LaTeX is presentation only: the code uses the names, and an equal plain-symbol expression
    gives the same function."""
    W = integer_symbol("window", "W")
    formula = compile_exact(sympy.floor(s / W) * W + sympy.Mod(s, W))
    assert formula.argnames == ("seq_len", "window")
    assert "W" not in formula.source  # no LaTeX name leaks into the code
    plain = sympy.Symbol("seq_len", integer=True, positive=True), sympy.Symbol("window", integer=True, positive=True)
    assert compile_exact(sympy.floor(plain[0] / plain[1]) * plain[1] + sympy.Mod(*plain)) is formula  # equal: one cache entry
    for seq, window in [(1, 1), (7, 3), (4096, 1000), (10**12 + 5, 4095)]:
        assert formula({"seq_len": seq, "window": window}) == (seq // window) * window + seq % window == seq


# -- every operation of the formula tree against sympy's own arithmetic ------------------------------

_LEAVES = st.sampled_from([x, y, z, sympy.Integer(3), sympy.Integer(-2), sympy.Rational(1, 2)])


def _mod(pair: tuple[sympy.Expr, sympy.Expr]) -> sympy.Expr | None:
    """``Mod`` of the pair, or None where sympy cannot build it: sympy 1.14's ``Mod.eval`` recurses
    without end on some arguments (``Mod(y - 2, y**2 + 1)`` for a positive integer ``y``)."""
    try:
        return sympy.Mod(*pair)
    except RecursionError:
        return None


def _combine(children: st.SearchStrategy) -> st.SearchStrategy:
    pairs = st.tuples(children, children)
    positive = children.map(lambda e: e**2 + 1)  # a divisor that is never 0
    return st.one_of(
        pairs.map(lambda p: p[0] + p[1]),
        pairs.map(lambda p: p[0] * p[1]),
        st.tuples(children, positive).map(lambda p: sympy.floor(p[0] / p[1])),
        st.tuples(children, positive).map(lambda p: sympy.ceiling(p[0] / p[1])),
        st.tuples(children, positive).map(_mod).filter(lambda e: e is not None),
        pairs.map(lambda p: sympy.Min(*p)),
        pairs.map(lambda p: sympy.Max(*p)),
        children.map(lambda e: e**2),
        children.map(sympy.Abs),
        st.tuples(children, children, children).map(lambda t: sympy.Piecewise((t[0], t[1] <= t[2]), (t[2], True))),
    )


@given(st.recursive(_LEAVES, _combine, max_leaves=8), st.integers(-50, 50), st.integers(-50, 50), st.integers(-50, 50))
@settings(max_examples=300, deadline=None)
def test_every_operation_evaluates_as_sympy_does(expr, xv, yv, zv):
    """The code written from the tree gives sympy's own value wherever that is an integer."""
    expected = expr.xreplace({x: sympy.Integer(xv), y: sympy.Integer(yv), z: sympy.Integer(zv)})
    assume(expected.is_Integer)
    assert compile_exact(expr)({"x": xv, "y": yv, "z": zv}) == int(expected)
