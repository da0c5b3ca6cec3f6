"""Model and hardware FLOPs utilisation (MFU, HFU) from a measured step time or throughput."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import attrs

from flopsreg.errors import ModelError
from flopsreg.peaks import exact_number, peak_flops

__all__ = ["Utilisation", "utilisation"]


@attrs.frozen
class Utilisation:
    """Achieved FLOP/s over the devices' peak, exact; ``float(u)`` for a number to print."""

    fraction: Fraction  # achieved / peak
    flops: int  # FLOPs counted for the step (model FLOPs for MFU, hardware FLOPs for HFU)
    seconds: Fraction  # the step time (given, or tokens / (tokens_per_second x devices))
    devices: int
    peak: Fraction  # FLOP/s per device

    def __float__(self) -> float:
        return float(self.fraction)

    def decimal(self, digits: int = 12) -> str:
        """The fraction as a decimal string rounded to *digits* significant digits, e.g. ``"0.41"``."""
        with localcontext() as context:
            context.prec = digits
            return str(Decimal(self.fraction.numerator) / Decimal(self.fraction.denominator))

    @property
    def achieved(self) -> Fraction:
        """Achieved FLOP/s per device."""
        return self.flops / (self.seconds * self.devices)


def _positive(field: str, value: object, what: str) -> Fraction:
    number = exact_number(value)
    if number is None or number <= 0:
        raise ModelError(f"{field}: {value!r}: expected {what} (a number > 0)")
    return number


def utilisation(
    flops: int,
    tokens: int,
    *,
    peak: str | int | float | Fraction,
    devices: int = 1,
    step_time: float | None = None,
    tokens_per_second: float | None = None,
) -> Utilisation:
    """*flops* (over *tokens* tokens, one step on all *devices*) against the devices' *peak*.

    Give ``step_time`` (seconds per step, for the whole step on all devices) or
    ``tokens_per_second`` (throughput per device); a float is taken as the decimal it prints as.
    """
    if (step_time is None) == (tokens_per_second is None):
        raise ModelError("give exactly one of step_time (seconds per step) or tokens_per_second (per device)")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ModelError(f"devices: {devices!r}: expected an integer >= 1 (the devices the step ran on)")
    per_device = peak_flops(peak)
    if step_time is not None:
        seconds = _positive("step_time", step_time, "seconds per step")
    else:
        rate = _positive("tokens_per_second", tokens_per_second, "tokens per second per device")
        seconds = tokens / (rate * devices)
    return Utilisation(fraction=flops / (seconds * devices * per_device), flops=flops, seconds=seconds, devices=devices, peak=per_device)
