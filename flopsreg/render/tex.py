r"""Paste-ready LaTeX of a composed model: a fragment that needs only ``amsmath``, or a document.

Terms are printed per pattern, in ``align`` rows sized for one column of a two-column article
(wide terms split, short ones sharing a row), in the order the slots are declared (the forward
pass, for the built-in slots), because sympy reorders sums when the model is one expression;
slots that count the same term are written once, ``3 \cdot ...``. A quantity that is the same in
every layer kind keeps its plain symbol (``P``, ``f``); one that differs is written per kind
(``P_{local}(s)``), and a kind that has the same patterns as an earlier one is written as the
difference. Kinds are named in words (``KDA dense``), never by their identifier. The definitions
follow as one paragraph (it breaks across columns and pages): the functions, then the symbols in
order of appearance with their meaning and value for this model, then what each combined term
and each term with no symbol of its own (``2 h s``) counts, each acronym written out at its
first use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import sympy

from flopsreg.declarations.pattern import FLOPS, Pattern
from flopsreg.declarations.readers import HFReader, family_flag
from flopsreg.declarations.symbols import h, s
from flopsreg.declarations.towers import CROSS_ATTENTION, CROSS_ATTENTION_LATEX, IMAGE_GRID, IMAGE_GRID_LATEX, where_symbol
from flopsreg.engine.media import SEQUENCE_FORMS, closed_form_rows, grid_words, sequence_form_rows, tower_kinds
from flopsreg.model.examples_index import example_path

if TYPE_CHECKING:
    from flopsreg.engine.compose import ModelSelection, UnitSelection
    from flopsreg.engine.evaluate import Result
    from flopsreg.model import Model

__all__ = ["ACRONYMS", "PREAMBLE", "kind_words", "latex", "legend", "mathjax", "scientific", "title"]

_SPECIALS = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_NEEDS = "% Needs only \\usepackage{amsmath}."
# The preamble of the document form: amsmath, and its \allowdisplaybreaks so that a long align (a
# model's layer kinds, a tower's closed forms) breaks across pages between rows instead of running
# off the page's foot (docs/latex.md).
PREAMBLE = "\\usepackage{amsmath}\n\\allowdisplaybreaks\n"


def escape(text: str) -> str:
    """*text* made safe for LaTeX text mode."""
    return "".join(_SPECIALS.get(char, char) for char in text)


def thousands(n: int) -> str:
    """*n* with ``{,}`` between groups of three digits, as LaTeX math prints a comma without space."""
    return f"{n:,}".replace(",", "{,}")


def scientific(value: int | Fraction, digits: int = 4) -> str:
    r"""*value* in LaTeX scientific notation with *digits* significant digits, e.g. ``3.300 \times 10^{13}``,
    rounded half up with exact arithmetic."""
    value = Fraction(value)
    if value == 0:
        return "0"
    exponent = len(str(int(abs(value)))) - 1 if abs(value) >= 1 else -len(str(int(1 / abs(value))))
    while abs(value) >= Fraction(10) ** (exponent + 1):
        exponent += 1
    while abs(value) < Fraction(10) ** exponent:
        exponent -= 1
    scaled = abs(value) / Fraction(10) ** (exponent - digits + 1)
    mantissa = int(scaled + Fraction(1, 2))
    if mantissa >= 10**digits:
        mantissa, exponent = mantissa // 10, exponent + 1
    text = str(mantissa)
    text = text[0] + ("." + text[1:] if digits > 1 else "")
    sign = "-" if value < 0 else ""
    return f"{sign}{text}" if exponent == 0 else f"{sign}{text} \\times 10^{{{exponent}}}"


def meaning(text: str) -> str:
    """A symbol's meaning as a paper gives it: parentheses naming config keys (``a_b``, ``a.b``) dropped,
    then up to the first ``;`` (after which plugins give technical notes)."""
    return re.sub(r" ?\([^()]*(?:_|\w\.\w)[^()]*\)", "", text).split(";", 1)[0].strip()


_MAX_WIDTH = 26  # visible characters of a term's LaTeX that fit one column of a two-column article
_MERGED_WIDTH = 22  # the same for several short terms joined on one row (more operators and spaces)
_NUMBERED_WIDTH = 18  # the same on the total's rows, whose last one keeps room for the equation number
_CASES_WIDTH = 35  # the widest row title and the widest case (value and condition) that fit one column together


def _width(text: str) -> int:
    """A rough count of the characters *text* shows: commands, braces and scripts' markers dropped."""
    return len(re.sub(r"\\(?:mathrm|left|right|frac|quad|,)|[{}_^ ]", "", text))


def _cases_width(text: str) -> int:
    """The visible width of *text*'s widest case (its value and condition), 0 without ``cases``."""
    found = re.search(r"\\begin\{cases\}(.*)\\end\{cases\}", text)
    if found is None:
        return 0
    branches = [re.sub(r"\\text\{([^}]*)\}|\\leq|\\:|&", lambda m: m.group(1) or "", branch) for branch in found.group(1).split(r"\\")]
    return _width(text[: found.start()]) + max(_width(branch) for branch in branches)


def _top_level_split(text: str, separator: str) -> list[str]:
    """*text* split at each *separator* outside braces."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i = i + len(separator)
            continue
        i += 1
    return parts + [text[start:]]


def _continued(text: str) -> str:
    """A continuation row's right side: ``\\quad + text``, or ``\\quad - ...`` for a negative term."""
    return r"\quad - " + text[1:].lstrip() if text.startswith("-") else r"\quad + " + text


# Acronyms a kind's name or a symbol's meaning may use, each expanded at its first use in the
# definitions (``Kimi Delta Attention (KDA)``); a kind's name word not listed here stays as written.
# A plugin's meaning may write out its own, ``rotary position embedding (RoPE)``: one word per
# capital of the acronym (see _declared_acronyms).
ACRONYMS = {
    "CSA": "compressed sparse attention",
    "DSA": "DeepSeek sparse attention",
    "FFN": "feed-forward network",
    "GDN": "Gated DeltaNet",
    "HCA": "heavily compressed attention",
    "KDA": "Kimi Delta Attention",
    "KV": "key/value",
    "MLP": "multilayer perceptron",
    "MoE": "mixture of experts",
    "MTP": "multi-token prediction",
    "mHC": "manifold-constrained hyper-connections",
}
_WORDS = {acronym.lower(): acronym for acronym in ACRONYMS} | {"kpool": "k-pool", "idx": "indexed"}


def kind_words(name: str) -> str:
    """A layer kind's name as words: ``kda_dense`` -> ``KDA dense``, ``sliding_kv`` -> ``sliding KV``."""
    return " ".join(_WORDS.get(word, word) for word in name.split("_"))


def _subscript(words: str) -> str:
    """*words* as an upright subscript: spaces thin, hyphens as hyphens (not minus signs)."""
    return r"\mathrm{" + escape(words).replace(" ", r"\,").replace("-", r"\text{-}") + "}"


def _name(unit: UnitSelection) -> str:
    return _subscript(kind_words(unit.name))


class _Writer:
    """Builds the rows of one model's ``align`` and records the symbols they use, in order."""

    def __init__(self, selection: ModelSelection, annotate: bool) -> None:
        self.selection = selection
        self.annotate = annotate
        self.names = selection.symbols.latex_names()
        self.rows: list[str] = []
        self.used: list[sympy.Symbol] = []
        self.numbered_row = -1  # the row that keeps its equation number; none by default
        self.constants: dict[sympy.Symbol, int] = {}  # constant quantities: legend values
        self.per_unit: dict[tuple[str, str], sympy.Symbol] = {}  # quantities written per kind
        self.named: dict[str, list[str]] = {}  # provided quantities kept as symbols: their clauses
        self.terms: dict[str, str] = {}  # terms the definitions explain (combined or symbol-less): what they count
        self.common: list[str] = []  # the kinds whose shared terms are written once, as F_common
        self.merged_width = _MERGED_WIDTH  # how wide a row that joins short terms may grow
        self.max_width = _MAX_WIDTH  # how wide one term may be before it is split over its summands
        # the align's left column is as wide as its widest row title, F of the longest kind name
        self.title_width = max((_width(f"F_{{{_name(unit)}}}(s)") for unit in selection.units), default=0)

    def tex(self, expr: sympy.Expr, pattern: Pattern | None = None) -> str:
        """*pattern*'s own LaTeX if it gives one, else sympy's rendering of *expr*; symbols recorded."""
        text = pattern.latex if pattern is not None and pattern.latex else sympy.latex(expr, symbol_names=self.names)
        self.record(text, pattern.formula if pattern is not None and pattern.latex else expr)
        return text

    def record(self, text: str, source: sympy.Expr) -> None:
        """Note *source*'s symbols as used, in the order *text* shows them."""
        found = [(self._position(text, sym), str(sym), sym) for sym in source.free_symbols if sym not in self.used]
        self.used += [sym for _, _, sym in sorted(found, key=lambda item: (item[0], item[1]))]

    def rows_of(self, lhs: str, expr: sympy.Expr, pattern: Pattern | None = None, note: str = "") -> None:
        """*expr* as one or more rows, ``lhs = ...`` or, without *lhs*, continuing a sum: a
        pattern's where-clause (after ``,\\ ``) on a row of its own, a term too wide for a column
        split over its summands, the outer factors distributed."""
        text = self.tex(expr, pattern)
        if pattern is not None and pattern.latex:
            self.where_rows(lhs, _top_level_split(text, r",\ "), note)
            return
        if isinstance(expr, sympy.Piecewise) and self.title_width + _cases_width(text) > _CASES_WIDTH:
            # cases are never split over rows: beside a long title (a kind "sliding dense"), each case factored
            text = self.tex(sympy.Piecewise(*((sympy.factor(value), condition) for value, condition in expr.args)))
        summands = self._split(expr) if _width(text) > self.max_width else [expr]
        texts = [text] if len(summands) == 1 else [self.tex(summand) for summand in summands]
        for i, part in enumerate(texts):
            first = i == 0 and lhs
            self.row(lhs if first else "", f"= {part}" if first else _continued(part), note if i == 0 else "")

    def where_rows(self, lhs: str, parts: list[str], note: str = "") -> None:
        """``lhs = parts[0],`` then each further part (a where-clause, ``r_j = j \\bmod \\ell``) on a row of its own."""
        self.row(lhs, (f"= {parts[0]}" if lhs else _continued(parts[0])) + ("," if len(parts) > 1 else ""), note)
        for part in parts[1:]:
            self.row("", r"\qquad " + part)

    def _split(self, expr: sympy.Expr) -> list[sympy.Expr]:
        """*expr*'s summands, outer factors distributed; a summand twice too wide for a column
        (a product with a sum, e.g. heads x a count of pools) over the summands of its widest sum."""
        summands = sympy.expand(expr, deep=False).as_ordered_terms()
        if len(summands) == 1:
            return summands
        return [part for term in summands for part in self._distributed(term)]

    def _distributed(self, term: sympy.Expr) -> list[sympy.Expr]:
        """*term*, or if it is a product twice too wide for a column, c (x + y + ...) as c x, c y, ..."""
        sums = [factor for factor in term.args if term.is_Mul and factor.is_Add]
        if not sums or _width(sympy.latex(term, symbol_names=self.names)) <= 2 * _MAX_WIDTH:
            return [term]
        widest = max(sums, key=lambda factor: _width(sympy.latex(factor, symbol_names=self.names)))
        rest = sympy.Mul(*(factor for factor in term.args if factor is not widest))
        return [rest * part for part in widest.as_ordered_terms()]

    def _position(self, text: str, symbol: sympy.Symbol) -> int:
        name = self.names.get(symbol, sympy.latex(symbol))
        match = re.search(r"(?<![A-Za-z\\{])" + re.escape(name) + r"(?![A-Za-z])", text)
        return match.start() if match else len(text)

    def row(self, lhs: str, rhs: str, note: str = "") -> None:
        """Add ``lhs &rhs``: *rhs* starts with its relation (``= ...``) or, continuing, ``\\quad + ...``;
        a continuation joins the row above while both fit the column together."""
        if not lhs and rhs.startswith((r"\quad + ", r"\quad - ")) and self.rows:
            code, _, comment = self.rows[-1].partition(" % ")
            if _width(code.split("&", 1)[1] + rhs) <= self.merged_width:
                notes = "; ".join(n for n in (comment, note) if n)
                self.rows[-1] = f"{code} {rhs.removeprefix(chr(92) + 'quad ')}" + (f" % {notes}" if self.annotate and notes else "")
                return
        comment = f" % {note}" if self.annotate and note else ""
        self.rows.append(f"{lhs} &{rhs}{comment}".lstrip())


def _clauses(selection: ModelSelection, pattern: Pattern, quantity: str) -> list[str] | None:
    r"""The where-clause of *pattern*'s ``latex=`` that defines the provided *quantity*
    (``P_{\mathrm{pool}} = ...``) as its right side, then the clauses after it (its own
    where-clauses, ``p = ...``); None if the pattern names no such clause."""
    parts = _top_level_split(pattern.latex or "", r",\ ")
    start = selection.symbols[quantity].latex + " = "
    found = next((i for i, part in enumerate(parts) if i and part.startswith(start)), None)
    return None if found is None else [parts[found][len(start) :], *parts[found + 1 :]]


def _named(selection: ModelSelection) -> dict[str, list[str]]:
    """Provided quantities that depend on the sequence and that their pattern's ``latex=`` defines
    in a where-clause (the k-pool indexer's pairs): ``{name: clauses}``. They are kept as symbols
    and defined on rows of their own, as the produced ones are, when alike in every unit."""
    named: dict[str, list[str]] = {}
    for unit in selection.units:
        for sel in unit.selections:
            for quantity, expr in sel.pattern.provides.items():
                clauses = _clauses(selection, sel.pattern, quantity) if _of_s(expr) else None
                if clauses is not None:
                    named.setdefault(quantity, clauses)
    return named


def _quantities(selection: ModelSelection, named: dict[str, list[str]]) -> tuple[dict[str, sympy.Expr], dict[tuple[str, str], sympy.Symbol]]:
    """Quantities produced (or *named*) alike in every unit that has them (``{name: expr}``), and
    the per-unit display symbols of the other produced ones (``{(unit, name): symbol}``); a named
    quantity that differs between units is inlined."""
    produced: dict[str, dict[str, sympy.Expr]] = {}
    for unit in selection.units:
        mine = {sel.pattern.produces for sel in unit.selections if sel.pattern.produces != FLOPS}
        for quantity, expr in unit.quantities.items():
            if quantity in mine or quantity in named:
                produced.setdefault(quantity, {})[unit.name] = expr
    shared = {q: next(iter(by.values())) for q, by in produced.items() if len(set(by.values())) == 1}
    per_unit = {(u, q): sympy.Symbol(f"{q}__{u}") for q, by in produced.items() if q not in shared and q not in named for u in by}
    return shared, per_unit


def _terms(w: _Writer, unit: UnitSelection) -> list[tuple[str, Pattern, sympy.Expr]]:
    """*unit*'s FLOPs terms in slot order, produced and named quantities kept as symbols, the rest
    inlined; a slot whose pattern counts nothing (formula 0, e.g. an emptied slot) adds no term."""
    selection, per_unit = w.selection, w.per_unit
    kept = {sel.pattern.produces for sel in unit.selections if sel.pattern.produces != FLOPS} | set(w.named)
    inline = {}
    for quantity, expr in unit.quantities.items():
        symbol = selection.symbols[quantity].symbol
        if quantity not in kept:
            inline[symbol] = expr
        elif (unit.name, quantity) in per_unit:
            inline[symbol] = per_unit[unit.name, quantity]
    order = {slot: i for i, slot in enumerate(selection.slots)}
    counted = (sel for sel in unit.selections if sel.pattern.produces == FLOPS and sel.pattern.formula != 0)
    selections = sorted(counted, key=lambda sel: order.get(sel.slot, len(order)))
    return [(sel.slot, sel.pattern, sel.pattern.formula.xreplace(inline)) for sel in selections]


def _of_s(expr: sympy.Expr) -> str:
    return "(s)" if any(sym.name == "seq_len" for sym in expr.free_symbols) else ""


def _definitions(w: _Writer, shared: dict[str, sympy.Expr], per_unit: dict[tuple[str, str], sympy.Symbol]) -> dict[sympy.Symbol, int]:
    """Rows defining the quantities that depend on the sequence; constant ones become table values."""
    selection, constants = w.selection, {}
    patterns = {sel.pattern.produces: sel.pattern for unit in selection.units for sel in unit.selections}
    for quantity, expr in shared.items():
        symbol = selection.symbols[quantity].symbol
        if not expr.free_symbols and expr.is_Integer:
            constants[symbol] = int(expr)
            continue
        lhs = selection.symbols[quantity].latex + _of_s(expr)
        w.names[symbol] = lhs
        if quantity in w.named:
            w.record(w.named[quantity][0], expr)
            w.where_rows(lhs, w.named[quantity], quantity)
        else:
            w.rows_of(lhs, expr, patterns[quantity], patterns[quantity].name)
        w.used.append(symbol)
    for unit in selection.units:
        for sel in unit.selections:
            symbol = per_unit.get((unit.name, sel.pattern.produces))
            if symbol is None:
                continue
            expr = unit.quantities[sel.pattern.produces]
            w.names[symbol] = f"{selection.symbols[sel.pattern.produces].latex}_{{{_name(unit)}}}{_of_s(expr)}"
            w.rows_of(w.names[symbol], expr, sel.pattern, sel.pattern.name)
    return constants


def _shared_run(w: _Writer, terms: dict[str, list], kinds: list[UnitSelection]) -> tuple[int, int]:
    """How many leading and trailing terms every kind of *kinds* has alike: the same pattern, the
    same formula and the same value of each of its parameters (0, 0 for a single kind)."""
    if len(kinds) < 2:
        return 0, 0

    def alike(i: int) -> bool:
        first = terms[kinds[0].name]
        if not all(-len(terms[unit.name]) <= i < len(terms[unit.name]) for unit in kinds) or not -len(first) <= i < len(first):
            return False
        slot, pattern, expr = first[i]
        names = [sym.name for sym in expr.free_symbols]
        return all(
            terms[unit.name][i] == first[i] and all(unit.params.get(n) == kinds[0].params.get(n) for n in names) for unit in kinds[1:]
        )

    shortest = min(len(terms[unit.name]) for unit in kinds)
    lead = next((i for i in range(shortest) if not alike(i)), shortest)
    tail = next((i for i in range(shortest) if not alike(-1 - i)), shortest)
    return (lead, 0) if lead >= tail else (0, tail)


def _difference(w: _Writer, unit: UnitSelection, delta: sympy.Expr) -> list[str]:
    """*unit*'s terms less an earlier kind's, written ``c \\left(X_{this} - X_{that}\\right)``:
    this kind's quantities with a plus sign, whatever order sympy keeps; too wide for a column,
    one row per term of the difference (``c X_{this}``, ``- c X_{that}``)."""
    mine = {symbol for (name, _), symbol in w.per_unit.items() if name == unit.name}
    factors = sympy.Mul.make_args(delta)
    sums = [f for f in factors if f.is_Add and f.free_symbols & mine]
    if len(sums) != 1:
        return [w.tex(delta)]
    add = sums[0]
    rest = sympy.Mul(*(f for f in factors if f is not add))
    ours = [term for term in add.args if term.free_symbols & mine]
    if all(term.could_extract_minus_sign() for term in ours):
        add, rest = -add, -rest
    ordered = sorted(add.args, key=lambda term: (term.could_extract_minus_sign(), not (term.free_symbols & mine)))
    inner = w.tex(ordered[0])
    for term in ordered[1:]:
        inner += " - " + w.tex(-term) if term.could_extract_minus_sign() else " + " + w.tex(term)
    factor = "" if rest == 1 else "-" if rest == -1 else w.tex(rest) + " "
    text = rf"{factor}\left({inner}\right)"
    return [text] if _width(text) <= _MAX_WIDTH else [w.tex(rest * term) for term in ordered]


def _layer_rows(w: _Writer) -> None:
    """One function per layer kind, its terms in forward order: the difference from an earlier
    kind with the same patterns, or its own terms, with the leading or trailing run of terms that
    every such kind has alike (same formula, same values) written once, as ``F_{common}``."""
    terms = {unit.name: _terms(w, unit) for unit in w.selection.kinds}
    patterns = {name: [(slot, pattern) for slot, pattern, _ in these] for name, these in terms.items()}
    like = {}
    for i, unit in enumerate(w.selection.kinds):
        like[unit.name] = next((other.name for other in w.selection.kinds[:i] if patterns[other.name] == patterns[unit.name] and like[other.name] is None), None)
    full = [unit for unit in w.selection.kinds if like[unit.name] is None]
    lead, tail = _shared_run(w, terms, full)
    common = terms[full[0].name][:lead] if lead else terms[full[0].name][len(terms[full[0].name]) - tail :]
    if len(common) == 1 and _width(sympy.latex(common[0][2], symbol_names=w.names)) <= _width(r"F_{\mathrm{common}}(s)"):
        common = []  # one term no longer than its name
    w.common = [unit.name for unit in full] if common else []
    _sum_rows(w, r"F_{\mathrm{common}}(s)", common)
    for unit in w.selection.kinds:
        lhs = f"F_{{{_name(unit)}}}(s)"
        if like[unit.name] is not None:
            theirs = {slot: expr for slot, _, expr in terms[like[unit.name]]}
            delta = sympy.factor(sum((expr - theirs[slot] for slot, _, expr in terms[unit.name]), sympy.Integer(0)))
            w.row(lhs, f"= F_{{{_name_of(w.selection, like[unit.name])}}}(s)", "same patterns as " + like[unit.name])
            for part in _difference(w, unit, delta) if delta != 0 else []:
                w.row("", _continued(part))
            continue
        own = terms[unit.name][lead : len(terms[unit.name]) - tail] if common else terms[unit.name]
        if common and lead:
            w.row(lhs, r"= F_{\mathrm{common}}(s)")
        _sum_rows(w, "" if common and lead else lhs, own)
        if common and tail:
            w.row("", _continued(r"F_{\mathrm{common}}(s)"))


def _combined(terms: list[tuple[str, Pattern, sympy.Expr]]) -> list[tuple[list[tuple[str, Pattern]], sympy.Expr]]:
    """*terms* with identical ones combined where the first of them falls (the forward order of
    the first uses kept): ``[([(slot, pattern), ...], expr), ...]``."""
    combined: dict[sympy.Expr, list[tuple[str, Pattern]]] = {}
    for slot, pattern, expr in terms:
        combined.setdefault(expr, []).append((slot, pattern))
    return [(fills, expr) for expr, fills in combined.items()]


def _sum_rows(w: _Writer, lhs: str, terms: list[tuple[str, Pattern, sympy.Expr]]) -> None:
    """*terms* as one sum, ``lhs = ...`` or, without *lhs*, continuing one: a term that several
    slots count alike written once with their number, ``3 \\cdot 2 d_{\\mathrm{h}} n_{\\mathrm{h}} h s``,
    and that or a term with no symbol of its own (``2 h s``) explained in the definitions by
    the slots' summaries."""
    for i, (fills, expr) in enumerate(_combined(terms)):
        note = "; ".join(f"{slot}: {pattern.name}" for slot, pattern in fills)
        first = lhs if i == 0 else ""
        if len(fills) == 1:
            w.rows_of(first, expr, note=note)
            text = sympy.latex(expr, symbol_names=w.names)
        else:
            inner = w.tex(expr)
            text = rf"{len(fills)} \cdot " + (rf"\left({inner}\right)" if expr.is_Add else inner)
            w.row(first, f"= {text}" if first else _continued(text), note)
        if len(fills) > 1 or expr.free_symbols <= {s, h}:
            summaries = [w.selection.slots[slot].summary for slot, _ in fills]
            said = summaries[0] if len(fills) == 1 else ", ".join(summaries[:-1]) + " and " + summaries[-1]
            each = f", each ${w.tex(expr)}$" if len(fills) > 1 else ""
            w.terms.setdefault(text, f"{said}{each}")


def _name_of(selection: ModelSelection, kind: str) -> str:
    return _name(selection.kind(kind))


def _block_rows(w: _Writer) -> None:
    """``F_{block}(s)``: the FLOPs of a block of extra layers (e.g. prediction modules) as the sum
    of the layer-kind functions above, when its layers are of decoder kinds (else the symbol and
    its meaning in the legend say what it is)."""
    kinds = {unit.name: unit for unit in w.selection.kinds}
    for block, names in w.selection.model.plan.blocks.items():
        info = w.selection.symbols.get(f"{block}_block")  # the name symbols.block_flops gives it
        if info is None or not set(names) <= set(kinds):
            continue
        counts = {name: names.count(name) for name in dict.fromkeys(names)}
        parts = [f"{c}\\,F_{{{_name(kinds[n])}}}(s)" if c != 1 else f"F_{{{_name(kinds[n])}}}(s)" for n, c in counts.items()]
        w.names[info.symbol] = f"{info.latex}(s)"
        w.row(w.names[info.symbol], "= " + " + ".join(parts))


def _total_rows(w: _Writer, numbered: bool) -> None:
    """``F(s)``: the kinds times their layer counts plus the model-level terms, one summand per row."""
    selection = w.selection
    w.merged_width = w.max_width = _NUMBERED_WIDTH
    for i, unit in enumerate(selection.kinds):
        text = f"{unit.count}\\,F_{{{_name(unit)}}}(s)" if unit.count != 1 else f"F_{{{_name(unit)}}}(s)"
        w.row("" if i else "F(s)", _continued(text) if i else f"= {text}")
    for i, (slot, pattern, expr) in enumerate(_terms(w, selection.head)):
        w.rows_of("" if selection.kinds or i else "F(s)", expr, note=f"{slot}: {pattern.name}")
    w.merged_width, w.max_width = _MERGED_WIDTH, _MAX_WIDTH
    if numbered:
        w.numbered_row = len(w.rows) - 1


def _serving_rows(w: _Writer, result: Result) -> None:
    """A serving step in terms of F: s new tokens after c cached ones (query-local masks), less the
    per-position slots' work on all but the last position when only its logits are computed."""
    selection = result.selection
    cached = selection.symbols["cached"].symbol
    w.used.append(cached)
    if len(set(result.cached)) == 1:
        w.constants[cached] = result.cached[0]
    if result.logits == "all":
        w.row(r"F(s \mid c)", "= F(c + s) - F(c)")
        return
    slots = sorted({slot for unit in selection.units for slot in unit.per_position if slot in unit.terms})
    w.row(r"F(s \mid c)", r"= F(c + s) - F(c) - (s - 1)\,F_{1},")
    w.row("", rf"\qquad F_{{1}}\!: \text{{{escape(', '.join(slots))} at one position}}")


def _result_rows(w: _Writer, result: Result) -> None:
    """The evaluated total in scientific notation with the exact integer, and FLOPs per token."""
    if result.serving:
        _serving_rows(w, result)
    cached = result.cached or (0,) * len(result.seqlens)
    counts: dict[tuple[int, int], int] = {}
    for length, prefix in zip(result.seqlens, cached):
        counts[length, prefix] = counts.get((length, prefix), 0) + 1

    def call(n: int, c: int) -> str:
        return rf"F({n} \mid {c})" if result.serving else f"F({n})"

    batch = "" if result.batch == 1 else f"{result.batch}\\,"
    if len(counts) <= 3:
        calls = " + ".join(f"{k}\\,{call(n, c)}" if k != 1 else call(n, c) for (n, c), k in counts.items())
    else:
        calls = rf"\textstyle\sum_{{i=1}}^{{{len(result.seqlens)}}} F(s_i)"
    lhs = f"{batch}({calls})" if batch and len(counts) > 1 else batch + calls
    media = result.batch * sum(placed.forward for placed in result.placed)
    if media:  # F counts the language model over text and media tokens; I the media's own work
        bidirectional = any(placed.encoded is not None and placed.encoded.bidirectional for placed in result.placed)
        held = {medium for placed in result.placed for medium, each in (("images", placed.encoded), ("videos", placed.videos),
                                                                        ("audio", placed.audio)) if each is not None}
        media_words = ", ".join(medium for medium in ("images", "videos", "audio") if medium in held) or "images"
        towers = " and ".join(dict.fromkeys(f"{each.part} tower" for placed in result.placed for each in placed.media)) or "vision tower"
        what = towers + (" and the image blocks' bidirectional pairs" if bidirectional else "")
        w.row("I", "= " + thousands(media) + rf"\quad\text{{(the {media_words}: {what})}}")
        lhs += " + I"
    tokens = result.batch * sum(result.seqlens)
    w.row(lhs, r"\approx " + scientific(result.forward))
    w.row("", "= " + thousands(result.forward))
    per_token = f"({lhs})/{thousands(tokens)}" if " + " in lhs and not batch else f"{lhs}/{thousands(tokens)}"  # a bare sum needs them
    w.row(per_token, r"\approx " + scientific(Fraction(result.forward, tokens)) + r"\ \text{per token}")


def _kind_values(selection: ModelSelection, symbol: sympy.Symbol) -> dict[int, list[str]]:
    """*symbol*'s values in this model, each with the units (layer kinds, model) that set it."""
    values: dict[int, list[str]] = {}
    for unit in selection.units:
        if symbol.name in unit.params:
            values.setdefault(unit.params[symbol.name], []).append(unit.name)
    return values


def _value(selection: ModelSelection, symbol: sympy.Symbol, constants: dict[sympy.Symbol, int]) -> str:
    """*symbol*'s value in this model: one number, a number per layer kind, or blank."""
    if symbol in constants:
        return thousands(constants[symbol])
    values = _kind_values(selection, symbol)
    if len(values) == 1:
        return thousands(next(iter(values)))
    return ", ".join(f"{thousands(v)}\\,(\\text{{{escape(', '.join(kinds))}}})" for v, kinds in values.items())


def _legend_symbols(w: _Writer) -> list[sympy.Symbol]:
    """The symbols the legend explains, in order of appearance (not the per-unit display ones)."""
    return [symbol for symbol in w.used if "__" not in symbol.name and symbol.name in w.selection.symbols]


def _legend_rows(w: _Writer) -> list[tuple[str, str, str]]:
    """``(LaTeX, meaning, value)`` of each symbol in order of appearance; value ``""`` if none."""
    rows = []
    for symbol in _legend_symbols(w):
        info = w.selection.symbols[symbol.name]
        rows.append((info.latex, meaning(info.meaning), _value(w.selection, symbol, w.constants)))
    return rows


def legend(selection: ModelSelection) -> list[tuple[str, str, str]]:
    """The symbols of *selection*'s formula in order of appearance: ``(LaTeX, meaning, value)``."""
    return _legend_rows(_rows(selection, None))


def _units_text(selection: ModelSelection, names: list[str], one: bool = False) -> str:
    """Units named in words: ``sliding and full layers`` (*one*: ``one sliding and one full layer``)."""
    words = [kind_words(name) for name in names if name != selection.head.name]
    words = [f"one {word}" for word in words] if one else words
    text = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1] if words else ""
    noun = "layer" if one else "layers"
    model = "the model-level slots" if selection.head.name in names else ""
    return " and ".join(part for part in (f"{text} {noun}" if words else "", model) if part)


def _declared_acronyms(selection: ModelSelection) -> dict[str, str]:
    """The acronyms the symbols' meanings write out, ``rotary position embedding (RoPE)``: as many
    words before the parenthesis as the acronym has capitals."""
    found = {}
    for info in selection.symbols.values():
        for match in re.finditer(r"((?:[\w/-]+ )+)\(([A-Za-z]*[A-Z][A-Za-z]*)\)", info.meaning):
            words, acronym = match.group(1).split(), match.group(2)
            capitals = sum(char.isupper() for char in acronym)
            if len(acronym) > 1 and len(words) >= capitals:
                found.setdefault(acronym, " ".join(words[-capitals:]))
    return found


def _expand_acronyms(texts: list[str], glossary: dict[str, str]) -> list[str]:
    """*texts* with each acronym of *glossary* written out at its first use (``mixture of experts
    (MoE)``), unless that use already follows its expansion, and not written out again after."""
    done: set[str] = set()
    out = []
    for text in texts:
        for acronym, words in glossary.items():
            if acronym in done:
                text = text.replace(f"{words} ({acronym})", acronym)
                continue
            match = re.search(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", text)
            if match is None:
                continue
            done.add(acronym)
            if not text[: match.start()].endswith(f"{words} ("):
                text = f"{text[: match.start()]}{words} ({acronym}){text[match.end():]}"
        out.append(text)
    return out


def _definitions_list(w: _Writer) -> list[tuple[str, str]]:
    """``(LaTeX, plain-text meaning)`` of everything the equations use: the functions, the symbols
    in order of appearance (a quantity written per kind once, for all its kinds), then the terms
    :func:`_sum_rows` explains."""
    selection = w.selection
    kinds = [unit.name for unit in selection.kinds]
    entries = [("F(s)", "forward FLOPs of one sequence of $s$ tokens")]
    functions = ", ".join(f"F_{{{_name(unit)}}}(s)" for unit in selection.kinds)
    entries.append((functions, f"FLOPs of {_units_text(selection, kinds, one=True)}"))
    if w.common:
        entries.append((r"F_{\mathrm{common}}(s)", f"the terms {_units_text(selection, w.common)} share, identical in each"))
    constants, seen = w.constants, set()
    for symbol in w.used:
        if "__" in symbol.name:
            quantity = symbol.name.split("__", 1)[0]
            if quantity in seen:
                continue
            seen.add(quantity)
            units = [unit for (unit, q) in w.per_unit if q == quantity]
            tex = ", ".join(w.names[w.per_unit[unit, quantity]].removesuffix("(s)") for unit in units)
            entries.append((tex, f"{meaning(selection.symbols[quantity].meaning)}, in {_units_text(selection, units)}"))
        elif symbol.name in selection.symbols:
            info = selection.symbols[symbol.name]
            values = {} if symbol in constants else _kind_values(selection, symbol)
            text = meaning(info.meaning)
            if len(values) > 1:
                per_kind = ", ".join(f"${thousands(v)}$ in {_units_text(selection, names)}" for v, names in values.items())
                entries.append((info.latex, f"{text}: {per_kind}"))
            else:
                value = _value(selection, symbol, constants)
                entries.append((f"{info.latex} = {value}" if value else info.latex, text))
    return entries + list(w.terms.items())


def _legend(w: _Writer) -> str:
    r"""The definitions of every symbol as one paragraph after ``where`` (so that it breaks across
    columns and pages), set small and ragged right, one definition per source line:
    ``$d_{\mathrm{h}} = 256$: width of one attention head;``; a value that differs between layer
    kinds follows the meaning (``$256$ in sliding layers, $512$ in full layers``)."""
    entries = _definitions_list(w)
    texts = _expand_acronyms([text for _, text in entries], ACRONYMS | _declared_acronyms(w.selection))
    lines = [f"${tex}$: {escape_keeping_maths(text)};" for (tex, _), text in zip(entries, texts)]
    return "{\\small\\raggedright\\noindent where\n" + "\n".join(lines)[:-1] + ".\\par}\n"


def escape_keeping_maths(text: str) -> str:
    """*text* escaped for text mode, its ``$...$`` spans kept as maths."""
    parts = text.split("$")
    return "$".join(part if i % 2 else escape(part) for i, part in enumerate(parts))


def _rows(selection: ModelSelection, result: Result | None, annotate: bool = False) -> _Writer:
    """The writer with every row of *selection* (and *result*'s totals) written."""
    w = _Writer(selection, annotate)
    w.named = _named(selection)
    shared, per_unit = _quantities(selection, w.named)
    w.per_unit = per_unit
    w.constants = _definitions(w, shared, per_unit)
    _layer_rows(w)
    _block_rows(w)
    _total_rows(w, True)
    if result is not None:
        _result_rows(w, result)
    return w


def mathjax(selection: ModelSelection, result: Result | None = None) -> str:
    """The equations alone as ``$$\\begin{aligned}...$$``: what MathJax 3 renders in Jupyter (no
    tabular, no comments, no equation numbers)."""
    rows = _rows(selection, result).rows
    return "$$\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}$$"


def latex(selection: ModelSelection, result: Result | None = None, *, document: bool = False, numbered: bool = True, annotate: bool = False) -> str:
    """*selection*'s closed form as paste-ready LaTeX (see the module docstring).

    The fragment compiles in any document that loads ``amsmath``; ``document=True`` wraps it in a
    complete ``article`` for plain ``pdflatex``. ``numbered`` gives the model total ``F(s)`` an
    equation number (the only one); ``annotate`` adds each row's slot and pattern as a comment.
    """
    w = _rows(selection, result, annotate)
    if not numbered:
        w.numbered_row = -1
    rows = _lines(w.rows, w.numbered_row)
    what = f"{title(selection.model, selection.hf_readers)}: forward FLOPs F(s) of one sequence of s tokens"
    if selection.convention != "exact":
        what += f", counted as the {selection.convention} convention does"
    body = (
        f"% {escape(what)}.\n{_NEEDS}\n"
        "\\begin{align}\n" + "\n".join(rows) + "\n\\end{align}\n" + _legend(w) + (_towers(selection) if result is None or any(held is not None for held in (result.images, result.videos, result.audio)) else "")
    )
    if not document:
        return body
    return (
        f"\\documentclass{{article}}\n{PREAMBLE}\\begin{{document}}\n"
        f"\\section*{{{escape(title(selection.model, selection.hf_readers))}}}\n" + body + "\\end{document}\n"
    )


def _towers(selection: ModelSelection) -> str:
    """The closed forms of the towers that encode images, an ``align`` each after the language
    model's: one image of t x rows x columns patches, its named parts, each piece, then their sum
    with the tower's dims substituted (exact counts only; in the formula, not in a result of text
    alone, where the tower costs nothing)."""
    if selection.convention != "exact":
        return ""
    blocks = []
    for part, kind in tower_kinds(selection.model, selection.hf_readers).items():
        if not kind.flops:
            continue
        w = _Writer(selection, annotate=False)
        w.names = {dim.symbol: dim.latex or (_subscript(dim.name) if len(dim.name) > 1 else dim.name) for dim in kind.dims}
        w.names.update(zip(IMAGE_GRID, IMAGE_GRID_LATEX, strict=True))
        grid = ", ".join(IMAGE_GRID_LATEX)
        rows = closed_form_rows(kind, selection.model.towers[part].dims)
        total = next(i for i, (role, _, _) in enumerate(rows) if role == "total")
        # after the total, of the named parts in the dims' values only the numbers (k = 2): the rest
        # follow from them and their forms above, and the block stays within a page
        for role, name, expr in rows[: total + 1] + [row for row in rows[total + 1:] if row[2].is_Number]:
            if role == "where":
                lhs = sympy.latex(where_symbol(name))
            else:
                lhs = f"F_{{{_subscript(part)}}}({grid})" if role == "total" else f"F_{{{_subscript(name)}}}"
            w.rows_of(lhs, expr)
        what = f"{part} tower ({kind.title}): forward FLOPs of " + (
            grid_words(kind).replace("rows", "r").replace("columns", "c") if kind.images is not None and kind.images.takes == "audio"
            else "one image of t x r x c patches (frames, rows, columns); the images of a sequence sum it")
        blocks.append(f"% {escape(what)}.\n\\begin{{align}}\n" + "\n".join(_lines(w.rows, -1)) + "\n\\end{align}\n")
    for part, kind in tower_kinds(selection.model, selection.hf_readers).items():
        if not kind.sequence_flops:  # cross-attention layers that run only with images (Mllama's)
            continue
        w = _Writer(selection, annotate=False)
        w.names = {dim.symbol: dim.latex or (_subscript(dim.name) if len(dim.name) > 1 else dim.name) for dim in kind.dims}
        w.names.update(zip(CROSS_ATTENTION, CROSS_ATTENTION_LATEX, strict=True))
        over = ", ".join(CROSS_ATTENTION_LATEX)
        for role, name, expr in sequence_form_rows(kind, selection.model.towers[part].dims):
            w.rows_of(f"F_{{{_subscript(part)}}}({over})" if role == "total" else f"F_{{{_subscript(name)}}}", expr)
        what = f"{part} tower ({kind.title}): {SEQUENCE_FORMS} (l, v, p)"
        blocks.append(f"% {escape(what)}.\n\\begin{{align}}\n" + "\n".join(_lines(w.rows, -1)) + "\n\\end{align}\n")
    return "".join(blocks)


def title(model: Model, readers: Mapping[str, HFReader] | None = None) -> str:
    """*model*'s name as people write it: a bundled example's own title (the start of its file's
    first comment, ``# Gemma 3 4B (text decoder): ...`` -> ``Gemma 3 4B``); for a model read from a
    config.json that names none (its name is its model_type), the title its reader in *readers*
    declares (``glm5_next`` -> ``GLM-5 Next``), else the model_type with spaces for underscores;
    else the last part of its name (a ``_name_or_path`` such as ``zai-org/GLM-5.3-Flash``)."""
    name = model.name
    path = example_path(name)
    if path is not None:
        with path.open(encoding="utf-8") as file:
            match = re.match(r"# (.+?)(?: \(|:)", file.readline())
        return match.group(1) if match else name
    if family_flag(name) in model.flags:
        reader = (readers or {}).get(name)
        return reader.title if reader is not None and reader.title else name.replace("_", " ")
    return name.rstrip("/").rsplit("/", 1)[-1] or name


def _lines(rows: list[str], numbered: int) -> list[str]:
    """The ``align`` lines: ``\\notag`` on every row but the *numbered* one, ``\\\\`` between rows,
    and each row's comment after both."""
    lines = []
    for i, row in enumerate(rows):
        code, sep, comment = row.partition(" % ")
        code += "" if i == numbered else r" \notag"
        code += "" if i == len(rows) - 1 else r" \\"
        lines.append(code + (f" % {comment}" if sep else ""))
    return lines
