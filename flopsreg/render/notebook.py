"""Markdown views of results, selections, comparisons, registries, generations, parameters and
utilisations, for Jupyter's rich display.

Maths goes in ``$...$`` and ``$$\\begin{aligned}...$$`` only, which MathJax 3 (Jupyter's
renderer) handles; tables are Markdown tables, never LaTeX ``tabular`` or ``itemize``. Plugins'
one-line summaries write maths in ASCII (``QK^T``, ``s^2/2``, ``n x (a // b)``):
:func:`flopsreg.render.ascii_maths.maths_text` puts it in ``$...$`` as LaTeX. The model-level slots are shown as such, never
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
from flopsreg.render.ascii_maths import maths_text
from flopsreg.render.tex import legend, mathjax, scientific

if TYPE_CHECKING:
    from flopsreg.engine.compare import Comparison, Difference
    from flopsreg.engine.compose import ModelSelection, UnitSelection
    from flopsreg.engine.evaluate import Result
    from flopsreg.engine.parameters import Parameters
    from flopsreg.engine.serving import Generation, GenerationBounds
    from flopsreg.engine.traffic import Traffic
    from flopsreg.plugins.loader import PluginLoader

__all__ = [
    "comparison_markdown",
    "equations",
    "generation_markdown",
    "markdown_table",
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
    if comparison.bytes:
        parts += _bytes_rows(comparison)
    return "\n\n".join(parts)


def _bytes_rows(comparison: Comparison) -> list[str]:
    """A serving step's bytes: exact's least traffic, each convention's own estimate and why it differs."""
    traffic = comparison.traffic
    rows = [] if traffic is None else [(comparison.exact.convention, _number(traffic.read), _number(traffic.written), _ratio(Fraction(1)))]
    reasons = []
    for b in comparison.bytes:
        if b.error is not None or traffic is None:
            rows.append((b.convention, "-", "-", f"cannot count: {maths_text(b.error or '')}"))
        else:
            rows.append((b.convention, _number(b.read), _number(b.written), _ratio(b.ratio(traffic))))
            reasons.append(f"- {b.convention}: {maths_text(b.reason)}")
    table = markdown_table(("convention", "bytes read", "bytes written", "total / exact"), rows)
    return ["bytes of the step, 2 bytes per element (exact: the least it must move)", table, "\n".join(reasons)]


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


def generation_bounds_markdown(bounds: GenerationBounds) -> str:
    """Each phase of a generation: its FLOPs, the bytes it moves at least, its intensity and roofline bound."""
    phases = [("prefill", bounds.prefill, bounds.prefill_roofline), ("decode (all steps)", bounds.decode, bounds.decode_roofline)]
    rows = [
        (name, _number(traffic.flops), _number(traffic.total), f"${_decimal(traffic.intensity)}$", f"${_decimal(roof.seconds)}$ s",
         f"{roof.bound}-bound")
        for name, traffic, roof in phases
        if traffic is not None and roof is not None
    ]
    head = (
        f"{generation_markdown(bounds.generation)}\n\n$n = {bounds.devices}$ device(s) at peak ${_decimal(bounds.peak)}$ FLOP/s "
        f"and ${_decimal(bounds.bandwidth)}$ bytes/s each"
    )
    return head + "\n\n" + markdown_table(("phase", "FLOPs", "bytes at least", "FLOPs/byte", "roofline", "bound"), rows)


def _decimal(value: Fraction | int) -> str:
    """*value* in maths: a short decimal in the everyday range, else scientific notation."""
    return f"{float(value):.6g}" if Fraction(1, 1000) <= abs(value) < 10**6 else scientific(value)


def utilisation_markdown(utilisation: Utilisation | StepUtilisation) -> str:
    r"""A step's MFU and HFU (or one utilisation) as :math:`F / (t\,n\,P)`, with the numbers they come
    from; for a serving step its bytes, MBU and roofline bound beside them."""
    step = isinstance(utilisation, StepUtilisation)
    pair = (utilisation.mfu, utilisation.hfu) if step else (utilisation,)
    first = pair[0]
    head = f"$n = {first.devices}$ device(s) at peak $P = {_decimal(first.peak)}$ FLOP/s each, step time $t = {_decimal(first.seconds)}$ s"
    if step:
        result = utilisation.result
        head = f"**{result.model.name}**: batch {result.batch} × {sum(result.seqlens)} tokens (recompute {result.recompute}), {head}"
    rows = [(u.name, f"${u.decimal(6)}$", _number(u.flops)) for u in pair]
    text = head + "\n\n" + markdown_table(("", r"$F / (t\,n\,P)$", "FLOPs $F$ of the step"), rows)
    return text + _bytes_markdown(utilisation, utilisation.traffic) if step and utilisation.traffic is not None else text


def _bytes_markdown(step: StepUtilisation, traffic: Traffic) -> str:
    r"""A serving step's bytes beside its MFU: MBU as :math:`B / (t\,n\,W)` and the roofline bound,
    or what is missing for them (the devices' memory bandwidth)."""
    experts = ", every routed expert read" if traffic.all_experts else ""
    moved = (
        f"\n\nbytes $B$ moved at least: {_number(traffic.total)} (read {_number(traffic.read)}, written "
        f"{_number(traffic.written)}{experts}); intensity ${_decimal(traffic.intensity)}$ FLOPs/byte"
    )
    if step.mbu is None or step.roofline is None:
        return moved + "; MBU and the roofline bound need the devices' memory bandwidth $W$ (`bandwidth=`)"
    mbu, roof = step.mbu, step.roofline
    table = markdown_table(
        ("", r"$B / (t\,n\,W)$", "bandwidth $W$ per device"), [("MBU", f"${_decimal(mbu.fraction)}$", f"${_decimal(mbu.bandwidth)}$ bytes/s")]
    )
    bound = (
        f"roofline: at least ${_decimal(roof.seconds)}$ s, **{roof.bound}-bound** "
        f"(compute ${_decimal(roof.compute_seconds)}$ s, memory ${_decimal(roof.memory_seconds)}$ s)"
    )
    return f"{moved}\n\n{table}\n\n{bound}"


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
    if params.towers:
        towers = "; ".join(f"{part}: {t.title} {_number(t.parameters)}" for part, t in params.towers.items())
        sizes = f"language model {_number(params.language_model)} (FLOPs counted); {towers} (parameters only: FLOPs not counted)\n\n{sizes}"
    rows = (
        (MODEL_LEVEL_ROW if s.where == MODEL else s.where, f"`{s.slot}`", f"`{s.pattern}`", str(s.layers), f"`{s.weights:,}`", f"`{s.active:,}`")
        for s in params.shares
    )
    return f"{head}\n\n{sizes}\n\n" + markdown_table(("layer kind", "slot", "pattern", "times", "weights", "active"), rows)
