"""Plots of FLOPs against context length, as matplotlib Figures (``pip install "flopsreg[plot]"``).

:func:`by_slot` stacks one model's FLOPs by slot, :func:`conventions` plots each convention's
total as a ratio to exact, :func:`models` puts several models on one axis. Every function
counts exactly and converts to floats only to draw; it returns a
:class:`matplotlib.figure.Figure` (no pyplot state) that shows itself in a notebook cell
(``_repr_png_``, ``_repr_svg_``) and that :func:`save` writes reproducibly (no date in SVG or PDF).
Long ranges are drawn from at most :data:`MAX_POINTS` lengths, spaced geometrically on a
logarithmic axis when the range spans two decades or more. Every slot or line gets its own
colour and hatch or line style, the legend sits outside the axes, slots are named in words
(from their declared summaries) and FLOPs are scaled to a unit (GFLOP, TFLOP, ...).
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flopsreg.declarations.pattern import EXACT
from flopsreg.engine.compose import check_convention
from flopsreg.engine.evaluate import positive_int, sequence_lengths
from flopsreg.engine.sweep import parse_lengths
from flopsreg.errors import FlopsregError, ModelError
from flopsreg.model import Model
from flopsreg.registry import Registry

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from flopsreg.declarations.pattern import Slot
    from flopsreg.engine.compose import ModelSelection

__all__ = ["FORMATS", "MAX_POINTS", "PlotError", "by_slot", "conventions", "models", "output_format", "save", "slot_flops", "slot_label", "styles"]

MAX_POINTS = 400  # lengths drawn per curve: smooth at any figure size, fast to evaluate
FORMATS = (".png", ".svg", ".pdf")
_LOG_SPAN = 100  # a range from a to b with b >= 100 a is drawn on a logarithmic axis


class PlotError(FlopsregError):
    """matplotlib is missing, or the plot asked for cannot be drawn."""


# Reproducible files: no creation date in the metadata, and SVG element ids from a fixed salt.
_METADATA = {".svg": {"Date": None}, ".pdf": {"CreationDate": None}, ".png": {}}
_SVG_SALT = "flopsreg"
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # tab10
_HATCHES = ("", "///", "...", "xxx", "\\\\\\", "ooo", "+++")  # with the colours: 70 distinct stacks
_DASHES = ("-", "--", ":", "-.")  # with the colours: 40 distinct lines
_UNITS = ((10**18, "EFLOP"), (10**15, "PFLOP"), (10**12, "TFLOP"), (10**9, "GFLOP"), (10**6, "MFLOP"), (10**3, "kFLOP"), (1, "FLOP"))
_NOTE_WIDTH, _NOTE_LINE = 130, 0.04  # a skipped convention's line under a plot: characters, height (figure fraction)
_LABEL_WIDTH = 38  # a summary's first clause longer than this is replaced by the slot's name in words


def _figure(width: float = 6.4) -> Figure:
    try:
        import matplotlib.figure  # noqa: F401 - checked on every call: the class below is made once
    except ImportError:
        raise PlotError('plots need matplotlib: pip install "flopsreg[plot]"') from None
    return _figure_class()(figsize=(width, 4.0), layout="constrained")


@functools.cache
def _figure_class() -> type[Figure]:
    """A matplotlib Figure that a notebook displays as the last value of a cell, without
    ``%matplotlib inline``; *skipped* names what the plot left out (conventions that cannot count)."""
    from matplotlib.figure import Figure

    class PlotFigure(Figure):
        skipped: tuple[str, ...] = ()

        def _repr_png_(self) -> bytes:
            return _render(self, ".png")

        def _repr_svg_(self) -> str:
            return _render(self, ".svg").decode()

    return PlotFigure


def _finished(figure: Figure) -> Figure:
    """*figure* laid out (constrained layout, legend outside) and the layout then fixed: each draw
    would move the axes a little again, so two saves of one figure would differ."""
    figure.draw_without_rendering()
    figure.draw_without_rendering()
    figure.set_layout_engine("none")
    return figure


def _render(figure: Figure, suffix: str) -> bytes:
    """*figure* in the format of *suffix*, with no date and fixed SVG ids: the same bytes every time."""
    from matplotlib import rc_context

    buffer = io.BytesIO()
    with rc_context({"svg.hashsalt": _SVG_SALT}):
        figure.savefig(buffer, format=suffix[1:], metadata=_METADATA[suffix])
    return buffer.getvalue()


def styles(count: int) -> list[tuple[str, str]]:
    """*count* distinct ``(colour, hatch)`` pairs: the ten colours of tab10, then again hatched."""
    pairs = [(colour, hatch) for hatch in _HATCHES for colour in _COLOURS]
    if count > len(pairs):
        raise PlotError(f"{count} slots: more than the {len(pairs)} distinct colour and hatch pairs a stacked plot has")
    return pairs[:count]


def _line_styles(count: int) -> list[dict[str, str]]:
    pairs = [{"color": colour, "linestyle": dash} for dash in _DASHES for colour in _COLOURS]
    return [pairs[i % len(pairs)] for i in range(count)]


def slot_label(slot: Slot) -> str:
    """A slot named in words for a legend: the first clause of its declared summary (``"the query
    projection"`` -> ``"query projection"``), or its name in words where that is long, a question or maths."""
    clause = re.split(r"[:;,]", re.sub(r"\s*\([^()]*\)", "", slot.summary), maxsplit=1)[0].strip()
    clause = re.sub(r"^(?:the|a|an) ", "", clause)
    if len(clause) > _LABEL_WIDTH or re.match(r"(?:which|how|what) ", clause) or re.search(r"[\^*/=]", clause):
        return _in_words(slot.name)
    return clause


def _in_words(slot: str) -> str:
    """``"attention.core"`` -> ``"attention core"``."""
    return slot.replace(".", " ").replace("_", " ")


def _unit(values: Iterable[float]) -> tuple[int, str]:
    """The largest unit in which the biggest of *values* is at least 1 (GFLOP, TFLOP, ...)."""
    top = max((abs(v) for v in values), default=0)
    return next(((scale, name) for scale, name in _UNITS if top >= scale), _UNITS[-1])


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
    ax.set_xlabel("context length $s$ (tokens per sequence)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.margins(x=0)
    return ax


def _per(per_token: bool, batch: int) -> str:
    return "per token" if per_token else ("per sequence" if batch == 1 else "per batch")


def _title(what: str, names: str, convention: str, batch: int) -> str:
    """``"forward FLOPs per token, llama-3-8b, batch 1"`` (and the convention, if not exact)."""
    return f"{what}, {names}, batch {batch}" + ("" if convention == EXACT else f", {convention} convention")


def _in_unit(ax: Any, series: Iterable[Iterable[Fraction | int]], what: str) -> None:
    """Label the FLOPs axis in the unit its largest value fits (GFLOP, TFLOP, ...): the data stay
    in FLOPs, the tick labels are divided by the unit, so no ``1e15`` offset appears."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    scale, unit = _unit(float(v) for values in series for v in values)
    ax.set_ylabel(f"{what} ({unit})")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value / scale:.6g}"))
    if ax.get_yscale() == "log":  # 1, 2, 5 steps labelled in the unit; the unlabelled minor ticks stay
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())


def _legend(figure: Figure, ax: Any, reverse: bool = False) -> None:
    """The legend outside the axes, on the right (top of a stack first when *reverse*)."""
    handles, labels = ax.get_legend_handles_labels()
    if reverse:
        handles, labels = handles[::-1], labels[::-1]
    figure.legend(handles, labels, loc="outside right upper", fontsize="small", frameon=False)


def by_slot(
    model: Model,
    seq_len: str | Iterable[int],
    *,
    registry: Registry | None = None,
    convention: str = EXACT,
    per_token: bool = False,
    batch: int = 1,
    images: Sequence[tuple[int, int]] | None = None,
    image_tokens: Sequence[int] | None = None,
    videos: Sequence[tuple[int, int, int]] | None = None,
    audio: Sequence[Any] | None = None,
    audio_tokens: Sequence[int] | None = None,
    processor: Mapping[str, Any] | None = None,
) -> Figure:
    """*model*'s forward FLOPs against context length, stacked by slot in forward-pass order
    (the first slot at the bottom), each slot named in words and with its own colour and hatch.
    With *images* (or *image_tokens*), *videos* or *audio* (*audio_tokens*) every sequence holds
    them: the lengths are its text, the language model runs over text and media tokens, and the
    towers' pieces stack on top (per token: per token of the language model, media tokens included).
    *processor* sets the image and video processor's options (``{"max_pixels": 1003520}``)."""
    registry = registry or Registry.default()
    plan = registry.select(model, convention=convention)
    lengths = _lengths(seq_len)
    batch = positive_int("batch", batch, "a batch size")
    planned = registry.held_media(model, convention, images, image_tokens, videos, audio, audio_tokens, processor)
    shift = sum(held.tokens for held in planned)
    stacks = {slot: values for slot, values in slot_flops(plan, [n + shift for n in lengths], batch=batch, per_token=per_token).items() if any(values)}
    labels = [slot_label(plan.slots[slot]) for slot in stacks]
    labels = [_in_words(slot) if labels.count(label) > 1 else label for slot, label in zip(stacks, labels)]  # never two alike
    pieces: dict[tuple[str, str], int] = {}  # what the media add beside the language model over their tokens, the same for every length
    for held in planned:  # a tower's images and videos stack together
        for piece, flops in {**held.flops, **({"bidirectional image pairs": held.bidirectional} if held.bidirectional else {})}.items():
            pieces[held.part, piece] = pieces.get((held.part, piece), 0) + flops
    for (part, piece), flops in pieces.items():
        stacks[f"{part}.{piece}"] = [flops * (Fraction(1, n + shift) if per_token else Fraction(batch)) for n in lengths]
        labels.append(piece if piece.startswith("bidirectional") else f"{part} tower: {piece}")
    figure = _figure(width=8.0)
    per = _per(per_token, batch)
    name = model.name + "".join(f" + {len(held.plans)} {held.rule.takes}(s) of {held.tokens} tokens" for held in planned)
    ax = _axes(figure, lengths, "", _title(f"forward FLOPs {per} by slot", name, convention, batch))
    _in_unit(ax, [[sum(column) for column in zip(*stacks.values())]], f"forward FLOPs {per}")
    values = [[float(v) for v in column] for column in stacks.values()]
    areas = ax.stackplot(lengths, *values, labels=labels, colors=[colour for colour, _ in styles(len(stacks))], linewidth=0, edgecolor="#222222")
    for area, (_, hatch) in zip(areas, styles(len(stacks))):
        area.set_hatch(hatch)
    _legend(figure, ax, reverse=True)
    return _finished(figure)


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
    skip: bool | None = None,
    images: Sequence[tuple[int, int]] | None = None,
    image_tokens: Sequence[int] | None = None,
    videos: Sequence[tuple[int, int, int]] | None = None,
    audio: Sequence[Any] | None = None,
    audio_tokens: Sequence[int] | None = None,
    processor: Mapping[str, Any] | None = None,
) -> Figure:
    """Each convention's forward FLOPs of *model* as a ratio to exact, against context length.

    A convention that cannot count this model (a parameter it needs is not set, no estimator for
    its family) is left out, named under the plot and in ``figure.skipped``; with *skip* False
    (the default when *names* are given) it is an error instead. Nothing drawable is an error.
    With *images* (or *image_tokens*), *videos* or *audio* (*audio_tokens*) every sequence holds
    them, under each convention as it counts them; one with no term for a tower is skipped (or refused) by name.
    *processor*: the image and video processor's options, as :func:`by_slot`'s.
    """
    registry = registry or Registry.default()
    skip = names is None if skip is None else skip
    lengths = _lengths(seq_len)
    media = {"images": images, "image_tokens": image_tokens, "videos": videos, "audio": audio, "audio_tokens": audio_tokens,
             "processor": processor}
    exact = registry.sweep(model, lengths, **media)
    chosen = list(names) if names is not None else list(registry.conventions)
    for name in chosen:  # a typo is an error, never a skipped convention
        check_convention(registry, name)
    figure = _figure(width=7.2)
    ax = _axes(figure, lengths, "forward FLOPs / exact FLOPs", f"each convention's forward FLOPs over exact, {model.name} (any batch)")
    ax.axhline(1.0, color="black", linewidth=0.8, label=EXACT)
    skipped = []
    for name, style in zip(chosen, _line_styles(len(chosen))):
        try:
            totals = registry.sweep(model, lengths, convention=name, **media)
        except FlopsregError as error:
            if not skip:
                raise
            skipped.append(f"{name}: {error}")
            continue
        ax.plot(lengths, [float(Fraction(t, e)) for t, e in zip(totals, exact)], label=name, **style)
    if len(skipped) == len(chosen):
        raise PlotError(f"{model.name}: no convention could count it: " + "; ".join(skipped))
    _legend(figure, ax)
    figure.skipped = tuple(skipped)
    if skipped:  # one line each under the axes, in room kept from the layout
        lines = [_shortened(item, _NOTE_WIDTH) for item in skipped]
        figure.get_layout_engine().set(rect=(0, _NOTE_LINE * (len(lines) + 1), 1, 1 - _NOTE_LINE * (len(lines) + 1)))
        figure.text(0.01, 0.01, "\n".join([f"not drawn, cannot count {model.name}:", *lines]), fontsize="x-small", va="bottom", linespacing=1.3)
    return _finished(figure)


def _shortened(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def models(
    model_list: Sequence[Model],
    seq_len: str | Iterable[int],
    *,
    registry: Registry | None = None,
    convention: str = EXACT,
    per_token: bool = False,
    batch: int = 1,
    images: Sequence[tuple[int, int]] | None = None,
    image_tokens: Sequence[int] | None = None,
    videos: Sequence[tuple[int, int, int]] | None = None,
    audio: Sequence[Any] | None = None,
    audio_tokens: Sequence[int] | None = None,
    processor: Mapping[str, Any] | None = None,
) -> Figure:
    """Several models' forward FLOPs (or per token) against context length, on one axis; with
    *images*, *videos* or *audio* each sequence of each model holds them (per token: the language model's tokens).
    *processor*: the processor's options, for every model (one whose processor does not take one is refused)."""
    registry = registry or Registry.default()
    lengths = _lengths(seq_len)
    figure = _figure(width=7.2)
    per = _per(per_token, batch)
    ax = _axes(figure, lengths, "", _title(f"forward FLOPs {per}", ", ".join(m.name for m in model_list), convention, batch))
    if not per_token and _is_log(lengths[0], lengths[-1]):
        ax.set_yscale("log")
    series = []
    for model in model_list:
        media = {"images": images, "image_tokens": image_tokens, "videos": videos, "audio": audio, "audio_tokens": audio_tokens,
                 "processor": processor}
        shift = sum(held.tokens for held in registry.held_media(model, convention, **media))
        totals = registry.sweep(model, lengths, batch=batch, convention=convention, **media)
        series.append([Fraction(t, batch * (n + shift)) if per_token else t for t, n in zip(totals, lengths)])
    _in_unit(ax, series, f"forward FLOPs {per}")
    for model, values, style in zip(model_list, series, _line_styles(len(model_list))):
        ax.plot(lengths, [float(v) for v in values], label=model.name, **style)
    _legend(figure, ax)
    return _finished(figure)


def output_format(path: str) -> str:
    """The format of *path* by its suffix (``.png``, ``.svg`` or ``.pdf``); any other is refused."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise PlotError(f"-o {path}: {suffix or 'no suffix'} is not a plot format (expected one of: {', '.join(FORMATS)})")
    return suffix


def save(figure: Figure, path: str) -> str:
    """Write *figure* to *path* (.png, .svg or .pdf, by its suffix), the same bytes for the same
    figure (no creation date, fixed SVG ids); returns the path."""
    data = _render(figure, output_format(path))
    try:
        Path(path).write_bytes(data)
    except OSError as error:
        raise PlotError(f"-o {path}: cannot write: {error.strerror or error}") from None
    return path
