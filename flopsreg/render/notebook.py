"""Markdown views of results, selections, comparisons and registries, for Jupyter's rich display.

Maths goes in ``$...$`` and ``$$\\begin{aligned}...$$`` only, which MathJax 3 (Jupyter's
renderer) handles; tables are Markdown tables, never LaTeX ``tabular`` or ``itemize``.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING

from flopsreg.engine.compare import ratio_text
from flopsreg.render.tex import legend, mathjax, scientific

if TYPE_CHECKING:
    from flopsreg.engine.compare import Comparison
    from flopsreg.engine.compose import ModelSelection
    from flopsreg.engine.evaluate import Result
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["comparison_markdown", "markdown_table", "registry_markdown", "result_markdown", "selection_markdown"]


def markdown_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A Markdown table; ``|`` in a cell is escaped."""
    lines = [list(header)]
    lines += [[str(cell).replace("|", r"\|") for cell in row] for row in rows]
    text = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
    return "\n".join(text + ["| " + " | ".join(row) + " |" for row in lines[1:]])


def _number(n: int) -> str:
    """*n* in scientific notation (maths) with the exact integer beside it (code)."""
    return f"${scientific(n)}$ (`{n:,}`)"


def _legend_table(plan: ModelSelection) -> str:
    return markdown_table(("symbol", "meaning", "value"), ((f"${tex}$", text, value.replace("{,}", ",")) for tex, text, value in legend(plan)))


def selection_markdown(plan: ModelSelection) -> str:
    """The closed form and its symbols, with the pattern chosen for each slot of each layer kind."""
    head = f"**{plan.model.name}**: forward FLOPs $F(s)$ of one sequence of $s$ tokens"
    if plan.convention != "exact":
        head += f" ({plan.convention} convention)"
    rows = [(unit.name, str(unit.count), ", ".join(f"{slot}: {name}" for slot, name in unit.patterns.items())) for unit in plan.units]
    return "\n\n".join([head, mathjax(plan), _legend_table(plan), markdown_table(("kind", "count", "patterns"), rows)])


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
        ("kind", "count", "FLOPs per layer"),
        ((unit.name, str(unit.count), f"`{result.unit_totals[unit]:,}`") for unit in result.selection.units),
    )
    warnings = [f"- warning: {w}" for w in result.warnings]
    return "\n\n".join([head, totals, kinds, mathjax(result.selection, result), _legend_table(result.selection), *warnings])


def comparison_markdown(comparison: Comparison) -> str:
    """Each convention against exact, then every difference with its reason."""
    exact = comparison.exact
    rows = []
    for total in comparison.totals:
        if total.result is None:
            rows.append((total.convention, "-", "-", f"cannot count: {total.error}"))
        else:
            rows.append((total.convention, _number(total.result.forward), _number(total.result.training), ratio_text(total.ratio(exact))))
    parts = [f"**{exact.model.name}**: conventions against exact", markdown_table(("convention", "forward", "training", "vs exact"), rows)]
    if comparison.differences:
        parts.append("\n".join(f"- {d}" for d in comparison.differences))
    return "\n\n".join(parts)


def registry_markdown(registry: PluginLoader) -> str:
    """Every registered pattern: slot, name, flags, precedence and formula."""
    rows = (
        (p.slot, f"`{p.name}`", ", ".join(sorted(p.flags)) or "(default)", str(p.precedence), f"${p.formula_latex}$")
        for p in sorted(registry.patterns, key=lambda p: (list(registry.slots).index(p.slot) if p.slot in registry.slots else 0, -p.precedence))
    )
    head = f"**flopsreg registry**: {len(registry.patterns)} patterns in {len(registry.slots)} slots; conventions: exact, {', '.join(registry.conventions)}"
    return head + "\n\n" + markdown_table(("slot", "pattern", "flags", "precedence", "formula"), rows)
