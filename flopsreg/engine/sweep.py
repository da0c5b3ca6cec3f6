"""Forward FLOPs over many sequence lengths: exact ints from one compiled loop, or numpy floats.

Scaling studies evaluate a model at thousands to millions of lengths; calling the compiled
formula once per length would spend most of the time in call overhead, so the generated code
loops itself. Floats go through numpy, which is an optional dependency. :func:`sweep` returns
every value at once, so it takes at most :data:`MAX_SWEEP` lengths; :func:`iter_sweep` streams
a chunk at a time, in flat memory, whatever the number of lengths.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from itertools import islice, product
from typing import TYPE_CHECKING, Any

from flopsreg.engine.evaluate import CompositionCache, length_list, positive_int, sequence_lengths
from flopsreg.errors import ModelError, did_you_mean
from flopsreg.model import Model, check_int

if TYPE_CHECKING:
    from flopsreg.engine.compose import ModelSelection
    from flopsreg.engine.media import Media
    from flopsreg.engine.structure import Structure

__all__ = ["MAX_SWEEP", "grid_sweep", "iter_grid", "iter_sweep", "parse_lengths", "sweep"]

CHUNK = 1 << 14  # lengths per generated loop when streaming: flat memory, little call overhead
MAX_SWEEP = 1 << 24  # lengths Registry.sweep returns at once (16,777,216: about 1 GiB of exact ints); more stream


def _too_many(count: int | str) -> ModelError:
    """The refusal of a sweep longer than MAX_SWEEP, pointing at the streaming form."""
    return ModelError(
        f"seq_len: {count} sequence lengths; Registry.sweep returns them all at once, at most {MAX_SWEEP:,} "
        "(2**24): use Registry.iter_sweep (one row at a time, flat memory) or split the range"
    )


def _checked(seq_len: Iterable[int]) -> range | list[int]:
    """*seq_len* as a range (checked at its ends, never expanded) or a list of Python ints."""
    if isinstance(seq_len, range):
        if not seq_len:
            raise ModelError(f"seq_len: {seq_len} is empty; give at least one sequence length")
        if min(seq_len[0], seq_len[-1]) < 1:
            raise ModelError(f"seq_len: {seq_len.start}..{seq_len[-1]} includes lengths below 1")
        return seq_len
    return length_list("seq_len", seq_len, "sequence lengths (a range, list or array of integers)")


def _bounded(seq_len: Iterable[int]) -> range | list[int]:
    """:func:`_checked`, refusing more than MAX_SWEEP lengths before reading them all (an iterator
    is read up to one length past the bound)."""
    if isinstance(seq_len, (range, Sized)) and not isinstance(seq_len, (str, bytes)):
        if len(seq_len) > MAX_SWEEP:
            raise _too_many(f"{len(seq_len):,}")
        return _checked(seq_len)
    if isinstance(seq_len, Iterable) and not isinstance(seq_len, (str, bytes)):
        lengths = _checked(list(islice(seq_len, MAX_SWEEP + 1)))
        if len(lengths) > MAX_SWEEP:
            raise _too_many(f"more than {MAX_SWEEP:,}")
        return lengths
    return _checked(seq_len)  # not iterable: its error


def _dtype(dtype: Any) -> None:
    if dtype is not None and dtype is not int and dtype is not float:
        raise ModelError(f"dtype: {dtype!r}: expected None (exact ints) or float (numpy float64)")


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is in the test extra
        raise ModelError("dtype=float needs numpy: pip install 'flopsreg[numpy]'") from None
    return numpy


def sweep(plan: ModelSelection, seq_len: Iterable[int], *, batch: int = 1, dtype: type | None = None, media: Sequence[Media] = ()) -> Any:
    """Forward FLOPs of *plan* at each length (see :meth:`flopsreg.Registry.sweep`); with
    *media* (images, videos, audio clips), each length is a sequence's text and every sequence holds them."""
    batch = positive_int("batch", batch, "a batch size")
    _dtype(dtype)
    lengths = _bounded(seq_len)
    if media:
        values = sweep(plan, _shifted(lengths, sum(held.tokens for held in media)), batch=batch, dtype=dtype)
        extra = batch * sum(held.forward for held in media)
        return [v + extra for v in values] if dtype is None or dtype is int else values + float(extra)
    if dtype is None or dtype is int:
        values = plan.compiled.sweep("seq_len", lengths, {})
        return values if batch == 1 else [batch * v for v in values]
    numpy = _numpy()
    from flopsreg.declarations.symbols import s
    from flopsreg.formula.exact import compile_numpy

    if isinstance(lengths, range):  # built in C, not one Python int at a time
        array = numpy.arange(lengths.start, lengths.stop, lengths.step, dtype=numpy.float64)
    else:
        array = numpy.asarray(lengths, dtype=numpy.float64)
    result = compile_numpy(plan.expression, s)(array)
    if numpy.shape(result) != array.shape:  # a model whose FLOPs do not depend on the length
        result = numpy.full(array.shape, result, dtype=numpy.float64)
    return result if batch == 1 else result * float(batch)


def iter_sweep(plan: ModelSelection, seq_len: Iterable[int], *, batch: int = 1, media: Sequence[Media] = ()) -> Iterator[tuple[int, int]]:
    """``(length, exact forward FLOPs)`` for each length, computed a chunk at a time.

    Memory stays flat however long the range, and the first rows come at once: what the
    command line streams. A range, list or array is checked here, before the first row; an
    iterator (a generator) is read and checked a chunk at a time, so it may be endless. With
    *media* (images, videos, audio clips, planned once), each length is a sequence's text and every sequence holds them.
    """
    batch = positive_int("batch", batch, "a batch size")
    if isinstance(seq_len, (range, Sized)) or not isinstance(seq_len, Iterable):
        return _chunked(plan, _checked(seq_len), batch, media)
    return _streamed(plan, iter(seq_len), batch, media)


def _chunked(plan: ModelSelection, lengths: range | list[int], batch: int, media: Sequence[Media] = ()) -> Iterator[tuple[int, int]]:
    tokens, extra = sum(held.tokens for held in media), batch * sum(held.forward for held in media)
    for start in range(0, len(lengths), CHUNK):
        chunk = lengths[start : start + CHUNK]
        if media:  # the language model over text and media tokens, and the towers' own work
            values = plan.compiled.sweep("seq_len", _shifted(chunk, tokens), {})
            yield from zip(chunk, (batch * v + extra for v in values))
            continue
        values = plan.compiled.sweep("seq_len", chunk, {})
        yield from zip(chunk, values if batch == 1 else (batch * v for v in values))


def _streamed(plan: ModelSelection, lengths: Iterator[Any], batch: int, media: Sequence[Media] = ()) -> Iterator[tuple[int, int]]:
    """:func:`_chunked` over an iterator, taking and checking CHUNK lengths at a time."""
    chunk = _checked(list(islice(lengths, CHUNK)))  # an empty iterator is refused at the first row
    while chunk:
        yield from _chunked(plan, chunk, batch, media)
        chunk = list(sequence_lengths("seq_len", islice(lengths, CHUNK)))


def _shifted(lengths: range | list[int], tokens: int) -> range | list[int]:
    """Each text length plus the image tokens every sequence holds (a range stays a range)."""
    if isinstance(lengths, range):
        return range(lengths.start + tokens, lengths.stop + tokens, lengths.step)
    return [length + tokens for length in lengths]


def _grid_axes(model: Model, params: Any) -> dict[str, list[int]]:
    """*params* (``{name: values}``) checked: names the model sets, each a non-empty list of ints
    (values are checked against their ranges per point, as an evaluation checks them)."""
    if not isinstance(params, Mapping) or not params:
        raise ModelError(f"params = {params!r:.60}: expected a dict of parameter name -> list of values, e.g. {{'hidden': [2048, 4096]}}")
    known = dict.fromkeys([*model.params, *(name for kind in model.kinds.values() for name in kind.params)])
    axes = {}
    for name, values in params.items():
        if name not in known:
            raise ModelError(
                f"params: {name!r} is not a parameter of {model.name}{did_you_mean(str(name), known)} "
                f"(its parameters: {', '.join(known)})"
            )
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
            values = [values]  # one value: an axis of length 1
        listed = list(islice(values, MAX_SWEEP + 1))  # each axis is held in memory: bounded, never truncated
        if not listed:
            raise ModelError(f"params.{name}: empty; give at least one value")
        if len(listed) > MAX_SWEEP:
            raise ModelError(f"params.{name}: more than {MAX_SWEEP:,} values (2**24); split the grid")
        axes[name] = [check_int(f"param {name}", value) for value in listed]
    return axes


def _grid_lengths(seq_len: Any) -> range | list[int]:
    """The lengths of a grid: one int, or lengths as :meth:`Registry.sweep` takes them."""
    if isinstance(seq_len, Iterable) and not isinstance(seq_len, (str, bytes)):
        return _bounded(seq_len)
    return [positive_int("seq_len", seq_len, "a sequence length")]


def _at(model: Model, point: Mapping[str, int]) -> Model:
    """*model* with each parameter of *point* set wherever it is set (:meth:`Model.with_param`)."""
    for name, value in point.items():
        model = model.with_param(name, value)
    return model


def iter_grid(
    evaluator: CompositionCache, model: Model, convention: str, params: Any, seq_len: Any, batch: int = 1
) -> Iterator[tuple[int, ...]]:
    """Rows ``(v1, ..., vk, seq_len, forward FLOPs)`` over the cartesian product of the values of
    *params* (in its order) and the lengths, the length varying fastest (``itertools.product``
    order), exact ints: what :func:`grid_sweep` returns the last column of. Each point's values
    are checked as an evaluation checks them, with the same messages."""
    batch = positive_int("batch", batch, "a batch size")
    axes = _grid_axes(model, params)
    lengths = _grid_lengths(seq_len)
    return _grid_rows(evaluator, model, convention, axes, lengths, batch)


def _grid_rows(
    evaluator: CompositionCache, model: Model, convention: str, axes: dict[str, list[int]], lengths: range | list[int], batch: int
) -> Iterator[tuple[int, ...]]:
    structure = evaluator.structure(model, convention)
    if structure is None:  # no shared structure (blocks of extra layers): each point composed
        for point in product(*axes.values()):
            plan = evaluator.select(_at(model, dict(zip(axes, point))), convention)
            for n in lengths:
                yield (*point, n, batch * plan.forward(n))
        return
    values = structure.values(model)
    # the values each swept parameter sets (where Model.with_param sets it), and the formula arguments reading them
    targets = {name: [i for i, (_, place) in enumerate(structure.places) if place == name] for name in axes}
    arguments = {read: arg for read, arg in zip(structure.reads, structure.formula.argnames) if read is not None}
    last = list(axes)[-1]
    inner = len(lengths) == 1 and len([i for i in targets[last] if i in arguments]) <= 1
    outer = list(axes)[:-1] if inner else list(axes)
    for point in product(*(axes[name] for name in outer)):
        for name, value in zip(outer, point):
            for i in targets[name]:
                values[i] = value
        fixed = {arg: values[read] for read, arg in arguments.items()}
        if inner:  # one length: the generated loop runs over the last parameter's values
            for value in axes[last]:
                _check(structure, model, values, targets[last], value, axes)
            argument = next((arguments[i] for i in targets[last] if i in arguments), last)
            flops = structure.formula.sweep(argument, axes[last], {**fixed, "seq_len": lengths[0]})
            rows = ((*point, value, lengths[0], f) for value, f in zip(axes[last], flops))
        else:
            _check(structure, model, values, [], 0, axes)
            rows = ((*point, n, f) for n, f in zip(lengths, structure.formula.sweep("seq_len", lengths, fixed)))
        for *row, f in rows:
            yield (*row, batch * f)


def _check(structure: Structure, model: Model, values: list[int], targets: list[int], value: int, axes: Mapping[str, Any]) -> None:
    """*values* (with *value* at the indices *targets*) pass the checks an evaluation runs; else
    the evaluation's message for the model with those values."""
    for i in targets:
        values[i] = value
    if not structure.holds(values):
        point = {place[1]: values[i] for i, place in enumerate(structure.places) if place[1] in axes}
        structure.refuse(_at(model, point))


def grid_sweep(
    evaluator: CompositionCache, model: Model, convention: str, params: Any, seq_len: Any, *, batch: int = 1, dtype: type | None = None
) -> Any:
    """Forward FLOPs over a grid of parameter values and lengths (see :meth:`flopsreg.Registry.sweep`):
    a flat list of exact ints in :func:`iter_grid` order, or with ``dtype=float`` a float64 numpy
    array shaped ``(len(v1), ..., len(vk))``, plus a last axis for the lengths when *seq_len* is a list."""
    batch = positive_int("batch", batch, "a batch size")
    _dtype(dtype)
    axes = _grid_axes(model, params)
    lengths = _grid_lengths(seq_len)
    shape = [len(values) for values in axes.values()] + [len(lengths)]
    if math.prod(shape) > MAX_SWEEP:
        raise ModelError(
            f"params x seq_len: {' x '.join(map(str, shape))} = {math.prod(shape):,} points; Registry.sweep returns them all "
            f"at once, at most {MAX_SWEEP:,} (2**24): use Registry.iter_sweep (one row at a time, flat memory) or split the grid"
        )
    flops = [row[-1] for row in _grid_rows(evaluator, model, convention, axes, lengths, batch)]
    if dtype is None or dtype is int:
        return flops
    numpy = _numpy()
    array = numpy.array(flops, dtype=numpy.float64)  # each exact int rounded once
    return array.reshape(shape if isinstance(seq_len, Iterable) else shape[:-1])


def parse_lengths(text: str) -> range | list[int]:
    """``"1024:131072:1024"`` (start:stop:step, stop included) or ``"512,1024,4096"``."""
    expected = "expected START:STOP[:STEP] (STOP included, 1 <= START <= STOP, STEP >= 1) or S1,S2,..."
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            start, stop, step = (*parts, 1) if len(parts) == 2 else parts
            if step < 1 or start < 1 or stop < start:
                raise ValueError
            return range(start, stop + 1, step)
        lengths = [int(p) for p in text.split(",")]
        if min(lengths) < 1:
            raise ValueError
        return lengths
    except ValueError:
        raise ModelError(f"--seq-len {text!r}: {expected}") from None
