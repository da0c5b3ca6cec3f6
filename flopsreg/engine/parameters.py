"""Exact parameter counts: the weights each selected pattern holds (:attr:`Pattern.weights`),
added up per layer kind, for the model-level slots, and for each block of extra layers.

Selection is the same as for FLOPs, except that every slot is kept, the ones that only hold
weights (norms, biases, the embedding) included. Nothing here knows a slot or a pattern by
name: the head is the model-level slots a logits head fills (:attr:`Slot.per_position`), the
embedding the other model-level weights over the head's parameters (its vocabulary).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import sympy

from flopsreg.declarations.pattern import FLOPS
from flopsreg.engine.compose import MODEL_LEVEL, ModelSelection, holds_weights_only
from flopsreg.engine.select import SlotSelection, select
from flopsreg.errors import ModelError
from flopsreg.model import Tower

if TYPE_CHECKING:
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["Parameters", "Share", "count_parameters", "head_and_embedding", "layer_quantities", "whole_number"]


@attrs.frozen(kw_only=True)
class Share:
    """The weights one slot's pattern holds, once per layer of a kind or once for the model.

    Attributes:
        where: the layer kind, ``"model"`` for the model-level slots, or ``"<block>.<kind>"``.
        block: the block of extra layers it belongs to (not in :attr:`Parameters.total`), or None.
        layers: how many times the model holds it (the kind's layers, or its ``weight_copies`` when
            the kind is a shared block; 1 at model level).
        slot, pattern: the slot and the pattern that fills it.
        weights, active: what it holds once, and the part one token uses (routed experts at top-k).
    """

    where: str
    block: str | None
    layers: int
    slot: str
    pattern: str
    weights: int
    active: int

    @property
    def total(self) -> int:
        """What the model holds of it: :attr:`weights` times :attr:`layers`."""
        return self.weights * self.layers


@attrs.frozen(kw_only=True)
class Parameters:
    """Exact parameter counts of a model, as ``sum(p.numel())`` of its transformers model gives.

    Attributes:
        model: the model's name.
        total: every weight of the model: the language model's and, for a multimodal wrapper,
            its towers' (vision and audio encoders, projectors); not the blocks (transformers
            does not build them).
        active: the weights one token uses: routed experts at top-k, everything else (the
            towers too) in full.
        language_model: every weight of the decoder, the embedding and the head (a tied matrix
            once), norms and biases included: the part whose FLOPs flopsreg counts.
        embedding: the input embedding (V x h).
        head: the logits head's own weights: V x h, or 0 when tied to the embedding (the
            matrix is then counted once, in :attr:`embedding`).
        blocks: ``{block: weights}`` of each block of extra layers the plan lists (e.g. MTP
            modules), its own pattern's weights included; not in :attr:`total`.
        shares: every slot's weights by layer kind (bounded: kinds, never layers).
        towers: a multimodal wrapper's towers by part (``"vision"``, ``"projector"``), each
            with its kind and parameters; their FLOPs are not counted.
    """

    model: str
    total: int
    active: int
    language_model: int
    embedding: int
    head: int
    blocks: Mapping[str, int]
    shares: tuple[Share, ...]
    towers: Mapping[str, Tower] = attrs.field(factory=dict)
    render: Any = attrs.field(default=None, eq=False, repr=False)  # the renderers, given by the plan: never imported

    def by_slot(self) -> dict[str, int]:
        """``{slot: weights}`` over the whole model (blocks left out), in the order of :attr:`shares`."""
        totals: dict[str, int] = {}
        for share in self.shares:
            if share.block is None:
                totals[share.slot] = totals.get(share.slot, 0) + share.total
        return totals

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, every count a decimal string (exact in any JSON reader); keys are the field names."""
        counts = {field.name: str(getattr(self, field.name)) for field in attrs.fields(Parameters) if field.type == "int"}
        return {
            "model": self.model,
            **counts,
            "blocks": {name: str(value) for name, value in self.blocks.items()},
            "flops_counted": ["language_model"],
            "towers": {
                part: {"kind": tower.kind, "title": tower.title, "parameters": str(tower.parameters), "flops_counted": False}
                for part, tower in self.towers.items()
            },
            "shares": [
                {
                    **{field.name: getattr(share, field.name) for field in attrs.fields(Share)},
                    "weights": str(share.weights),
                    "active": str(share.active),
                }
                for share in self.shares
            ],
        }

    def text(self) -> str:
        """A plain-text summary: the totals, then every share."""
        lines = [
            f"{self.model}: {self.total:,} parameters, {self.active:,} active per token",
            f"  {_FIELDS.embedding.name} {self.embedding:,}; {_FIELDS.head.name} {self.head:,}"
            + ("" if self.head else f" (tied: held once, in the {_FIELDS.embedding.name})"),
            *(f"  block {name}: {value:,} (not in the total)" for name, value in self.blocks.items()),
        ]
        if self.towers:
            lines.insert(1, f"  language model {self.language_model:,} (FLOPs counted)")
            lines[2:2] = [
                f"  {part}: {tower.title} {tower.parameters:,} (parameters only: FLOPs not counted)"
                for part, tower in self.towers.items()
            ]
        for share in self.shares:
            times = f" x {share.layers}" if share.where != MODEL else ""
            active = f" (active {share.active:,})" if share.active != share.weights else ""
            lines.append(f"  {share.where:<14} {share.slot:<20} {share.pattern:<20} {share.weights:>16,}{times}{active}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        """Short: the model and its totals."""
        shown = [field for field in _FIELDS if field.type == "int" and (self.towers or field.name != "language_model")]
        counts = ", ".join(f"{field.name}={getattr(self, field.name)}" for field in shown)
        return f"Parameters(model={self.model!r}, {counts})"

    def _repr_markdown_(self) -> str:
        """Jupyter: the totals, then one table row per share (the renderer the plan handed over)."""
        return self.render.parameters_markdown(self)


_FIELDS = attrs.fields(Parameters)
MODEL = "model"  # Share.where of the model-level slots


def layer_quantities(registry: PluginLoader, selections: Iterable[SlotSelection]) -> dict[sympy.Symbol, sympy.Expr]:
    """``{quantity symbol: formula}`` of every quantity the *selections* produce or provide."""
    quantities: dict[sympy.Symbol, sympy.Expr] = {}
    for sel in selections:
        for name, expr in sel.pattern.quantities.items():
            if name != FLOPS:
                quantities[registry.quantities[name].symbol] = expr
    return quantities


def whole_number(expr: sympy.Expr, quantities: Mapping[sympy.Symbol, sympy.Expr], params: Mapping[str, int], where: str, what: str) -> int:
    """*expr* with *quantities* and then the *params* values substituted: a whole number >= 0, or a
    :class:`ModelError` naming *what* (e.g. "the weights of pattern 'moe'") and what it lacks."""
    for _ in range(len(quantities) + 1):
        expr = expr.xreplace(quantities)
    expr = expr.xreplace({sym: sympy.Integer(params[sym.name]) for sym in expr.free_symbols if sym.name in params})
    if expr.free_symbols:
        missing = ", ".join(sorted(repr(sym.name) for sym in expr.free_symbols))
        raise ModelError(f"{where}: {what} need {missing}, which the model does not set")
    if not (expr.is_Integer and expr >= 0):
        raise ModelError(f"{where}: {what} come to {expr}, not a whole number >= 0")
    return int(expr)


def _weights(registry: PluginLoader, selections: Iterable[SlotSelection], params: Mapping[str, int], where: str) -> list[tuple[SlotSelection, int, int]]:
    """``(selection, weights, active)`` of each selection holding weights, quantities and parameters substituted."""
    selections = list(selections)
    quantities = layer_quantities(registry, selections)
    found = []
    for sel in selections:
        active = sel.pattern.weights if sel.pattern.active_weights is None else sel.pattern.active_weights
        pair = [whole_number(expr, quantities, params, where, f"the weights of pattern {sel.pattern.name!r}") for expr in (sel.pattern.weights, active)]
        if pair[0] or pair[1]:
            found.append((sel, pair[0], pair[1]))
    return found


def _shares(
    registry: PluginLoader, selections: Iterable[SlotSelection], params: Mapping[str, int], where: str, label: str, layers: int, blocks: Mapping[str, str | None]
) -> list[Share]:
    """The :class:`Share` of every selection holding weights; *blocks* maps a pattern to the block it counts."""
    return [
        Share(where=label, block=blocks.get(sel.pattern.name), layers=layers, slot=sel.slot, pattern=sel.pattern.name, weights=weights, active=active)
        for sel, weights, active in _weights(registry, selections, params, where)
    ]


def count_parameters(registry: PluginLoader, plan: ModelSelection) -> Parameters:
    """The parameters of the exact plan *plan* of a model (checked and selected as for FLOPs)."""
    model = plan.model
    shares: list[Share] = []
    for unit in plan.kinds:
        held = model.kinds[unit.name].weight_copies or unit.count  # a shared block: its copies, not its runs
        shares += _shares(registry, select(registry, "layer", unit.flags, unit.where), unit.params, unit.where, unit.name, held, {})
    for block in registry.blocks.values():  # the layers of each block, e.g. MTP: not in the total; once per kind, as decoder kinds
        for kind, indices in model.block_kinds(block.name).items():
            where = f"{block.name} layer {indices[0].start} (kind {kind!r})"
            flags, params = model.merged(kind)
            selections = select(registry, "layer", flags | block.layer_flags, where)
            shares += _shares(
                registry, selections, params, where, f"{block.name}.{kind}", sum(map(len, indices)), {sel.pattern.name: block.name for sel in selections}
            )
    selections = select(registry, "model", plan.head.flags, MODEL_LEVEL)
    # A model-level pattern whose formula counts a block's layers holds that block's own weights.
    owners = {sel.pattern.name: b.name for sel in selections for b in registry.blocks.values() if {b.flops, b.layers} & sel.pattern.formula.free_symbols}
    structure = {block.layers.name: len(model.plan.blocks.get(block.name, ())) for block in registry.blocks.values()}
    shares += _shares(registry, selections, {**model.params, **structure}, MODEL_LEVEL, MODEL, 1, owners)
    blocks: dict[str, int] = {}
    for share in shares:
        if share.block is not None:
            blocks[share.block] = blocks.get(share.block, 0) + share.total
    main = [share for share in shares if share.block is None]
    heads, embedding, _ = head_and_embedding(registry, selections)
    at_model = [share for share in main if share.where == MODEL]
    towers = sum(tower.parameters for tower in model.towers.values())
    language_model = sum(share.total for share in main)
    return Parameters(
        model=model.name,
        total=language_model + towers,
        active=sum(share.active * share.layers for share in main) + towers,
        language_model=language_model,
        embedding=sum(share.total for share in at_model if share.pattern in embedding),
        head=sum(share.total for share in at_model if share.slot in heads),
        blocks=blocks,
        shares=tuple(shares),
        towers=model.towers,
        render=plan.render,
    )


def head_and_embedding(registry: PluginLoader, selections: Iterable[SlotSelection]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """Of a model's model-level *selections*: the slots a logits head fills (:attr:`Slot.per_position`),
    the patterns holding the input embedding (weights without work over the head's parameters, its
    vocabulary, outside the head's own slots: a bias on the logits is the head's), and the names of
    the head's parameters (the vocabulary's)."""
    chosen = list(selections)
    heads = [sel for sel in chosen if registry.slots[sel.slot].per_position]
    vocabulary = frozenset().union(*(sel.pattern.param_names for sel in heads))
    embedding = frozenset(
        sel.pattern.name for sel in chosen if holds_weights_only(sel.pattern) and sel.pattern.param_names & vocabulary and sel not in heads
    )
    return frozenset(sel.slot for sel in heads), embedding, vocabulary
