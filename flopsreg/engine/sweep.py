"""Forward FLOPs over many sequence lengths: exact ints from one compiled loop, or numpy floats.

Scaling studies evaluate a model at thousands to millions of lengths; calling the compiled
formula once per length would spend most of the time in call overhead, so the generated code
loops itself. Floats go through numpy, which is an optional dependency. :func:`sweep` returns
every value at once, so it takes at most :data:`MAX_SWEEP` lengths; :func:`iter_sweep` streams
a chunk at a time, in flat memory, whatever the number of lengths.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from itertools import islice
from typing import TYPE_CHECKING, Any

from flopsreg.engine.evaluate import length_list, positive_int, sequence_lengths
from flopsreg.errors import ModelError

if TYPE_CHECKING:
    from flopsreg.engine.compose import ModelSelection

__all__ = ["MAX_SWEEP", "iter_sweep", "parse_lengths", "sweep"]

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


def sweep(plan: ModelSelection, seq_len: Iterable[int], *, batch: int = 1, dtype: type | None = None) -> Any:
    """Forward FLOPs of *plan* at each length (see :meth:`flopsreg.Registry.sweep`)."""
    batch = positive_int("batch", batch, "a batch size")
    if dtype is not None and dtype is not int and dtype is not float:
        raise ModelError(f"dtype: {dtype!r}: expected None (exact ints) or float (numpy float64)")
    lengths = _bounded(seq_len)
    if dtype is None or dtype is int:
        values = plan.compiled.sweep("seq_len", lengths, {})
        return values if batch == 1 else [batch * v for v in values]
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is in the test extra
        raise ModelError("dtype=float needs numpy: pip install 'flopsreg[numpy]'") from None
    from flopsreg.formula.compile import compile_numpy
    from flopsreg.declarations.symbols import s

    if isinstance(lengths, range):  # built in C, not one Python int at a time
        array = numpy.arange(lengths.start, lengths.stop, lengths.step, dtype=numpy.float64)
    else:
        array = numpy.asarray(lengths, dtype=numpy.float64)
    result = compile_numpy(plan.expression, s)(array)
    if numpy.shape(result) != array.shape:  # a model whose FLOPs do not depend on the length
        result = numpy.full(array.shape, result, dtype=numpy.float64)
    return result if batch == 1 else result * float(batch)


def iter_sweep(plan: ModelSelection, seq_len: Iterable[int], *, batch: int = 1) -> Iterator[tuple[int, int]]:
    """``(length, exact forward FLOPs)`` for each length, computed a chunk at a time.

    Memory stays flat however long the range, and the first rows come at once: what the
    command line streams. A range, list or array is checked here, before the first row; an
    iterator (a generator) is read and checked a chunk at a time, so it may be endless.
    """
    batch = positive_int("batch", batch, "a batch size")
    if isinstance(seq_len, (range, Sized)) or not isinstance(seq_len, Iterable):
        return _chunked(plan, _checked(seq_len), batch)
    return _streamed(plan, iter(seq_len), batch)


def _chunked(plan: ModelSelection, lengths: range | list[int], batch: int) -> Iterator[tuple[int, int]]:
    for start in range(0, len(lengths), CHUNK):
        chunk = lengths[start : start + CHUNK]
        values = plan.compiled.sweep("seq_len", chunk, {})
        yield from zip(chunk, values if batch == 1 else (batch * v for v in values))


def _streamed(plan: ModelSelection, lengths: Iterator[Any], batch: int) -> Iterator[tuple[int, int]]:
    """:func:`_chunked` over an iterator, taking and checking CHUNK lengths at a time."""
    chunk = _checked(list(islice(lengths, CHUNK)))  # an empty iterator is refused at the first row
    while chunk:
        yield from _chunked(plan, chunk, batch)
        chunk = list(sequence_lengths("seq_len", islice(lengths, CHUNK)))


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
