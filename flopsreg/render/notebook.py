"""Markdown views of results, selections, comparisons, registries, generations, parameters and
utilisations, for Jupyter's rich display.

Maths goes in ``$...$`` and ``$$\\begin{aligned}...$$`` only, which MathJax 3 (Jupyter's
renderer) handles; tables are Markdown tables, never LaTeX ``tabular`` or ``itemize``. Plugins'
one-line summaries write maths in ASCII (``QK^T``, ``s^2/2``, ``n x (a // b)``):
:func:`maths_text` puts it in ``$...$`` as LaTeX. The model-level slots are shown as such, never
as a layer kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING

import attrs

from flopsreg.engine.parameters import MODEL
from flopsreg.engine.utilisation import StepUtilisation, Utilisation
from flopsreg.render.tex import legend, mathjax, scientific

if TYPE_CHECKING:
    from flopsreg.engine.compare import Comparison, Difference
    from flopsreg.engine.compose import ModelSelection, UnitSelection
    from flopsreg.engine.evaluate import Result
    from flopsreg.engine.parameters import Parameters
    from flopsreg.engine.serving import Generation
    from flopsreg.plugins.loader import PluginLoader

__all__ = [
    "comparison_markdown",
    "equations",
    "generation_markdown",
    "markdown_table",
    "maths_text",
    "parameters_markdown",
    "patterns_markdown",
    "registry_markdown",
    "result_markdown",
    "selection_markdown",
    "utilisation_markdown",
]

MODEL_LEVEL_ROW = "model-level slots"  # the row of the head unit in kind tables: never shown as a kind


def markdown_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A Markdown table; ``|`` in a cell is escaped."""
    lines = [list(header)]
    lines += [[str(cell).replace("|", r"\|") for cell in row] for row in rows]
    text = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
    return "\n".join(text + ["| " + " | ".join(row) + " |" for row in lines[1:]])


def equations(plan: ModelSelection, result: Result | None = None) -> str:
    r"""The closed form as ``$$\begin{aligned}...$$`` with binary spacing on continuation rows:
    MathJax reads ``&\quad + x`` as a unary plus, ``&\quad {}+{} x`` as the binary one."""
    return re.sub(r"\\quad ([+-]) ", r"\\quad {}\1{} ", mathjax(plan, result))


def _number(n: int) -> str:
    """*n* in scientific notation (maths) with the exact integer beside it (code); a small one alone."""
    return f"${n}$" if abs(n) < 10_000 else f"${scientific(n)}$ (`{n:,}`)"


def _ratio(value: Fraction | None) -> str:
    """A ratio to exact in maths, ``$1.045\\times$``; words where exact counts nothing."""
    return "exact counts none" if value is None else f"${float(value):.5g}\\times$"


def _unit_name(unit: UnitSelection) -> str:
    return unit.name if unit.scope == "layer" else MODEL_LEVEL_ROW


def _legend_table(plan: ModelSelection) -> str:
    return markdown_table(("symbol", "meaning", "value"), ((f"${tex}$", maths_text(text), value.replace("{,}", ",")) for tex, text, value in legend(plan)))


def selection_markdown(plan: ModelSelection) -> str:
    """The closed form and its symbols, with the pattern chosen for each slot of each layer kind."""
    head = f"**{plan.model.name}**: forward FLOPs $F(s)$ of one sequence of $s$ tokens"
    if plan.convention != "exact":
        head += f" ({plan.convention} convention)"
    rows = [(_unit_name(unit), str(unit.count), ", ".join(f"{slot}: {name}" for slot, name in unit.patterns.items())) for unit in plan.units]
    return "\n\n".join([head, equations(plan), _legend_table(plan), markdown_table(("layer kind", "layers", "patterns"), rows)])


def result_markdown(result: Result) -> str:
    """Totals, FLOPs per layer kind, the closed form and its symbols."""
    tokens = result.batch * sum(result.seqlens)
    lengths = ", ".join(str(n) for n in result.seqlens[:8]) + (", ..." if len(result.seqlens) > 8 else "")
    head = f"**{result.model.name}**: batch {result.batch} × ({lengths}) tokens, convention {result.convention}"
    totals = markdown_table(
        ("", "FLOPs"),
        [
            ("forward", _number(result.forward)),
            ("training", _number(result.training)),
            ("forward per token", f"${scientific(Fraction(result.forward, tokens))}$"),
        ],
    )
    kinds = markdown_table(
        ("layer kind", "layers", "FLOPs per layer"),
        ((_unit_name(unit), str(unit.count), f"`{result.unit_totals[unit]:,}`") for unit in result.selection.units),
    )
    warnings = [f"- warning: {w}" for w in result.warnings]
    return "\n\n".join([head, totals, kinds, equations(result.selection, result), _legend_table(result.selection), *warnings])


def _difference(d: Difference) -> str:
    effects = "; ".join(f"{slot}: {_ratio(r)}" + ("" if r is None else " exact") for slot, r in d.effects)
    return f"- {d.convention}: {d.where}, `{d.slot}`: `{d.pattern}` instead of `{d.exact_pattern}` ({maths_text(d.reason)}); {effects}"


def comparison_markdown(comparison: Comparison) -> str:
    """Each convention against exact, then every difference with its reason, maths in ``$...$``."""
    exact = comparison.exact
    rows = []
    for total in comparison.totals:
        if total.result is None:
            rows.append((total.convention, "-", "-", f"cannot count: {maths_text(total.error or '')}"))
        else:
            rows.append((total.convention, _number(total.result.forward), _number(total.result.training), _ratio(total.ratio(exact))))
    parts = [f"**{exact.model.name}**: conventions against exact", markdown_table(("convention", "forward", "training", "forward / exact"), rows)]
    if comparison.differences:
        parts.append("\n".join(_difference(d) for d in comparison.differences))
    return "\n\n".join(parts)


def registry_markdown(registry: PluginLoader) -> str:
    """How many patterns fill each slot, in forward order; the whole list is ``flopsreg patterns``."""
    counts = dict.fromkeys(registry.slots, 0)
    for p in registry.patterns:
        counts[p.slot] = counts.get(p.slot, 0) + 1
    rows = ((f"`{slot}`", registry.slots[slot].scope if slot in registry.slots else "-", str(n), maths_text(registry.slots[slot].summary) if slot in registry.slots else "") for slot, n in counts.items())
    head = (
        f"**flopsreg registry**: {len(registry.patterns)} patterns in {len(registry.slots)} slots; conventions: exact, "
        f"{', '.join(registry.conventions)}. Every pattern with its formula: "
        "`Markdown(reg.patterns_markdown())` (`from IPython.display import Markdown`), or `flopsreg patterns` in a shell."
    )
    return head + "\n\n" + markdown_table(("slot", "scope", "patterns", "what fills it"), rows)


def patterns_markdown(registry: PluginLoader) -> str:
    """Every registered pattern, in forward slot order: slot, name, flags, precedence and formula."""
    order = {slot: i for i, slot in enumerate(registry.slots)}
    rows = (
        (f"`{p.slot}`", f"`{p.name}`", ", ".join(sorted(p.flags)) or "(default)", str(p.precedence), f"${p.formula_latex}$")
        for p in sorted(registry.patterns, key=lambda p: (order.get(p.slot, len(order)), -p.precedence))
    )
    return markdown_table(("slot", "pattern", "flags", "precedence", "formula"), rows)


def generation_markdown(gen: Generation) -> str:
    """Prefill, decode and their total, with FLOPs per generated token."""
    rows = [
        (f"prefill ({gen.prompt} tokens, logits at the last)", _number(gen.prefill_flops)),
        (f"decode ({gen.decode_steps} step{'s' * (gen.decode_steps != 1)} of one token)", _number(gen.decode_flops)),
        ("total", _number(gen.total)),
        ("per generated token", f"${scientific(gen.per_token)}$"),
    ]
    if gen.decode_per_token is not None:
        rows.append(("per decode step and sequence", f"${scientific(gen.decode_per_token)}$"))
    head = f"**{gen.prefill.model.name}**: batch {gen.batch}, prompt of {gen.prompt} tokens, {gen.new_tokens} new tokens, convention {gen.prefill.convention}"
    return head + "\n\n" + markdown_table(("", "forward FLOPs"), rows)


def _decimal(value: Fraction | int) -> str:
    """*value* in maths: a short decimal in the everyday range, else scientific notation."""
    return f"{float(value):.6g}" if Fraction(1, 1000) <= abs(value) < 10**6 else scientific(value)


def utilisation_markdown(utilisation: Utilisation | StepUtilisation) -> str:
    r"""A step's MFU and HFU (or one utilisation) as :math:`F / (t\,n\,P)`, with the numbers they come from."""
    step = isinstance(utilisation, StepUtilisation)
    pair = (utilisation.mfu, utilisation.hfu) if step else (utilisation,)
    first = pair[0]
    head = f"$n = {first.devices}$ device(s) at peak $P = {_decimal(first.peak)}$ FLOP/s each, step time $t = {_decimal(first.seconds)}$ s"
    if step:
        result = utilisation.result
        head = f"**{result.model.name}**: batch {result.batch} × {sum(result.seqlens)} tokens (recompute {result.recompute}), {head}"
    rows = [(u.name, f"${u.decimal(6)}$", _number(u.flops)) for u in pair]
    return head + "\n\n" + markdown_table(("", r"$F / (t\,n\,P)$", "FLOPs $F$ of the step"), rows)


def parameters_markdown(params: Parameters) -> str:
    """The totals, then the weights of each slot by layer kind, model-level slots named as such."""
    blocks = "".join(f"; block {name}: {_number(value)} (not in the total)" for name, value in params.blocks.items())
    head = (
        f"**{params.model}**: {params.total:,} parameters (${scientific(params.total)}$), "
        f"{params.active:,} active per token (${scientific(params.active)}$)"
    )
    fields = attrs.fields(type(params))  # the parts' names, as Parameters.text gives them
    tied = f" (tied: held once, in the {fields.embedding.name})" if not params.head else ""
    sizes = f"{fields.embedding.name} {_number(params.embedding)}, {fields.head.name} {_number(params.head)}{tied}{blocks}"
    rows = (
        (MODEL_LEVEL_ROW if s.where == MODEL else s.where, f"`{s.slot}`", f"`{s.pattern}`", str(s.layers), f"`{s.weights:,}`", f"`{s.active:,}`")
        for s in params.shares
    )
    return f"{head}\n\n{sizes}\n\n" + markdown_table(("layer kind", "slot", "pattern", "times", "weights", "active"), rows)


# -- ASCII maths in plugins' summaries ---------------------------------------------------------

_TOKEN = re.compile(r"\s+|//|->|[A-Za-z][A-Za-z0-9_]*(?:\^(?:T|\d+))?|\d+(?:\^\d+)?|.", re.S)
_FUNCTIONS = {"min": r"\min", "max": r"\max", "floor": None, "exp": r"\exp", "sqrt": None}
_OPERATORS = {"+": "+", "-": "-", "*": r"\,", "/": "/", "x": r"\times", "=": "=", "<": "<", ">": ">", "//": "//"}
_STRONG, _SYMBOL, _ACRONYM = "strong", "symbol", "acronym"  # kinds of factor: see _Parser.factor
_WORD = re.compile(r"[a-z]{2,}")  # an English word: two or more lowercase letters, no digit or underscore


def _identifier(token: str) -> str | None:
    """*token* as LaTeX if it reads as a maths symbol (``s``, ``d_qk``, ``QK^T``, ``2``), else None."""
    base, _, power = token.partition("^")
    if not re.fullmatch(r"[A-Za-z0-9_]+", base):
        return None
    if base.isdigit():
        latex = base
    elif "_" in base:
        head, _, tail = base.partition("_")
        if len(head) > 1 or not tail:  # a config name: head_dim, args_vocab
            latex = _upright(base)
        else:  # a symbol with a subscript: d_qk, F_e
            latex = f"{head}_{{{tail if len(tail) == 1 else _upright(tail)}}}"
    elif len(base) == 1 and base not in "ax" or (base.isupper() and len(base) <= 3) or (power and len(base) <= 4):
        latex = base
    else:
        return None
    return latex + ("" if not power else "^{\\top}" if power == "T" else f"^{{{power}}}")


def _upright(name: str) -> str:
    return r"\mathrm{" + name.replace("_", r"\_") + "}"


class _Parser:
    """A small recursive-descent reader of the ASCII expressions summaries write."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens

    def _skip(self, i: int) -> int:
        return i + 1 if i < len(self.tokens) and self.tokens[i].isspace() else i

    def factor(self, i: int) -> tuple[int, str, str] | None:
        """``(next index, LaTeX, kind)`` of one factor at *i*: kind ``_STRONG`` (a power, a function,
        a bracket), ``_SYMBOL`` (a letter, number or subscripted name) or ``_ACRONYM`` (``TP``, ``CSA``)."""
        if i >= len(self.tokens):
            return None
        token = self.tokens[i]
        if token in _FUNCTIONS and i + 1 < len(self.tokens) and self.tokens[i + 1] == "(":
            args = self.arguments(i + 2)
            if args is None:
                return None
            end, parts = args
            if token == "floor":
                return end, r"\left\lfloor " + ", ".join(parts) + r" \right\rfloor", _STRONG
            if token == "sqrt":
                return end, r"\sqrt{" + ", ".join(parts) + "}", _STRONG
            return end, _FUNCTIONS[token] + r"\left(" + ", ".join(parts) + r"\right)", _STRONG
        if token.startswith("sum_") and len(token) <= 6:
            body = self.product(self._skip(i + 1))
            if body is None:
                return None
            return body[0], rf"\sum_{{{token[4:]}}} {body[1]}", _STRONG
        if token == "(":
            args = self.arguments(i + 1)
            if args is None or len(args[1]) != 1:
                return None
            end, (inner,) = args
            return end, inner if inner.startswith(r"\left\lfloor") else r"\left(" + inner + r"\right)", _STRONG
        latex = _identifier(token)
        if token == "a" and self.tokens[i + 1 : i + 2] == ["("]:
            latex = "a"  # a coefficient applied to a bracket: a(I - b K K^T)
        if latex is None and _WORD.fullmatch(token) and "//" in (self.tokens[self._skip(i + 1)] if self._skip(i + 1) < len(self.tokens) else "", self.tokens[i - 2] if i > 1 else ""):
            latex = _upright(token)  # a config name divided: (dim // n_heads)
        if latex is None:
            return None
        kind = _STRONG if "^" in token else _ACRONYM if len(token) > 1 and token.isupper() or token.isalpha() and len(token) > 1 and "_" not in token else _SYMBOL
        return i + 1, latex, kind

    def arguments(self, i: int) -> tuple[int, list[str]] | None:
        parts = []
        while True:
            found = self.expression(self._skip(i))
            if found is None:
                return None
            i, latex, _ = found
            parts.append(latex)
            i = self._skip(i)
            if i < len(self.tokens) and self.tokens[i] == ",":
                i += 1
                continue
            if i < len(self.tokens) and self.tokens[i] == ")":
                return i + 1, parts
            return None

    def product(self, i: int) -> tuple[int, str, bool] | None:
        """Factors side by side (``2 s h^2``)."""
        first = self.factor(i)
        if first is None:
            return None
        i, latex, kind = first
        pieces, maths, spaced = [latex], kind == _STRONG, kind == _SYMBOL
        while True:
            j = self._skip(i)
            touching = j < len(self.tokens) and (self.tokens[j] == "(" or self.tokens[i - 1] == ")" or self.tokens[i - 1].isdigit())
            nxt = self.factor(j) if j > i or touching else None
            if nxt is None:
                break
            spaced = spaced and nxt[2] == _SYMBOL and j > i  # "4 s h": maths; "V4 CSA", "3n": words
            i, piece, kind = nxt
            pieces.append(piece)
            maths = maths or kind == _STRONG
        return i, " ".join(pieces), maths or spaced and len(pieces) > 1

    def expression(self, i: int) -> tuple[int, str, bool] | None:
        """Products joined by operators; ``a // b`` (alone) is written as a floor."""
        first = self.product(i)
        if first is None:
            return None
        i, latex, maths = first
        operands, operators = [latex], []
        while True:
            j = self._skip(i)
            if j >= len(self.tokens) or self.tokens[j] not in _OPERATORS:
                break
            operand = self.product(self._skip(j + 1))
            if operand is None:
                break
            spaced = self.tokens[j - 1].isspace() and self.tokens[j + 1].isspace()
            operators.append(self.tokens[j])
            operands.append(operand[1])
            maths = maths or operand[2] or self.tokens[j] != "-" or spaced  # "0-28", "GLM-5": words
            i = operand[0]
        if operators == ["//"]:
            return i, rf"\left\lfloor {operands[0]}/{operands[1]} \right\rfloor", True
        if "//" in operators:
            return None
        text = operands[0] + "".join(f" {_OPERATORS[op]} {operand}" for op, operand in zip(operators, operands[1:]))
        return i, text, maths


def maths_text(text: str) -> str:
    """*text* for Markdown with its ASCII maths (``QK^T``, ``s^2/2 pairs``, ``n_head x (n_embd //
    n_head)``, ``floor((t + 1)/m)``) as LaTeX in ``$...$``, and ``->`` as an arrow; words stay words."""
    tokens = _TOKEN.findall(text)
    parser, out, i = _Parser(tokens), [], 0
    while i < len(tokens):
        starts_word = i == 0 or not re.match(r"[A-Za-z0-9_.]", tokens[i - 1][-1:])
        found = parser.expression(i) if starts_word else None
        if found is not None and found[2]:
            end, latex, _ = found
            out.append(f"${latex}$")
            i = end
            continue
        times = tokens[i] == "x" and 0 < i < len(tokens) - 1 and tokens[i - 1].isspace() and tokens[i + 1].isspace()
        out.append("→" if tokens[i] == "->" else "×" if times else tokens[i])
        i += 1
    return "".join(out)
