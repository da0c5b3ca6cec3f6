"""Presentation: flopsreg symbols print as their LaTeX names in every sympy printer, and a
pattern may give its own LaTeX, which the renderers then use for its term.

Identity is by name and assumptions: a plain ``sympy.Symbol`` of the same name and assumptions
equals a flopsreg symbol, so substitution and compilation are unchanged; only printing differs.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import attrs
import pytest
import sympy

import flopsreg
from flopsreg import render
from flopsreg.cli import main
from flopsreg.declarations.symbols import Symbol, SymbolTable, integer_symbol, s
from flopsreg.patterns.mtp import MTP_BLOCK
from flopsreg.patterns.quantities import PAIRS
from flopsreg.patterns.sliding_window import WINDOW

PLAIN_S = sympy.Symbol("seq_len", integer=True, positive=True)
GEMMA_4096_FORWARD = 32_999_781_433_344  # gemma-3-4b, one sequence of 4096 tokens (anchor 10.3 of the suite)


@pytest.fixture(scope="module")
def gemma(registry):
    """A Gemma-like model: sliding-window and full layers with GQA."""
    return registry.select(flopsreg.Model.example("gemma-3-4b"))


# -- symbols carry their LaTeX ----------------------------------------------------------------


def test_sympy_latex_of_an_expression_uses_the_symbols_latex_names(gemma):
    sliding = next(kind for kind in gemma.kinds if "sliding_window" in kind.patterns.values())
    text = sympy.latex(sliding.expression)
    assert "W" in text and r"n_{\mathrm{kv}}" in text and r"d_{\mathrm{h}}" in text
    for raw in ("seq_{len}", "head_{dim}", "kv_{heads}", "window"):
        assert raw not in text


def test_latex_of_the_result_expression_prints_s_not_seq_len(registry):
    res = registry.evaluate(flopsreg.Model.example("gemma-3-4b"), seq_len=4096)
    text = sympy.latex(res.expression)
    assert "seq_{len}" not in text and r"\frac{s \left(s + 1\right)}{2}" in text


def test_jupyter_repr_of_a_kind_expression_uses_the_latex_names(gemma):
    text = gemma.kinds[0].expression._repr_latex_()  # what Jupyter shows for any sympy expression
    assert text.startswith("$\\displaystyle ") and r"n_{\mathrm{kv}}" in text and "kv_{heads}" not in text


def test_str_and_code_printers_keep_the_plain_names(gemma):
    text = str(gemma.kinds[0].expression)
    assert "seq_len" in text and "kv_heads" in text and "\\" not in text
    assert sympy.pycode(WINDOW.symbol * s) == "seq_len*window"
    assert gemma.compiled.argnames == ("seq_len",)


def test_every_kind_of_declared_symbol_prints_its_latex():
    assert sympy.latex(WINDOW.symbol) == "W"
    assert sympy.latex(PAIRS.symbol) == "P"
    assert sympy.latex(MTP_BLOCK.flops) == r"F_{\mathrm{mtp}}"
    assert sympy.latex(MTP_BLOCK.layers) == r"D_{\mathrm{mtp}}"
    assert sympy.latex(s) == "s"


def test_symbol_names_given_to_the_printer_still_win():
    assert sympy.latex(2 * WINDOW.symbol, symbol_names={WINDOW.symbol: "w_0"}) == "2 w_0"


def test_a_symbol_without_latex_prints_as_sympy_prints_its_name():
    assert sympy.latex(integer_symbol("head_dim")) == sympy.latex(sympy.Symbol("head_dim")) == "head_{dim}"


# -- identity stays by name and assumptions -------------------------------------------------------


def test_a_plain_symbol_with_the_same_name_and_assumptions_is_equal():
    assert s == PLAIN_S and PLAIN_S == s and hash(s) == hash(PLAIN_S)
    assert {PLAIN_S: 1}[s] == 1 and {s: 1}[PLAIN_S] == 1
    assert isinstance(s, sympy.Symbol) and type(s) is Symbol


def test_other_assumptions_or_another_class_make_another_symbol():
    assert s != sympy.Symbol("seq_len")
    assert s != sympy.Symbol("seq_len", integer=True, nonnegative=True)
    assert s != sympy.Dummy("seq_len", integer=True, positive=True)
    assert MTP_BLOCK.layers != integer_symbol("mtp_layers")  # nonnegative, not positive


def test_the_latex_is_not_part_of_the_identity():
    w = flopsreg.Param(name="window", latex="w", meaning="another plugin's name for it").symbol
    assert w == WINDOW.symbol and sympy.latex(w) == "w" and sympy.latex(WINDOW.symbol) == "W"


def test_subs_and_xreplace_with_a_plain_symbol_reach_flopsreg_symbols(gemma):
    assert gemma.expression.subs(PLAIN_S, 4096) == GEMMA_4096_FORWARD
    assert gemma.expression.xreplace({PLAIN_S: sympy.Integer(4096)}) == GEMMA_4096_FORWARD
    assert gemma.compiled({"seq_len": 4096}) == GEMMA_4096_FORWARD


def test_pickling_round_trips_the_symbols_and_their_latex(gemma):
    expression = gemma.kinds[0].expression
    back = pickle.loads(pickle.dumps(expression))
    assert back == expression
    assert sympy.latex(back) == sympy.latex(expression)
    window = pickle.loads(pickle.dumps(WINDOW.symbol))
    assert type(window) is Symbol and window.latex == "W" and window == WINDOW.symbol


def test_a_plugin_may_use_a_plain_symbol_with_the_right_assumptions(registry):
    """Accepted (it is the same symbol); it prints its raw name where it is the one sympy kept."""
    plain_window = sympy.Symbol("window", integer=True, positive=True)

    @flopsreg.hookimpl
    def flopsreg_register_patterns():
        return [
            flopsreg.Pattern(
                name="plain_window",
                slot="attention.mask",
                flags={"plain_window"},
                precedence=45,
                produces="pairs",
                params=(WINDOW,),
                formula=s * plain_window,
                summary="a test pattern",
                reference="tests",
            )
        ]

    plugin = type("PlainWindow", (), {"flopsreg_register_patterns": staticmethod(flopsreg_register_patterns)})
    reg = flopsreg.Registry(plugins=[plugin], load_entry_points=False)
    assert not reg.errors
    assert "plain_window" in {p.name for p in reg.patterns}


# -- a pattern's own LaTeX ------------------------------------------------------------------------

CHUNKED_NOTATION = r"\left\lfloor s/C \right\rfloor \frac{C(C+1)}{2} + \frac{r(r+1)}{2},\ r = s \bmod C"


def test_the_latex_of_a_chunked_model_uses_the_patterns_own_notation(registry):
    res = registry.evaluate(flopsreg.Model.example("llama-4-scout"), seq_len=8192)
    text = res.latex()
    notation, where = CHUNKED_NOTATION.split(r",\ ")  # the where-clause goes on a row of its own
    assert rf"P_{{\mathrm{{chunked}}}}(s) &= {notation}, \notag \\" + "\n" + rf"&\qquad {where} \notag" in text
    assert r"\left(s \bmod C\right)" not in text  # sympy's own rendering of the Mod form
    assert r"$C = 8{,}192$: tokens per attention chunk;" in text  # its symbols still reach the definitions
    assert r"P_{\mathrm{global}}(s) &= \frac{s \left(s + 1\right)}{2}" in text  # no own LaTeX: sympy's


def test_formula_latex_and_patterns_json_of_the_cli_show_it(capsys, monkeypatch):
    monkeypatch.setenv("FLOPSREG_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert main(["formula", "llama-4-scout", "--format", "latex"]) == 0
    assert CHUNKED_NOTATION.split(r",\ ")[0] in capsys.readouterr().out
    assert main(["patterns", "--format", "json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["chunked"]["latex"] == CHUNKED_NOTATION
    assert rows["sliding_window"]["latex"] == r"\frac{m(m+1)}{2} + (s - m)\,W,\ m = \min(s, W)"


def test_the_patterns_reference_shows_it():
    reference = (Path(__file__).resolve().parents[2] / "docs" / "patterns.md").read_text(encoding="utf-8")
    assert f"$$\n{CHUNKED_NOTATION}\n$$" in reference


def _pattern(latex: str | None) -> flopsreg.Pattern:
    return flopsreg.Pattern(
        name="own_latex",
        slot="attention.mask",
        flags={"own_latex"},
        precedence=47,
        produces="pairs",
        formula=s * (s + 1) / 2,
        latex=latex,
        summary="a test pattern",
        reference="tests",
    )


@pytest.mark.parametrize(
    ("latex", "fault"),
    [
        (r"\frac{s(s+1)}{2", "unclosed {"),
        (r"s(s+1)}/2", "unmatched } at character 6"),
        (r"\left( s \frac{s+1}{2}", r"unclosed \left"),
        (r"s \right) + 1", r"unmatched \right at character 2"),
        (r"\begin{cases} s \end{array}", r"unmatched \end{array} at character 16"),
        (r"{\left( s }\right)", "unmatched } at character 10"),
        (r"$\frac{s(s+1)}{2}$", "a $ at character 0"),
        ("   ", "None or the LaTeX of its formula"),
    ],
)
def test_unbalanced_latex_is_refused_naming_the_pattern(latex, fault):
    with pytest.raises(flopsreg.errors.PatternError) as caught:
        _pattern(latex)
    message = str(caught.value)
    assert message.startswith("pattern 'own_latex': latex = ") and fault in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "latex",
    [None, r"\tfrac{s(s+1)}{2}", r"\left\{ s \right.", r"\{s\} \\ {1}", r"\begin{cases} s & s \leq 1 \end{cases}", r"s \leftarrow {1}"],
)
def test_balanced_latex_is_accepted(latex):
    assert _pattern(latex).latex == latex


def test_a_plugin_with_unbalanced_latex_is_skipped_by_name_and_the_others_load():
    @flopsreg.hookimpl
    def flopsreg_register_patterns():
        return [_pattern(r"\frac{s(s+1)}{2")]

    plugin = type("BadLatex", (), {"flopsreg_register_patterns": staticmethod(flopsreg_register_patterns)})
    with pytest.warns(flopsreg.errors.PluginWarning):
        reg = flopsreg.Registry(plugins=[plugin], load_entry_points=False)
    (error,) = reg.errors
    assert error.plugin == "BadLatex" and "pattern 'own_latex': latex = " in str(error) and "unclosed {" in str(error)
    assert "chunked" in {p.name for p in reg.patterns}


# -- renderers take symbols from the selection ----------------------------------------------------


def test_the_latex_legend_comes_from_the_selections_symbol_table(gemma):
    table = SymbolTable(
        attrs.evolve(info, meaning="THE TABLE'S MEANING") if name == "seq_len" else info
        for name, info in gemma.symbols.items()
    )
    text = render.latex(attrs.evolve(gemma, symbols=table))
    assert r"$s$: THE TABLE'S MEANING;" in text
    assert r"$s$: tokens in one sequence;" in render.latex(gemma)
