"""Step traffic: the bytes a serving step must move at least, its arithmetic intensity, the
roofline bound on its time, and memory-bandwidth utilisation (MBU).

A step reads every weight once (a MoE layer only the experts its tokens can reach), reads the
KV cache (or recurrent state) of every request's cached context, and writes the KV of its new
tokens (and each request's new state). Activations, which a fused kernel may keep on chip, are
left out: the bytes are a lower bound, so the roofline time is too. The bytes come from the
model's byte declarations through :class:`StepBytes`, a small interface: the weights, the routed
experts, the KV bytes a sequence keeps after n tokens and the state bytes of one sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg.engine.memory import Holdings, storage_formats
from flopsreg.engine.peaks import STEP_TIME, bandwidth_bytes, peak_flops
from flopsreg.errors import ModelError
from flopsreg.model import as_int, shown

if TYPE_CHECKING:
    from flopsreg.engine.evaluate import Result

__all__ = ["ExpertBytes", "MemoryUtilisation", "Roofline", "StepBytes", "Traffic", "step_bytes", "step_traffic"]

@attrs.frozen(kw_only=True)
class ExpertBytes:
    """The routed experts of one MoE pattern of a layer kind: ``layers`` layers, each holding
    ``bytes`` bytes of experts of which one token reads ``token_bytes`` (its top-k experts).

    E experts of X bytes, k a token: ``bytes`` = E x X and ``token_bytes`` = k x X. The patterns
    declare these two (``routed_weights`` and ``active_weights``), not E and k apart, and the
    traffic needs no more: min(E, tokens x k) experts of X bytes are min(bytes, tokens x token_bytes).
    """

    layers: int
    bytes: int
    token_bytes: int

    def touched(self, tokens: int, all_experts: bool) -> int:
        """Bytes one layer reads for *tokens* tokens: min(E, tokens x top_k) experts, the most that
        distinct routings reach (no expert is read twice); all E with *all_experts* (the upper bound)."""
        return self.bytes if all_experts else min(self.bytes, tokens * self.token_bytes)


@attrs.frozen(kw_only=True)
class StepBytes:
    """What a model's step traffic is made of, in bytes of the formats it is served in.

    Attributes:
        weights: every weight the step reads, routed experts excluded (they are in ``experts``).
        experts: the routed experts, per MoE layer kind.
        context: bytes of KV cache one sequence keeps after n tokens, over all layers (a sliding
            layer capped by its window; MLA's latent; indexer keys), as a function of n.
        state: recurrent and convolution state bytes of one sequence, over all layers (fixed in n).
        embedding_row: bytes of one row of an input embedding table left out of ``weights`` (a
            step gathers one row per token, not the table; 0 where the table is in ``weights``,
            e.g. tied to the head, which reads it whole).
    """

    weights: int
    context: Callable[[int], int] = attrs.field(eq=False)
    experts: tuple[ExpertBytes, ...] = ()
    state: int = 0
    embedding_row: int = 0


@attrs.frozen(kw_only=True)
class Traffic:
    """Bytes a step reads and writes at least, beside its exact FLOPs (see module).

    Attributes:
        flops: the step's forward FLOPs.
        weights_read: every weight but the routed experts, once (an input embedding: its tokens' rows).
        experts_read: the routed experts the step's tokens can reach (all of them with ``all_experts``).
        kv_read: the KV cache of every request's cached context; state_read: each request's state.
        kv_written: the KV of the new tokens a request keeps; state_written: each request's new state.
        all_experts: whether every expert is counted (the bound for a kernel that reads them all).
    """

    flops: int
    weights_read: int
    experts_read: int
    kv_read: int
    state_read: int
    kv_written: int
    state_written: int
    all_experts: bool = False

    def __add__(self, other: Traffic) -> Traffic:
        """Two steps' traffic together (e.g. a generation's decode steps), field by field."""
        if not isinstance(other, Traffic) or other.all_experts != self.all_experts:
            return NotImplemented
        return Traffic(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in attrs.fields(Traffic) if f.name != "all_experts"},
                       all_experts=self.all_experts)

    @property
    def read(self) -> int:
        return self.weights_read + self.experts_read + self.kv_read + self.state_read

    @property
    def written(self) -> int:
        return self.kv_written + self.state_written

    @property
    def total(self) -> int:
        """Bytes read and written."""
        return self.read + self.written

    @property
    def intensity(self) -> Fraction:
        """Arithmetic intensity: FLOPs per byte moved, exact."""
        return Fraction(self.flops, self.total)

    def roofline(self, *, peak: str | int | float | Fraction, bandwidth: int | float | Fraction | str, devices: int = 1) -> Roofline:
        """The least time the step can take on *devices* devices of *peak* FLOP/s and *bandwidth*
        bytes/s each (or names from ``flopsreg peaks``): the larger of compute and memory time."""
        count = _devices(devices)
        compute = self.flops / (peak_flops(peak) * count)
        memory = self.total / (bandwidth_bytes(bandwidth) * count)
        return Roofline(compute_seconds=compute, memory_seconds=memory)

    def mbu(self, *, step_time: float | Fraction | str, bandwidth: int | float | Fraction | str, devices: int = 1) -> MemoryUtilisation:
        """Memory-bandwidth utilisation of a step measured at *step_time* seconds: bytes moved over
        ``step_time x devices x bandwidth`` (bytes/s per device, or a name from ``flopsreg peaks``);
        above 1 is a ModelError naming the likely mistake."""
        count = _devices(devices)
        seconds = STEP_TIME.check("step_time", step_time)
        per_device = bandwidth_bytes(bandwidth)
        fraction = self.total / (seconds * count * per_device)
        if fraction > 1:
            raise ModelError(
                f"MBU = {float(fraction):.4g}: above 1, more bytes/s than {count} device(s) of {float(per_device):g} bytes/s "
                f"can move; is step_time = {float(seconds):g} in milliseconds rather than seconds? (else devices or "
                "bandwidth, per device, too small)"
            )
        return MemoryUtilisation(fraction=fraction, bytes=self.total, seconds=seconds, devices=count, bandwidth=per_device)

    def to_dict(self) -> dict[str, Any]:
        """Byte counts as decimal strings (exact in any JSON reader), the intensity as ``"n/d"``."""
        counts = ("weights_read", "experts_read", "kv_read", "state_read", "kv_written", "state_written")
        return {
            **{f"{name}_bytes": str(getattr(self, name)) for name in counts},
            "read_bytes": str(self.read),
            "written_bytes": str(self.written),
            "total_bytes": str(self.total),
            "all_experts": self.all_experts,
            "intensity": str(self.intensity),
            "intensity_float": float(self.intensity),
        }


@attrs.frozen(kw_only=True)
class Roofline:
    """The lower bound on a step's time: compute time at peak and memory time at full bandwidth."""

    compute_seconds: Fraction
    memory_seconds: Fraction

    @property
    def seconds(self) -> Fraction:
        return max(self.compute_seconds, self.memory_seconds)

    @property
    def bound(self) -> str:
        """``"memory"`` or ``"compute"``: which one bounds the step (compute on a tie)."""
        return "memory" if self.memory_seconds > self.compute_seconds else "compute"

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": str(self.seconds),
            "seconds_float": float(self.seconds),
            "compute_seconds_float": float(self.compute_seconds),
            "memory_seconds_float": float(self.memory_seconds),
            "bound": self.bound,
        }


@attrs.frozen(kw_only=True)
class MemoryUtilisation:
    """Achieved bytes/s over the devices' bandwidth, exact; ``float(u)`` for a number to print."""

    fraction: Fraction
    bytes: int
    seconds: Fraction
    devices: int
    bandwidth: Fraction  # bytes/s per device

    def __float__(self) -> float:
        return float(self.fraction)

    def to_dict(self) -> dict[str, Any]:
        return {"fraction": str(self.fraction), "float": float(self), "bytes": str(self.bytes)}


def _devices(devices: object) -> int:
    count = as_int(devices)
    if count is None or count < 1:
        raise ModelError(f"devices: {shown(devices)}: expected an integer >= 1 (the devices the step ran on)")
    return count


def step_traffic(result: Result, step_bytes: StepBytes, *, all_experts: bool = False) -> Traffic:
    """The :class:`Traffic` of the serving step *result* counted: its requests (``batch`` copies of
    each), the model's bytes from *step_bytes*."""
    requests: Sequence[tuple[int, int]] = result.requests
    copies = result.batch
    experts = sum(group.layers * group.touched(result.tokens, all_experts) for group in step_bytes.experts)
    return Traffic(
        flops=result.forward,
        weights_read=step_bytes.weights + result.tokens * step_bytes.embedding_row,
        experts_read=experts,
        kv_read=copies * sum(step_bytes.context(cached) for _, cached in requests if cached),
        state_read=copies * sum(step_bytes.state for _, cached in requests if cached),
        kv_written=copies * sum(step_bytes.context(new) for new, _ in requests),
        state_written=copies * len(requests) * step_bytes.state,
        all_experts=all_experts,
    )


def step_bytes(
    held: Holdings,
    weights_dtype: str = "bf16",
    kv_dtype: str | None = None,
    state_dtype: str | None = None,
    experts_dtype: str | None = None,
) -> StepBytes:
    """The :class:`StepBytes` of what a model holds (:class:`Holdings`, as the patterns declare it)
    in the given formats, with :func:`flopsreg.engine.memory.measure`'s defaults: the weights but
    the routed experts and the untied input embedding's table, the experts per pattern and kind,
    one embedding row, the KV cache of n tokens (each layer capped by its window) and the states."""
    formats = storage_formats(weights_dtype, kv_dtype, state_dtype, experts_dtype)
    weights, row, experts = 0, 0, []
    for k in held.kinds:
        for part in k.parts:
            if part.rows and part.weights % part.rows == 0:
                row += formats["weights"].bytes(part.weights // part.rows) * k.layers
            elif part.routes and part.routed:
                shared = part.weights - part.routed
                weights += formats["weights"].bytes(shared) * k.layers
                experts.append(
                    ExpertBytes(
                        layers=k.layers, bytes=formats["experts"].bytes(part.routed), token_bytes=formats["experts"].bytes(part.active - shared)
                    )
                )
            elif part.routes and part.routed is None:
                raise ModelError(
                    f"{k.where}, slot {part.slot}: pattern {part.pattern!r} holds routed experts but declares no routed_weights, "
                    "so the experts a step reads are unknown"
                )
            else:
                weights += formats["weights"].bytes(part.weights) * k.layers
    caches = tuple((k.cache, k.layers) for k in held.kinds if k.cache is not None)
    kv = formats["kv"]

    def context(tokens: int) -> int:
        return sum(kv.bytes(cache({"seq_len": tokens})) * layers for cache, layers in caches)

    state = sum(formats["state"].bytes(k.state) * k.layers for k in held.kinds if k.state is not None)
    return StepBytes(weights=weights, context=context, experts=tuple(experts), state=state, embedding_row=row)
