"""Compare conventions: each one's totals against exact, and where and why they differ.

Every difference is traced to a slot whose pattern the convention replaced, with that
pattern's own summary as the reason and the effect on FLOPs as a ratio to exact: in the decoder's
layer kinds, the model-level slots, and the layers of each block (e.g. MTP) a model-level slot counts.
For a serving step, a convention that declares its framework's byte estimate (``Convention.step_bytes``,
e.g. vLLM's) shows it beside exact's least traffic, with what it assumes that exact does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from flopsreg.declarations.pattern import EXACT, FLOPS
from flopsreg.engine.compose import UnitSelection, check_convention
from flopsreg.engine.evaluate import Result
from flopsreg.engine.traffic import Traffic
from flopsreg.errors import FlopsregError, ModelError
from flopsreg.model import ranges_text
from flopsreg.plugins.loader import step_bytes_function

if TYPE_CHECKING:
    from flopsreg.model import Model
    from flopsreg.registry import Registry

__all__ = ["Comparison", "ConventionBytes", "ConventionTotal", "Difference", "compare"]


def ratio_text(value: Fraction | None) -> str:
    """``"1.92x"``, or ``"n/a"`` where exact counts nothing."""
    return "n/a" if value is None else f"{float(value):.5g}x"


def _ratio(numerator: int, denominator: int) -> Fraction | None:
    return None if denominator == 0 else Fraction(numerator, denominator)


@attrs.frozen
class ConventionTotal:
    """One convention's totals, or why it could not count this model."""

    convention: str
    result: Result | None
    error: str | None = None

    def ratio(self, exact: Result) -> Fraction | None:
        return None if self.result is None else _ratio(self.result.forward, exact.forward)


@attrs.frozen(kw_only=True)
class ConventionBytes:
    """A convention's own estimate of the bytes a serving step reads and writes (its framework's,
    what its MBU divides by), or why there is none; *reason*: what it assumes that exact does not."""

    convention: str
    reason: str
    read: int | None = None
    written: int | None = None
    error: str | None = None

    @property
    def total(self) -> int | None:
        return None if self.read is None or self.written is None else self.read + self.written

    def ratio(self, exact: Traffic) -> Fraction | None:
        """These bytes over exact's least traffic of the same step."""
        total = self.total
        return None if total is None else _ratio(total, exact.total)


@attrs.frozen
class Difference:
    """A slot where a convention chose another pattern than exact, and what that changed."""

    convention: str
    where: str
    slot: str
    exact_pattern: str
    pattern: str
    reason: str
    effects: tuple[tuple[str, Fraction | None], ...]  # (slot, convention / exact FLOPs)
    block: str | None = None  # for a layer of a block (e.g. "mtp"): its name
    depths: tuple[int, ...] = ()  # and the layer's place in the block, from 1 (its layers of that kind)

    def __str__(self) -> str:
        effects = ", ".join(f"{slot} {ratio_text(r)} exact" for slot, r in self.effects)
        return (
            f"{self.convention}: {self.where} {self.slot}: {self.pattern} instead of {self.exact_pattern} "
            f"({self.reason}): {effects}"
        )


@attrs.frozen
class Comparison:
    """Totals per convention and the differences from exact, for one model and batch."""

    exact: Result
    totals: tuple[ConventionTotal, ...]
    differences: tuple[Difference, ...]
    # a serving step's bytes: exact's least traffic, and each convention's own estimate where it declares one
    traffic: Traffic | None = attrs.field(default=None, kw_only=True)
    bytes: tuple[ConventionBytes, ...] = attrs.field(default=(), kw_only=True)

    def to_text(self) -> str:
        return self.exact.selection.render.compare_text(self)

    def to_dict(self) -> dict[str, Any]:
        return self.exact.selection.render.compare_json(self)

    def __repr__(self) -> str:
        """Short: the model and the conventions compared."""
        return f"Comparison(model={self.exact.model.name!r}, conventions={[t.convention for t in self.totals]!r})"

    def _repr_markdown_(self) -> str:
        """Jupyter: each convention against exact, and why they differ."""
        return self.exact.selection.render.comparison_markdown(self)


def compare(
    registry: Registry,
    model: Model,
    *,
    seq_len: int | None = None,
    seqlens: Sequence[int] | None = None,
    batch: int = 1,
    conventions: Sequence[str] | None = None,
    requests: Sequence[tuple[int, int]] | None = None,
    all_experts: bool = False,
    media: Mapping[str, Any] | None = None,
) -> Comparison:
    """Evaluate *model* under exact and every other convention, and explain each difference;
    *requests* (``(new_tokens, cached)`` pairs) compares one serving step instead of a forward,
    with its bytes where a convention declares its framework's estimate of them (exact's traffic
    reading every expert with *all_experts*). *media*: the images every evaluation carries
    (:meth:`Registry.evaluate`'s keywords); a convention that has no term for them shows its refusal."""
    names = list(registry.conventions) if conventions is None else _conventions(registry, conventions)
    batch_of = {"seq_len": seq_len, "seqlens": seqlens, "batch": batch, "requests": requests, **(media or {})}
    exact = registry.evaluate(model, **batch_of)
    totals = [ConventionTotal(EXACT, exact)]
    differences: list[Difference] = []
    for name in names:
        try:
            result = registry.evaluate(model, **batch_of, convention=name)
        except FlopsregError as error:
            totals.append(ConventionTotal(name, None, str(error)))
            continue
        totals.append(ConventionTotal(name, result))
        differences += _differences(registry, exact, result)
    traffic, estimates = None, ()
    if requests is not None:
        traffic, estimates = _step_bytes(registry, model, exact, totals, requests, all_experts)
    elif all_experts:
        raise ModelError("all_experts: the bytes of a step are compared for a serving step only (requests=)")
    return Comparison(exact=exact, totals=tuple(totals), differences=tuple(differences), traffic=traffic, bytes=estimates)


def _step_bytes(
    registry: Registry, model: Model, exact: Result, totals: list[ConventionTotal], requests: Sequence[tuple[int, int]], all_experts: bool
) -> tuple[Traffic | None, tuple[ConventionBytes, ...]]:
    """Exact's least traffic of the step and each counting convention's own bytes of it, where it declares them."""
    declared = [(t.convention, registry.conventions[t.convention]) for t in totals if t.result is not None and t.convention != EXACT]
    declared = [(name, c) for name, c in declared if c.step_bytes is not None]
    if not declared:
        return None, ()
    try:
        traffic = exact.traffic(all_experts=all_experts)
    except FlopsregError as error:
        return None, tuple(ConventionBytes(convention=name, reason=c.step_bytes_summary, error=f"exact's traffic: {error}") for name, c in declared)
    estimates = []
    for name, convention in declared:
        try:
            estimate = step_bytes_function(convention)(registry, model, requests)
        except FlopsregError as error:
            estimates.append(ConventionBytes(convention=name, reason=convention.step_bytes_summary, error=str(error)))
            continue
        estimates.append(
            ConventionBytes(convention=name, reason=convention.step_bytes_summary, read=estimate.read_bytes, written=estimate.written_bytes)
        )
    return traffic, tuple(estimates)


def _conventions(registry: Registry, conventions: Any) -> list[str]:
    """The conventions to compare with exact, each registered and listed once: a typo is an error,
    not a row saying it could not count (exact is always compared first, so it is not listed)."""
    if isinstance(conventions, str) or not isinstance(conventions, Iterable):
        raise ModelError(f"conventions = {conventions!r:.60}: expected a list of convention names (one name goes in a list too)")
    names = list(conventions)
    for i, name in enumerate(names):
        check_convention(registry, name)
        if name == EXACT:
            raise ModelError("conventions: 'exact' is always compared (first); list only the others")
        if name in names[:i]:
            raise ModelError(f"conventions: {name!r} is listed twice")
    return names


def _differences(registry: Registry, exact: Result, other: Result) -> list[Difference]:
    found = []
    for unit, base, place in _pairs(exact, other):
        ours, theirs = other.flops_through(unit), exact.flops_through(base)
        effect = {slot: _ratio(ours.get(slot, 0), theirs.get(slot, 0)) for slot in set(ours) | set(theirs)}
        changed = [sel for sel in unit.selections if base.patterns.get(sel.slot) != sel.pattern.name]
        for sel in changed:  # a rule that differs without changing any number is not reported
            if sel.pattern.produces == FLOPS:
                slots = [sel.slot]
            else:  # a quantity such as pairs: its effect shows in the slots whose formulas use it
                used_by = {
                    s.slot
                    for s in unit.selections
                    if sel.pattern.produces in {sym.name for sym in s.pattern.formula.free_symbols}
                }
                slots = sorted(used_by)
            effects = tuple((slot, effect.get(slot)) for slot in slots if effect.get(slot) != 1)
            if not effects:
                continue
            found.append(
                Difference(
                    convention=other.convention,
                    where=place.text,
                    slot=sel.slot,
                    exact_pattern=base.patterns.get(sel.slot, "(none)"),
                    pattern=sel.pattern.name,
                    reason=sel.pattern.summary,
                    effects=effects,
                    block=place.block,
                    depths=place.depths,
                )
            )
        found += _taken_away(registry, unit, base, place, effect, other.convention)
    return found


def _taken_away(
    registry: Registry, unit: UnitSelection, base: UnitSelection, place: _Place, effect: dict[str, Fraction | None], convention: str
) -> list[Difference]:
    """The slots exact fills that a convention's flags take away with their slot group (a layer it
    counts as another token mixer), each with the reason of the group selectors that did it."""
    selectors = [g for g in registry.group_selectors if g.flags <= unit.flags and not g.flags <= base.flags]
    reason = "; ".join(g.summary for g in selectors)
    return [
        Difference(
            convention=convention,
            where=place.text,
            slot=slot,
            exact_pattern=pattern,
            pattern="(none)",
            reason=reason,
            effects=((slot, effect.get(slot)),),
            block=place.block,
            depths=place.depths,
        )
        for slot, pattern in base.patterns.items()
        if selectors and slot not in unit.patterns and effect.get(slot) is not None  # where exact counts FLOPs
    ]


@attrs.frozen
class _Place:
    """Where a unit sits, for a difference: its text, and for a block layer the block and depths."""

    text: str
    block: str | None = None
    depths: tuple[int, ...] = ()


def _pairs(exact: Result, other: Result) -> list[tuple[UnitSelection, UnitSelection, _Place]]:
    """Each unit of *other*'s plan with exact's unit for the same layers: both plans are of one
    model, so the same kinds in the same order, the model-level slots, then each block's layers."""
    pairs: list[tuple[UnitSelection, UnitSelection, _Place]] = []
    for unit, base in zip(other.selection.kinds, exact.selection.kinds):
        where = f"{unit.count} layer{'s' * (unit.count != 1)} (kind {unit.name!r}: {ranges_text(unit.layers)})"
        pairs.append((unit, base, _Place(where)))
    pairs.append((other.selection.head, exact.selection.head, _Place("model-level")))
    for block, units in other.selection.blocks.items():
        start = other.model.block(block)[0].index  # depth 1 is the block's first layer
        for unit, base in zip(units, exact.selection.blocks[block]):
            depths = tuple(index - start + 1 for layers in unit.layers for index in layers)
            where = (
                f"{unit.count} layer{'s' * (unit.count != 1)} of block {block!r} at depth{'s' * (unit.count != 1)} "
                f"{', '.join(map(str, depths))} (kind {unit.name!r}: {ranges_text(unit.layers)})"
            )
            pairs.append((unit, base, _Place(where, block, depths)))
    return pairs
