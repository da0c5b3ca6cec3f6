"""Exact memory of a model held for serving: weights, KV cache and recurrent states, in bytes.

Every count comes from what the selected patterns declare (:attr:`Pattern.weights`,
:attr:`Pattern.cache`, :attr:`Pattern.state`, :attr:`Pattern.routed_weights`): elements, turned
into bytes once by a number format (:mod:`flopsreg.engine.dtypes`). Nothing here knows a slot, a
pattern or a quantity by name; a token mixer that keeps memory (:attr:`SlotGroup.keeps_context`)
and whose patterns declare none is refused by name, never counted as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import sympy

from flopsreg.declarations.symbols import s
from flopsreg.engine.compose import MODEL_LEVEL, ModelSelection
from flopsreg.engine.dtypes import Dtype, dtype
from flopsreg.engine.parameters import MODEL, count_parameters, layer_quantities, whole_number
from flopsreg.engine.select import SlotSelection, select
from flopsreg.errors import ModelError

if TYPE_CHECKING:
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["KindMemory", "Memory", "memory"]

_COUNTS = ("weights_bytes", "kv_cache_bytes", "state_bytes", "total_bytes")


@attrs.frozen(kw_only=True)
class KindMemory:
    """What the layers of one kind (or the model-level slots, ``kind="model"``) hold.

    Attributes:
        kind: the layer kind, or ``"model"`` (embedding, final norm, head).
        layers: how many layers of the kind the model has (1 for ``"model"``).
        weights_bytes, kv_cache_bytes, state_bytes: over all its layers and every sequence.
        cache_elements, state_elements: one layer's elements for one sequence, as closed forms in
            ``seq_len`` and the model's parameters (None: the kind keeps none).
    """

    kind: str
    layers: int
    weights_bytes: int
    kv_cache_bytes: int
    state_bytes: int
    cache_elements: sympy.Expr | None = attrs.field(default=None, eq=False, repr=False)
    state_elements: sympy.Expr | None = attrs.field(default=None, eq=False, repr=False)


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
            times = f" x {k.layers}" if k.kind != MODEL else ""
            lines.append(
                f"  {k.kind + times:<22} weights {k.weights_bytes:,}; kv_cache {k.kv_cache_bytes:,}; state {k.state_bytes:,}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def latex(self) -> str:
        """One layer's elements for one sequence, per kind, as amsmath ``align*`` lines (KV cache and state)."""
        rows = []
        for k in self.kinds:
            for label, expr in (("KV", k.cache_elements), ("state", k.state_elements)):
                if expr is not None and expr != 0:
                    rows.append(rf"\mathrm{{{label}}}_{{\mathrm{{{_escaped(k.kind)}}}}} &= {sympy.latex(expr)}")
        return "\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}"


def _escaped(text: str) -> str:
    return text.replace("_", r"\_")


def _gib(count: int) -> str:
    return f"{count / 2**30:,.2f} GiB"


def _check_count(field: str, value: object, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise ModelError(f"{field}: {value!r:.60}: expected a whole number >= {minimum}")
    return value


def memory(
    registry: PluginLoader,
    plan: ModelSelection,
    seq_len: int,
    batch: int = 1,
    weights_dtype: str = "bf16",
    kv_dtype: str | None = None,
    state_dtype: str | None = None,
    experts_dtype: str | None = None,
) -> Memory:
    """The :class:`Memory` of the exact plan *plan*; ``kv_dtype`` and ``experts_dtype`` default to
    ``weights_dtype``, ``state_dtype`` to ``kv_dtype``."""
    _check_count("seq_len", seq_len, 1)
    _check_count("batch", batch, 1)
    formats = {"weights": dtype(weights_dtype, "weights_dtype")}
    formats["experts"] = formats["weights"] if experts_dtype is None else dtype(experts_dtype, "experts_dtype")
    formats["kv"] = formats["weights"] if kv_dtype is None else dtype(kv_dtype, "kv_dtype")
    formats["state"] = formats["kv"] if state_dtype is None else dtype(state_dtype, "state_dtype")
    split = experts_dtype is not None
    model = plan.model
    units = [(unit.name, unit.count, unit.flags, unit.params, unit.where, "layer") for unit in plan.kinds]
    structure = {block.layers.name: len(model.plan.blocks.get(block.name, ())) for block in registry.blocks.values()}
    units.append((MODEL, 1, plan.head.flags, {**model.params, **structure}, MODEL_LEVEL, "model"))
    weights = {(share.where, share.slot): share for share in count_parameters(registry, plan).shares if share.block is None}
    kinds = []
    for name, layers, flags, params, where, scope in units:
        selections = select(registry, scope, flags, where)
        quantities = layer_quantities(registry, selections)
        weight_bytes = sum(
            _weight_bytes(sel, weights[(name, sel.slot)].weights, quantities, params, where, formats, split) * layers
            for sel in selections
            if (name, sel.slot) in weights
        )
        cache, state = _context(registry, selections, quantities, where)
        values = {**params, s.name: seq_len}
        cache_bytes = 0 if cache is None else formats["kv"].bytes(whole_number(cache, {}, values, where, "the KV cache elements")) * layers * batch
        state_bytes = 0 if state is None else formats["state"].bytes(whole_number(state, {}, params, where, "the state elements")) * layers * batch
        kinds.append(
            KindMemory(
                kind=name, layers=layers, weights_bytes=weight_bytes, kv_cache_bytes=cache_bytes, state_bytes=state_bytes,
                cache_elements=cache, state_elements=state,
            )
        )
    totals = {name: sum(getattr(k, name) for k in kinds) for name in _COUNTS[:3]}
    return Memory(
        model=model.name,
        seq_len=seq_len,
        batch=batch,
        **{f"{part}_dtype": fmt.name for part, fmt in formats.items()},
        **totals,
        total_bytes=sum(totals.values()),
        kinds=tuple(kinds),
    )


def _weight_bytes(
    sel: SlotSelection, held: int, quantities: Mapping[sympy.Symbol, sympy.Expr], params: Mapping[str, int], where: str,
    formats: Mapping[str, Dtype], split: bool,
) -> int:
    """Bytes of the *held* weights of one layer's *sel*: routed experts in the experts' format when *split*."""
    pattern = sel.pattern
    if not split:
        return formats["weights"].bytes(held)
    if pattern.routed_weights is None:
        if pattern.active_weights is not None:
            raise ModelError(
                f"experts_dtype: {where}, slot {sel.slot}: pattern {pattern.name!r} holds routed experts but declares no "
                "routed_weights, so their part of its weights is unknown"
            )
        return formats["weights"].bytes(held)
    routed = whole_number(pattern.routed_weights, quantities, params, where, f"the routed weights of pattern {pattern.name!r}")
    return formats["weights"].bytes(held - routed) + formats["experts"].bytes(routed)


def _context(
    registry: PluginLoader, selections: Sequence[SlotSelection], quantities: Mapping[sympy.Symbol, sympy.Expr], where: str
) -> tuple[sympy.Expr | None, sympy.Expr | None]:
    """One layer's KV cache and state elements for one sequence, quantities substituted (None: none
    declared); a token mixer that keeps memory but declares none is refused by name."""
    groups = registry.slot_groups
    for group in sorted({sel.slot.split(".")[0] for sel in selections} & set(groups)):
        members = [sel.pattern for sel in selections if sel.slot.split(".")[0] == group]
        if groups[group].keeps_context and all(p.cache is None and p.state is None for p in members):
            names = ", ".join(repr(p.name) for p in members)
            raise ModelError(
                f"{where}: token mixer {group!r} keeps memory per sequence, but none of its patterns ({names}) declares "
                "its cache or state (Pattern cache= or state=), so its bytes are unknown"
            )
    forms = []
    for field in ("cache", "state"):
        declared = [(sel.pattern, getattr(sel.pattern, field)) for sel in selections if getattr(sel.pattern, field) is not None]
        if not declared:
            forms.append(None)
            continue
        expr = sympy.Add(*(e for _, e in declared))
        for _ in range(len(quantities) + 1):
            expr = expr.xreplace(quantities)
        names = {sym.name for sym in expr.free_symbols}
        unresolved = sorted(q for q in registry.quantities if q in names)
        if unresolved:
            users = ", ".join(repr(p.name) for p, _ in declared)
            raise ModelError(f"{where}: the {field} of {users} needs {', '.join(map(repr, unresolved))}, which no selected pattern of this layer provides")
        if field == "state" and s in expr.free_symbols:
            raise ModelError(f"{where}: the state of {', '.join(repr(p.name) for p, _ in declared)} grows with seq_len; declare it as cache")
        forms.append(expr)
    return forms[0], forms[1]
