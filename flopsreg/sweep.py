"""Forward FLOPs over many sequence lengths: exact ints from one compiled loop, or numpy floats.

Scaling studies evaluate a model at thousands to millions of lengths; calling the compiled
formula once per length would spend most of the time in call overhead, so the generated code
loops itself. Floats go through numpy, which is an optional dependency.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import sympy

from flopsreg.engine import ModelPlan, check_lengths
from flopsreg.errors import ModelError
from flopsreg.symbols import s

__all__ = ["parse_lengths", "sweep"]


def _checked(seq_len: Iterable[int]) -> range | list[int]:
    if isinstance(seq_len, range):
        if len(seq_len) and min(seq_len[0], seq_len[-1]) < 1:
            raise ModelError(f"seq_len: {seq_len.start}..{seq_len[-1]} includes lengths below 1")
        return seq_len
    lengths = list(seq_len)
    check_lengths("seq_len", lengths)
    return lengths


@functools.lru_cache(maxsize=256)
def _numpy_function(expression: sympy.Expr) -> Callable[[Any], Any]:
    return sympy.lambdify(s, expression, modules="numpy")


def sweep(plan: ModelPlan, seq_len: Iterable[int], *, batch: int = 1, dtype: type | None = None) -> Any:
    """Forward FLOPs of *plan* at each length (see :meth:`flopsreg.Registry.sweep`)."""
    if type(batch) is not int or batch < 1:
        raise ModelError(f"batch: {batch!r} is not a batch size: expected an integer >= 1")
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
    result = _numpy_function(plan.expression)(numpy.asarray(lengths, dtype=numpy.float64))
    return numpy.broadcast_to(result, (len(lengths),)) * float(batch)


def parse_lengths(text: str) -> range | list[int]:
    """``"1024:131072:1024"`` (start:stop:step, stop included) or ``"512,1024,4096"``."""
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            start, stop, step = (*parts, 1) if len(parts) == 2 else parts
            if step < 1:
                raise ValueError
            return range(start, stop + 1, step)
        return [int(p) for p in text.split(",")]
    except ValueError:
        raise ModelError(
            f"--seq-len {text!r}: expected START:STOP[:STEP] (STOP included, STEP >= 1) or S1,S2,..."
        ) from None
