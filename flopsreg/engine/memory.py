"""Exact memory of a model held for serving: weights, KV cache and recurrent states, in bytes.

:mod:`flopsreg.engine.holdings` gathers what the selected patterns declare, in elements
(:class:`Holdings`: plain data, which the command line's cache keeps); :func:`measure` turns it
into bytes for a context, a batch and number formats (:mod:`flopsreg.engine.dtypes`), without
sympy, so that ``flopsreg memory`` answers from the cache as ``eval`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flopsreg.engine.dtypes import Dtype, dtype
from flopsreg.errors import ModelError
from flopsreg.formula.tree import Formula
from flopsreg.model import check_int

__all__ = ["HeldKind", "Holdings", "KindMemory", "Memory", "WeightPart", "measure", "storage_formats"]

_COUNTS = ("weights_bytes", "kv_cache_bytes", "state_bytes", "total_bytes")


@attrs.frozen(kw_only=True)
class KindMemory:
    """What the layers of one kind (or the model-level slots, ``kind="model"``) hold.

    Attributes:
        kind: the layer kind, or ``"model"`` (embedding, final norm, head).
        scope: ``"layer"``, or ``"model"`` for the model-level slots.
        layers: how many layers of the kind the model has (1 for ``"model"``).
        weights_bytes, kv_cache_bytes, state_bytes: over all its layers and every sequence.
        cache_elements, state_elements: one layer's elements for one sequence, as closed forms in
            ``seq_len`` and the model's parameters (None: the kind keeps none).
    """

    kind: str
    scope: str  # "layer", or "model" for the model-level slots
    layers: int
    weights_bytes: int
    kv_cache_bytes: int
    state_bytes: int
    cache_elements: Any = attrs.field(default=None, eq=False, repr=False)  # sympy, where composed (not read from the cache)
    state_elements: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen(kw_only=True)
class Memory:
    """Bytes a model holds to serve ``batch`` sequences of ``seq_len`` tokens, exact ints.

    Attributes:
        weights_bytes: every weight of :meth:`Registry.parameters`' total (blocks of extra layers,
            such as MTP modules, left out as there), in ``weights_dtype``, routed experts in
            ``experts_dtype``.
        kv_cache_bytes: keys and values (or MLA latents, indexer keys) of the kept tokens, each
            layer capped by its window, in ``kv_dtype``.
        state_bytes: recurrent and convolution states, fixed in the context length, in ``state_dtype``.
        total_bytes: the three together.
        kinds: the same by layer kind, then ``"model"``.
    """

    model: str
    seq_len: int
    batch: int
    weights_dtype: str
    experts_dtype: str
    kv_dtype: str
    state_dtype: str
    weights_bytes: int
    kv_cache_bytes: int
    state_bytes: int
    total_bytes: int
    kinds: tuple[KindMemory, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, every byte count a decimal string (exact in any JSON reader), as ``flopsreg memory --format json``."""
        return {
            "model": self.model,
            "seq_len": self.seq_len,
            "batch": self.batch,
            "dtypes": {"weights": self.weights_dtype, "experts": self.experts_dtype, "kv": self.kv_dtype, "state": self.state_dtype},
            **{name: str(getattr(self, name)) for name in _COUNTS},
            "kinds": [
                {"kind": k.kind, "layers": k.layers, **{name: str(getattr(k, name)) for name in _COUNTS[:3]}} for k in self.kinds
            ],
        }

    def text(self) -> str:
        """A plain-text summary: the totals (with GiB), then each layer kind."""
        experts = f", experts {self.experts_dtype}" if self.experts_dtype != self.weights_dtype else ""
        lines = [
            f"{self.model}: {self.batch} x {self.seq_len:,} tokens; weights {self.weights_dtype}{experts}, "
            f"KV {self.kv_dtype}, state {self.state_dtype}",
            *(f"  {name:<15} {getattr(self, name):>20,} bytes ({_gib(getattr(self, name))})" for name in _COUNTS),
        ]
        for k in self.kinds:
            times = f" x {k.layers}" if k.scope == "layer" else ""
            lines.append(
                f"  {k.kind + times:<22} weights {k.weights_bytes:,}; kv_cache {k.kv_cache_bytes:,}; state {k.state_bytes:,}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def latex(self) -> str:
        """One layer's elements for one sequence, per kind, as amsmath ``align*`` lines (KV cache and state);
        only where composed (``Registry.memory``), not read from the command line's cache."""
        import sympy  # only here: measuring needs none

        rows = []
        for k in self.kinds:
            for label, expr, held in (("KV", k.cache_elements, k.kv_cache_bytes), ("state", k.state_elements, k.state_bytes)):
                if expr is None and held:
                    raise ModelError(f"{self.model}: memory read from the cache of compiled models has no closed forms; use Registry.memory")
                if expr is not None and expr != 0:
                    rows.append(rf"\mathrm{{{label}}}_{{\mathrm{{{_escaped(k.kind)}}}}} &= {sympy.latex(expr)}")
        return "\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}"


def _escaped(text: str) -> str:
    return text.replace("_", r"\_")


def _gib(count: int) -> str:
    return f"{count / 2**30:,.2f} GiB"


@attrs.frozen(kw_only=True)
class WeightPart:
    """The weights one slot's pattern holds in one layer (or once, at model level)."""

    slot: str
    pattern: str
    weights: int
    routed: int | None  # the part in routed experts (Pattern.routed_weights), None where undeclared
    routes: bool  # whether the pattern holds routed experts (declares active_weights)
    active: int  # the part one token uses (Pattern.active_weights; all of weights where undeclared)
    rows: int = 0  # an untied input embedding: its rows (the vocabulary), a token reading one; 0: read whole


@attrs.frozen(kw_only=True)
class HeldKind:
    """What one layer of a kind (or the model-level slots) holds, in elements.

    Attributes:
        cache: one layer's KV cache elements for one sequence, a formula in ``seq_len``; None: none declared.
        state: one layer's state elements for one sequence; None: none declared.
        cache_form, state_form: the same as sympy closed forms in the model's symbols, where
            composed (None when read from the cache).
    """

    kind: str
    scope: str
    where: str
    layers: int
    parts: tuple[WeightPart, ...]
    cache: Formula | None
    state: int | None
    cache_form: Any = attrs.field(default=None, eq=False, repr=False)
    state_form: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen(kw_only=True)
class Holdings:
    """Everything a model holds, in elements, by kind: what :func:`measure` needs, and what the cache keeps."""

    model: str
    kinds: tuple[HeldKind, ...]
    warnings: tuple[str, ...] = ()


def measure(
    held: Holdings,
    seq_len: int,
    batch: int = 1,
    weights_dtype: str = "bf16",
    kv_dtype: str | None = None,
    state_dtype: str | None = None,
    experts_dtype: str | None = None,
) -> Memory:
    """The :class:`Memory` of *held* for ``batch`` sequences of ``seq_len`` tokens; ``kv_dtype`` and
    ``experts_dtype`` default to ``weights_dtype``, ``state_dtype`` to ``kv_dtype``."""
    seq_len, batch = check_int("seq_len", seq_len, 1), check_int("batch", batch, 1)
    formats = storage_formats(weights_dtype, kv_dtype, state_dtype, experts_dtype)
    kinds = []
    for k in held.kinds:
        weights = sum(_weight_bytes(part, k.where, formats, experts_dtype is not None) for part in k.parts) * k.layers
        cache = 0 if k.cache is None else formats["kv"].bytes(k.cache({"seq_len": seq_len})) * k.layers * batch
        state = 0 if k.state is None else formats["state"].bytes(k.state) * k.layers * batch
        kinds.append(
            KindMemory(
                kind=k.kind, scope=k.scope, layers=k.layers, weights_bytes=weights, kv_cache_bytes=cache, state_bytes=state,
                cache_elements=k.cache_form, state_elements=k.state_form,
            )
        )
    totals = {name: sum(getattr(k, name) for k in kinds) for name in _COUNTS[:3]}
    return Memory(
        model=held.model,
        seq_len=seq_len,
        batch=batch,
        **{f"{part}_dtype": fmt.name for part, fmt in formats.items()},
        **totals,
        total_bytes=sum(totals.values()),
        kinds=tuple(kinds),
    )


def storage_formats(weights_dtype: str, kv_dtype: str | None, state_dtype: str | None, experts_dtype: str | None) -> dict[str, Dtype]:
    """``{"weights", "experts", "kv", "state"}``: the format of each, defaults filled in as
    :func:`measure` documents them; an unknown name is one line naming its option."""
    formats = {"weights": dtype(weights_dtype, "weights_dtype")}
    formats["experts"] = formats["weights"] if experts_dtype is None else dtype(experts_dtype, "experts_dtype")
    formats["kv"] = formats["weights"] if kv_dtype is None else dtype(kv_dtype, "kv_dtype")
    formats["state"] = formats["kv"] if state_dtype is None else dtype(state_dtype, "state_dtype")
    return formats


def _weight_bytes(part: WeightPart, where: str, formats: Mapping[str, Dtype], split: bool) -> int:
    """Bytes of one layer's *part*: its routed experts in the experts' format when *split*."""
    if not split or (part.routed is None and not part.routes):
        return formats["weights"].bytes(part.weights)
    if part.routed is None:
        raise ModelError(
            f"experts_dtype: {where}, slot {part.slot}: pattern {part.pattern!r} holds routed experts but declares no "
            "routed_weights, so their part of its weights is unknown"
        )
    return formats["weights"].bytes(part.weights - part.routed) + formats["experts"].bytes(part.routed)
