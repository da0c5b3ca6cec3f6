"""Plots of FLOPs against context length, as matplotlib Figures (``pip install "flopsreg[plot]"``).

:func:`by_slot` stacks one model's FLOPs by slot, :func:`conventions` plots each convention's
total as a ratio to exact, :func:`models` puts several models on one axis. Every function
counts exactly and converts to floats only to draw; it returns a
:class:`matplotlib.figure.Figure` (no pyplot state), which ``fig.savefig("x.png")`` writes.
Long ranges are drawn from at most :data:`MAX_POINTS` lengths, spaced geometrically on a
logarithmic axis when the range spans two decades or more.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.evaluate import positive_int, sequence_lengths
from flopsreg.engine.sweep import parse_lengths
from flopsreg.errors import FlopsregError, ModelError
from flopsreg.model import Model
from flopsreg.registry import Registry

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from flopsreg.engine.compose import ModelSelection

__all__ = ["FORMATS", "MAX_POINTS", "PlotError", "by_slot", "conventions", "models", "output_format", "save", "slot_flops"]

MAX_POINTS = 400  # lengths drawn per curve: smooth at any figure size, fast to evaluate
FORMATS = (".png", ".svg", ".pdf")
_LOG_SPAN = 100  # a range from a to b with b >= 100 a is drawn on a logarithmic axis


class PlotError(FlopsregError):
    """matplotlib is missing, or the plot asked for cannot be drawn."""


def _figure() -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError('plots need matplotlib: pip install "flopsreg[plot]"') from None
    return Figure(figsize=(6.4, 4.0), layout="constrained")


def _lengths(seq_len: str | Iterable[int]) -> list[int]:
    """The lengths to draw: ``"START:STOP[:STEP]"``, a range or a list, thinned to MAX_POINTS."""
    lengths = parse_lengths(seq_len) if isinstance(seq_len, str) else seq_len
    if isinstance(lengths, (bytes, str)) or not isinstance(lengths, Iterable):
        raise ModelError(f"seq_len = {seq_len!r}: expected 'START:STOP', a range or a list of lengths")
    chosen = lengths if isinstance(lengths, range) else sorted(set(sequence_lengths("seq_len", lengths)))
    count = len(chosen)
    if count < 2:
        raise ModelError(f"seq_len = {seq_len!r}: a plot needs at least two lengths")
    if count <= MAX_POINTS:
        return list(chosen)
    if _is_log(chosen[0], chosen[-1]):  # geometric: evenly spread on the log axis
        ratio = math.log(count) / (MAX_POINTS - 1)
        indices = {min(count - 1, round(math.exp(i * ratio)) - 1) for i in range(MAX_POINTS)}
    else:
        indices = {i * (count - 1) // (MAX_POINTS - 1) for i in range(MAX_POINTS)}
    return [chosen[i] for i in sorted(indices | {0, count - 1})]


def _is_log(first: int, last: int) -> bool:
    return last >= _LOG_SPAN * first


def _axes(figure: Figure, lengths: Sequence[int], ylabel: str, title: str) -> Any:
    ax = figure.add_subplot()
    if _is_log(lengths[0], lengths[-1]):
        ax.set_xscale("log", base=2)
    ax.set_xlabel("context length s (tokens)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return ax


def _ylabel(per_token: bool, batch: int) -> str:
    what = "per token" if per_token else ("per sequence" if batch == 1 else f"per batch of {batch}")
    return f"forward FLOPs {what}"


def by_slot(
    model: Model,
    seq_len: str | Iterable[int],
    *,
    registry: Registry | None = None,
    convention: str = EXACT,
    per_token: bool = False,
    batch: int = 1,
) -> Figure:
    """*model*'s forward FLOPs against context length, stacked by slot in forward-pass order."""
    registry = registry or Registry.default()
    plan = registry.select(model, convention=convention)
    lengths = _lengths(seq_len)
    batch = positive_int("batch", batch, "a batch size")
    stacks = slot_flops(plan, lengths, batch=batch, per_token=per_token)
    shown = {slot: [float(v) for v in values] for slot, values in stacks.items() if any(values)}
    figure = _figure()
    title = model.name if convention == EXACT else f"{model.name} ({convention} convention)"
    ax = _axes(figure, lengths, _ylabel(per_token, batch), title)
    ax.stackplot(lengths, *shown.values(), labels=list(shown))
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], fontsize="small", loc="upper left")  # top of the stack first
    return figure


def slot_flops(plan: ModelSelection, lengths: Sequence[int], *, batch: int = 1, per_token: bool = False) -> dict[str, list[Fraction]]:
    """Exact forward FLOPs per slot (summed over the model) at each length: what :func:`by_slot` stacks."""
    stacks: dict[str, list[Fraction]] = {slot: [] for slot in plan.slots}
    for length in lengths:
        per_slot = dict.fromkeys(plan.slots, 0)
        for unit in plan.units:
            for slot, flops in unit.flops(length).items():
                per_slot[slot] += unit.count * flops
        scale = Fraction(1, length) if per_token else Fraction(batch)  # per token: batch x F / (batch x s)
        for slot, flops in per_slot.items():
            stacks[slot].append(flops * scale)
    return stacks


def conventions(
    model: Model,
    seq_len: str | Iterable[int],
    *,
    names: Sequence[str] | None = None,
    registry: Registry | None = None,
) -> Figure:
    """Each convention's forward FLOPs of *model* as a ratio to exact, against context length.

    *names* default to every registered convention; then one that cannot count this model (a
    parameter it needs is not set) is left out and named under the plot. A convention named
    explicitly must count it.
    """
    registry = registry or Registry.default()
    lengths = _lengths(seq_len)
    exact = registry.sweep(model, lengths)
    figure = _figure()
    ax = _axes(figure, lengths, "forward FLOPs / exact", f"{model.name}: conventions against exact")
    ax.axhline(1.0, color="black", linewidth=0.8, label=EXACT)
    skipped = []
    for name in names if names is not None else list(registry.conventions):
        try:
            totals = registry.sweep(model, lengths, convention=name)
        except FlopsregError as error:
            if names is not None:
                raise
            skipped.append(f"{name}: {error}")
            continue
        ax.plot(lengths, [float(Fraction(t, e)) for t, e in zip(totals, exact)], label=name)
    ax.legend(fontsize="small")
    if skipped:
        figure.text(0.01, 0.0, "not drawn: " + "; ".join(skipped)[:300], fontsize="x-small", va="bottom", wrap=True)
    return figure


def models(
    model_list: Sequence[Model],
    seq_len: str | Iterable[int],
    *,
    registry: Registry | None = None,
    convention: str = EXACT,
    per_token: bool = False,
    batch: int = 1,
) -> Figure:
    """Several models' forward FLOPs (or per token) against context length, on one axis."""
    registry = registry or Registry.default()
    lengths = _lengths(seq_len)
    figure = _figure()
    suffix = "" if convention == EXACT else f" ({convention} convention)"
    ax = _axes(figure, lengths, _ylabel(per_token, batch), "forward FLOPs" + suffix)
    for model in model_list:
        totals = registry.sweep(model, lengths, batch=batch, convention=convention)
        values = [float(Fraction(t, batch * n)) if per_token else float(t) for t, n in zip(totals, lengths)]
        ax.plot(lengths, values, label=model.name)
    if not per_token:
        ax.set_yscale("log" if _is_log(lengths[0], lengths[-1]) else "linear")
    ax.legend(fontsize="small")
    return figure


def output_format(path: str) -> str:
    """The format of *path* by its suffix (``.png``, ``.svg`` or ``.pdf``); any other is refused."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise PlotError(f"-o {path}: {suffix or 'no suffix'} is not a plot format (expected one of: {', '.join(FORMATS)})")
    return suffix


def save(figure: Figure, path: str) -> str:
    """Write *figure* to *path* (.png, .svg or .pdf, by its suffix); returns the path."""
    output_format(path)
    try:
        figure.savefig(path)
    except OSError as error:
        raise PlotError(f"-o {path}: cannot write: {error.strerror or error}") from None
    return path
