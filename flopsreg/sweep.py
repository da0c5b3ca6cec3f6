"""Forward FLOPs over many sequence lengths: exact ints from one compiled loop, or numpy floats.

Scaling studies evaluate a model at thousands to millions of lengths; calling the compiled
formula once per length would spend most of the time in call overhead, so the generated code
loops itself. Floats go through numpy, which is an optional dependency.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from flopsreg.evaluate import length_list, positive_int
from flopsreg.errors import ModelError

if TYPE_CHECKING:
    from flopsreg.compose import ModelSelection

__all__ = ["iter_sweep", "parse_lengths", "sweep"]

CHUNK = 1 << 14  # lengths per generated loop when streaming: flat memory, little call overhead


def _checked(seq_len: Iterable[int]) -> range | list[int]:
    """*seq_len* as a range (checked at its ends, never expanded) or a list of Python ints."""
    if isinstance(seq_len, range):
        if not seq_len:
            raise ModelError(f"seq_len: {seq_len} is empty; give at least one sequence length")
        if min(seq_len[0], seq_len[-1]) < 1:
            raise ModelError(f"seq_len: {seq_len.start}..{seq_len[-1]} includes lengths below 1")
        return seq_len
    return length_list("seq_len", seq_len, "sequence lengths (a range, list or array of integers)")


def sweep(plan: ModelSelection, seq_len: Iterable[int], *, batch: int = 1, dtype: type | None = None) -> Any:
    """Forward FLOPs of *plan* at each length (see :meth:`flopsreg.Registry.sweep`)."""
    batch = positive_int("batch", batch, "a batch size")
    lengths = _checked(seq_len)
    if dtype is None or dtype is int:
        values = plan.compiled.sweep("seq_len", lengths, {})
        return values if batch == 1 else [batch * v for v in values]
    if dtype is not float:
        raise ModelError(f"dtype: {dtype!r}: expected None (exact ints) or float (numpy float64)")
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is in the test extra
        raise ModelError("dtype=float needs numpy: pip install 'flopsreg[numpy]'") from None
    from flopsreg.compile import compile_numpy
    from flopsreg.symbols import s

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
    command line streams. The arguments are checked here, before the first row.
    """
    return _chunked(plan, _checked(seq_len), positive_int("batch", batch, "a batch size"))


def _chunked(plan: ModelSelection, lengths: range | list[int], batch: int) -> Iterator[tuple[int, int]]:
    for start in range(0, len(lengths), CHUNK):
        chunk = lengths[start : start + CHUNK]
        values = plan.compiled.sweep("seq_len", chunk, {})
        yield from zip(chunk, values if batch == 1 else (batch * v for v in values))


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
