"""Text, JSON and LaTeX views of patterns, plans and results.

LaTeX is composed here from the per-pattern formulas, one ``align`` row per term, because sympy
reorders sums and folds constants when the whole model is one expression; a pattern that gives
its own LaTeX (``Pattern.latex``) is printed as it gives it. Renderers of a selection or result
take symbol names and meanings from ``selection.symbols``, never from the registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import sympy

from flopsreg.compare import ratio_text
from flopsreg.latex import latex as paper_latex
from flopsreg.latex import mathjax
from flopsreg.notebook import comparison_markdown, registry_markdown, result_markdown, selection_markdown
from flopsreg.model import ranges_text
from flopsreg.pattern import EXACT, FLOPS, Pattern

if TYPE_CHECKING:
    from flopsreg.compare import Comparison
    from flopsreg.compose import ModelSelection, UnitSelection
    from flopsreg.evaluate import Result
    from flopsreg.registry import PluginRegistry
    from flopsreg.symbols import SymbolTable

__all__ = [
    "compare_json",
    "compare_text",
    "comparison_markdown",
    "explain_text",
    "formula_text",
    "latex",
    "layers_json",
    "mathjax",
    "pattern_latex",
    "patterns_json",
    "patterns_text",
    "registry_markdown",
    "result_json",
    "result_markdown",
    "result_text",
    "selection_markdown",
]


def _group(n: int) -> str:
    return f"{n:,}"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- patterns ---------------------------------------------------------------------------------


def patterns_json(registry: PluginRegistry) -> list[dict[str, Any]]:
    """Every registered pattern as a JSON-ready dict."""
    return [
        {
            "name": p.name,
            "slot": p.slot,
            "flags": sorted(p.flags),
            "precedence": p.precedence,
            "scope": p.scope,
            "produces": p.produces,
            "params": [param.name for param in p.params],
            "formula": str(p.formula),
            "latex": pattern_latex(p),
            "summary": p.summary,
            "reference": p.reference,
            "plugin": registry.plugin_of(p),
        }
        for p in registry.patterns
    ]


def pattern_latex(pattern: Pattern) -> str:
    """*pattern*'s formula in LaTeX: its own, if it gives one, else sympy's with the symbols' names."""
    return pattern.formula_latex


def patterns_text(registry: PluginRegistry) -> str:
    """A table of every registered pattern."""
    rows = [["slot", "pattern", "flags", "precedence", "params", "summary"]]
    for p in registry.patterns:
        rows.append(
            [
                p.slot,
                p.name,
                ", ".join(sorted(p.flags)) or "(default)",
                str(p.precedence),
                ", ".join(param.name for param in p.params) or "-",
                p.summary,
            ]
        )
    return _table(rows)


# -- explanation ------------------------------------------------------------------------------


def explain_text(plan: ModelSelection) -> str:
    """One line per slot and layer kind: the chosen pattern and why."""
    model = plan.model
    layers, kinds = model.plan.layers, len(plan.kinds)
    lines = [f"{model.name}: {layers} layer{'s' * (layers != 1)}, {kinds} kind{'s' * (kinds != 1)}"]
    if plan.convention != EXACT:
        lines.append(f"convention: {plan.convention}")
    for unit in plan.units:
        flags = ", ".join(sorted(unit.flags)) or "none"
        lines.append(f"{unit.where}: flags {flags}")
        for sel in unit.selections:
            lines.append(f"  {sel.slot}: {sel.pattern.name} ({sel.reason})")
    lines += [f"warning: {w}" for w in plan.warnings]
    return "\n".join(lines)


# -- formulas ---------------------------------------------------------------------------------


def _display_terms(
    unit: UnitSelection, symbols: SymbolTable
) -> tuple[dict[str, tuple[Pattern, sympy.Expr]], list[tuple[str, Pattern, sympy.Expr]]]:
    """Quantity rows (e.g. P(s)) and FLOPs terms, keeping produced quantities as named symbols."""
    produced = {sel.pattern.produces: sel for sel in unit.selections if sel.pattern.produces != FLOPS}
    shown: dict[str, tuple[Pattern, sympy.Expr]] = {}
    inline = {}
    for quantity, expr in unit.quantities.items():
        if quantity in produced:
            display = sympy.Symbol(f"{quantity}__{unit.name}")
            shown[quantity] = (produced[quantity].pattern, expr)
            inline[symbols[quantity].symbol] = display
        else:
            inline[symbols[quantity].symbol] = expr
    terms = []
    for sel in unit.selections:
        if sel.pattern.produces == FLOPS:
            terms.append((sel.slot, sel.pattern, sel.pattern.formula.xreplace(inline)))
    return shown, terms


def latex(plan: ModelSelection, result: Result | None = None, **options: bool) -> str:
    """The model's closed form as paste-ready LaTeX; see :func:`flopsreg.latex.latex` for *options*."""
    return paper_latex(plan, result, **options)


def formula_text(plan: ModelSelection) -> str:
    """The closed form in plain text: each layer kind's terms, then the model total."""
    lines = [f"{plan.model.name}: forward FLOPs of one sequence of seq_len tokens"]
    for unit in plan.units:
        shown, terms = _display_terms(unit, plan.symbols)
        lines.append(f"{unit.where}:")
        for quantity, (pattern, expr) in shown.items():
            lines.append(f"  {quantity} = {expr}    [{pattern.name}]")
        for slot, pattern, expr in terms:
            lines.append(f"  + {expr}    [{slot}: {pattern.name}]")
    lines.append("total, dimensions substituted:")
    lines.append(f"  F(seq_len) = {plan.expression}")
    return "\n".join(line.replace("__", "_") for line in lines)


# -- results ----------------------------------------------------------------------------------


def _lengths_text(result: Result) -> str:
    if len(result.seqlens) == 1:
        return f"batch {result.batch} x {result.seqlens[0]} tokens"
    return f"batch {result.batch} x packed row of {len(result.seqlens)} sequences ({sum(result.seqlens)} tokens)"


def result_text(result: Result) -> str:
    """A table of FLOPs per layer kind, then forward and training totals."""
    rows = [["kind", "layers", "patterns", "FLOPs per layer"]]
    for unit in result.selection.units:
        layers = f"{unit.count}: {_short_ranges(unit.layers)}" if unit.scope == "layer" else "model"
        rows.append([unit.name, layers, ", ".join(unit.patterns.values()), _group(result.unit_totals[unit])])
    lines = [f"{result.model.name}, {_lengths_text(result)}", _table(rows), ""]
    lines.append(f"forward   {_group(result.forward)} FLOPs ({result.forward:.4g})")
    how = "forward + backward = 3 x forward" if result.recompute == "none" else f"3 x forward + {result.recompute} recomputation"
    lines.append(f"training  {_group(result.training)} FLOPs ({result.training:.4g}; {how})")
    return "\n".join(lines)


def _short_ranges(layers: tuple[range, ...]) -> str:
    text = ranges_text(layers)
    return text if len(text) <= 40 else text[:37] + "..."


def ranges_json(layers: tuple[range, ...]) -> list[dict[str, int]]:
    """Layer ranges for JSON: ``first`` and ``last`` index (inclusive) and ``step``."""
    return [{"first": r.start, "last": r[-1], "step": r.step} for r in layers]


def result_json(result: Result) -> dict[str, Any]:
    """The JSON contract: exact totals as decimal strings, plus float conveniences.

    Layers are grouped by kind (their indices as ranges), so the size follows the layer kinds,
    not the layer count; :func:`layers_json` gives the per-layer form on request.
    """
    kinds = [
        {
            "kind": unit.name,
            "count": unit.count,
            "layers": ranges_json(unit.layers),
            "patterns": unit.patterns,
            "flops_per_layer": str(result.unit_totals[unit]),
            "flops": str(unit.count * result.unit_totals[unit]),
        }
        for unit in result.selection.kinds
    ]
    head = result.selection.head
    return {
        "model": result.model.name,
        "seqlens": list(result.seqlens),
        "batch": result.batch,
        "convention": result.convention,
        "recompute": result.recompute,
        "forward_flops": str(result.forward),
        "training_flops": str(result.training),
        "forward_flops_float": float(result.forward),
        "training_flops_float": float(result.training),
        "kinds": kinds,
        "model_level": {
            "patterns": head.patterns,
            "flops": str(result.unit_totals.get(head, 0)),
        },
        "slots": {slot: str(flops) for slot, flops in result.slot_flops.items()},
        "warnings": list(result.warnings),
    }


def layers_json(result: Result) -> Iterator[dict[str, Any]]:
    """One entry per decoder layer, generated one at a time (``eval --per-layer``)."""
    for layer in result.layers:
        yield {"index": layer.index, "kind": layer.kind, "patterns": dict(layer.patterns), "flops": str(layer.flops)}


# -- comparisons ------------------------------------------------------------------------------


def compare_text(comparison: Comparison) -> str:
    """A table of each convention against exact, then every difference with its reason."""
    exact = comparison.exact
    rows = [["convention", "forward FLOPs", "training FLOPs", "vs exact"]]
    notes = []
    for total in comparison.totals:
        if total.result is None:
            rows.append([total.convention, "-", "-", "cannot count"])
            notes.append(f"{total.convention}: {total.error}")
            continue
        rows.append(
            [total.convention, _group(total.result.forward), _group(total.result.training), ratio_text(total.ratio(exact))]
        )
    lines = [f"{exact.model.name}, {_lengths_text(exact)}", _table(rows)]
    if comparison.differences:
        lines += ["", "differences from exact:"] + [f"- {d}" for d in comparison.differences]
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines)


def compare_json(comparison: Comparison) -> dict[str, Any]:
    """Totals as decimal strings, ratios as floats, differences with their reasons."""
    exact = comparison.exact
    totals = []
    for total in comparison.totals:
        entry: dict[str, Any] = {"convention": total.convention}
        if total.result is None:
            entry["error"] = total.error
        else:
            ratio = total.ratio(exact)
            entry |= {
                "forward_flops": str(total.result.forward),
                "training_flops": str(total.result.training),
                "ratio_to_exact": None if ratio is None else float(ratio),
            }
        totals.append(entry)
    return {
        "model": exact.model.name,
        "seqlens": list(exact.seqlens),
        "batch": exact.batch,
        "conventions": totals,
        "differences": [
            {
                "convention": d.convention,
                "where": d.where,
                "slot": d.slot,
                "exact_pattern": d.exact_pattern,
                "pattern": d.pattern,
                "reason": d.reason,
                "effects": {slot: None if r is None else float(r) for slot, r in d.effects},
                "text": str(d),
            }
            for d in comparison.differences
        ],
    }
