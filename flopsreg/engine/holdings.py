"""What a model's selected patterns hold, in elements: the weights of each (with their routed
experts' part), one layer's KV cache as a formula in ``seq_len``, one layer's state.

Every count comes from what the patterns declare (:attr:`Pattern.weights`, :attr:`Pattern.cache`,
:attr:`Pattern.state`, :attr:`Pattern.routed_weights`); nothing here knows a slot, a pattern or a
quantity by name. A token mixer that keeps memory (:attr:`SlotGroup.keeps_context`) and whose
patterns declare none is refused by name, never counted as 0. :mod:`flopsreg.engine.memory`
turns the elements into bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import sympy

from flopsreg.declarations.symbols import s
from flopsreg.engine.compose import MODEL_LEVEL, ModelSelection
from flopsreg.engine.memory import HeldKind, Holdings, WeightPart
from flopsreg.engine.parameters import MODEL, count_parameters, head_and_embedding, layer_quantities, whole_number
from flopsreg.engine.select import SlotSelection, select
from flopsreg.errors import ModelError
from flopsreg.formula.exact import compile_exact

if TYPE_CHECKING:
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["holdings"]


def holdings(registry: PluginLoader, plan: ModelSelection) -> Holdings:
    """The :class:`Holdings` of the exact plan *plan* of a model (blocks of extra layers left out,
    as :attr:`Parameters.total` leaves them)."""
    model = plan.model
    units = [(unit.name, "layer", unit.count, unit.flags, unit.params, unit.where) for unit in plan.kinds]
    structure = {block.layers.name: len(model.plan.blocks.get(block.name, ())) for block in registry.blocks.values()}
    units.append((MODEL, "model", 1, plan.head.flags, {**model.params, **structure}, MODEL_LEVEL))
    counts = count_parameters(registry, plan)
    weights = {(share.where, share.slot): share for share in counts.shares if share.block is None}
    kinds = []
    for name, scope, layers, flags, params, where in units:
        selections = select(registry, scope, flags, where)
        quantities = layer_quantities(registry, selections)
        rows = _embedding_rows(registry, selections, params) if scope == "model" and counts.head else {}
        parts = tuple(
            WeightPart(
                slot=sel.slot,
                pattern=sel.pattern.name,
                weights=weights[(name, sel.slot)].weights,
                active=weights[(name, sel.slot)].active,
                rows=rows.get(sel.pattern.name, 0),
                routed=None if sel.pattern.routed_weights is None else whole_number(
                    sel.pattern.routed_weights, quantities, params, where, f"the routed weights of pattern {sel.pattern.name!r}"
                ),
                routes=sel.pattern.active_weights is not None,
            )
            for sel in selections
            if (name, sel.slot) in weights
        )
        cache, state = _context(registry, selections, quantities, where)
        values = {sym: sympy.Integer(params[sym.name]) for sym in (cache.free_symbols if cache is not None else ()) if sym.name in params}
        in_length = None if cache is None else cache.xreplace(values)
        if in_length is not None and in_length.free_symbols - {s}:
            missing = ", ".join(sorted(repr(sym.name) for sym in in_length.free_symbols - {s}))
            raise ModelError(f"{where}: the KV cache elements need {missing}, which the model does not set")
        kinds.append(
            HeldKind(
                kind=name, scope=scope, where=where, layers=layers, parts=parts,
                cache=None if in_length is None else compile_exact(in_length),
                state=None if state is None else whole_number(state, {}, params, where, "the state elements"),
                cache_form=cache, state_form=state,
            )
        )
    return Holdings(model=model.name, kinds=tuple(kinds), warnings=tuple(plan.warnings))


def _embedding_rows(registry: PluginLoader, selections: Sequence[SlotSelection], params: Mapping[str, int]) -> dict[str, int]:
    """``{pattern: rows}`` of each input embedding table of an untied model: the value of the one
    vocabulary parameter it is indexed by (a token reads one row). A table whose rows are not one
    such parameter is left out (read whole: an upper bound)."""
    _, embedding, vocabulary = head_and_embedding(registry, selections)
    rows = {}
    for sel in selections:
        names = sel.pattern.param_names & vocabulary
        if sel.pattern.name in embedding and len(names) == 1 and isinstance(params.get(next(iter(names))), int):
            rows[sel.pattern.name] = params[next(iter(names))]
    return rows


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
