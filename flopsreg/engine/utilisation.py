"""Model and hardware FLOPs utilisation (MFU, HFU) from a measured step time or throughput."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg.engine.peaks import STEP_TIME, TOKENS_PER_SECOND, peak_flops
from flopsreg.errors import ModelError
from flopsreg.model import as_int, shown

if TYPE_CHECKING:
    from flopsreg.engine.evaluate import Result
    from flopsreg.engine.traffic import MemoryUtilisation, Roofline, Traffic

__all__ = ["StepUtilisation", "Utilisation", "utilisation"]


@attrs.frozen
class Utilisation:
    """Achieved FLOP/s over the devices' peak, exact; ``float(u)`` for a number to print."""

    fraction: Fraction  # achieved / peak
    flops: int  # FLOPs counted for the step (model FLOPs for MFU, hardware FLOPs for HFU)
    seconds: Fraction  # the step time (given, or tokens / (tokens_per_second x devices))
    devices: int
    peak: Fraction  # FLOP/s per device
    name: str = attrs.field(default="utilisation", eq=False, kw_only=True)  # "MFU", "HFU": what it is called
    render: Any = attrs.field(default=None, eq=False, repr=False, kw_only=True)  # the renderers, given by a result

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

    def to_dict(self) -> dict[str, Any]:
        """The ``mfu`` (or ``hfu``) object of ``flopsreg mfu --format json``: the fraction as a
        12-digit decimal string and a float, the FLOPs as a decimal string."""
        return {"fraction": self.decimal(), "float": float(self), "flops": str(self.flops)}

    def _repr_markdown_(self) -> str | None:
        """Jupyter: the fraction and what it is made of (None, so the plain repr, without renderers)."""
        return None if self.render is None else self.render.utilisation_markdown(self)


@attrs.frozen
class StepUtilisation:
    """MFU and HFU of one step that processed a result's batch, and for a serving step its
    traffic, MBU and roofline bound: what ``flopsreg mfu`` prints (see
    :meth:`flopsreg.engine.evaluate.Result.utilisation`)."""

    result: Result
    mfu: Utilisation
    hfu: Utilisation
    # a serving step's bytes, and with a bandwidth its MBU and roofline bound (None: not asked for, or a training step)
    traffic: Traffic | None = attrs.field(default=None, kw_only=True)
    mbu: MemoryUtilisation | None = attrs.field(default=None, kw_only=True)
    roofline: Roofline | None = attrs.field(default=None, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """Equal to ``flopsreg mfu --format json`` for the same model and numbers."""
        return self.result.selection.render.utilisation_json(self)

    def to_text(self) -> str:
        return self.result.selection.render.utilisation_text(self)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        """Short: the model and both fractions (the attrs dump holds the whole result)."""
        return f"StepUtilisation(model={self.result.model.name!r}, mfu={self.mfu.decimal(6)}, hfu={self.hfu.decimal(6)})"

    def _repr_markdown_(self) -> str:
        """Jupyter: MFU and HFU with the numbers they come from; a serving step's MBU and roofline bound beside them."""
        return self.result.selection.render.utilisation_markdown(self)


def utilisation(
    flops: int,
    tokens: int,
    *,
    peak: str | int | float | Fraction,
    devices: int = 1,
    step_time: float | None = None,
    tokens_per_second: float | None = None,
    name: str = "utilisation",
    render: Any = None,
) -> Utilisation:
    """*flops* (over *tokens* tokens, one step on all *devices*) against the devices' *peak*.

    Give ``step_time`` (seconds per step, for the whole step on all devices) or
    ``tokens_per_second`` (throughput per device); a float is taken as the decimal it prints as.
    Each must lie in its range (:data:`flopsreg.engine.peaks.STEP_TIME`, ...), and a utilisation above 1
    is an error naming the likely unit mistake; *name* (``"MFU"``, ``"HFU"``) is what it calls it;
    *render* (the renderers of a selection) gives it a notebook display.
    """
    if (step_time is None) == (tokens_per_second is None):
        raise ModelError("give exactly one of step_time (seconds per step) or tokens_per_second (per device)")
    count = as_int(devices)
    if count is None or count < 1:
        raise ModelError(f"devices: {shown(devices)}: expected an integer >= 1 (the devices the step ran on)")
    per_device = peak_flops(peak)
    if step_time is not None:
        seconds = STEP_TIME.check("step_time", step_time)
    else:
        seconds = tokens / (TOKENS_PER_SECOND.check("tokens_per_second", tokens_per_second) * count)
    result = Utilisation(fraction=flops / (seconds * count * per_device), flops=flops, seconds=seconds, devices=count, peak=per_device, name=name, render=render)
    if result.fraction > 1:
        raise ModelError(_above_one(name, result, "step_time" if step_time is not None else "tokens_per_second"))
    return result


def _above_one(name: str, result: Utilisation, given: str) -> str:
    """Why a utilisation above 1 is refused, naming the unit mistake that most likely made it."""
    likely = {
        "step_time": f"is step_time = {float(result.seconds):g} in milliseconds rather than seconds?",
        "tokens_per_second": "is tokens_per_second for all devices rather than per device?",
    }[given]
    return (
        f"{name} = {result.decimal(4)}: above 1, more FLOP/s than {result.devices} device(s) of peak "
        f"{float(result.peak):g} FLOP/s can do; {likely} (else devices or peak, per device, too small)"
    )
