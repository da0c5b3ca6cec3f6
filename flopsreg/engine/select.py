"""Which pattern fills each slot of a layer kind (or of the model), and why.

A layer has the slots of no group and those of its slot groups (token mixers: those its flags
select, else the default one); among the registered patterns of those slots whose flags are all
set, the highest precedence wins each slot; two applicable patterns with equal precedence are an
error, never a coin toss.
Pure functions of the registry's patterns: nothing here knows any pattern or slot by name, nor
imports sympy; the cold path (:mod:`flopsreg.engine.cold`) selects with them from the manifest.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import attrs

from flopsreg.errors import WITHOUT_PLUGINS_HINT, SelectionError

if TYPE_CHECKING:
    from flopsreg.declarations.pattern import Pattern
    from flopsreg.plugins.loader import PluginLoader

__all__ = ["SlotSelection", "select", "token_mixers"]


@attrs.frozen
class SlotSelection:
    """The pattern chosen for one slot, and the applicable patterns it beat (highest first)."""

    slot: str
    pattern: Pattern
    applicable: tuple[Pattern, ...]

    @property
    def reason(self) -> str:
        flags = sorted(set().union(*(p.flags for p in self.applicable)))
        if not flags:
            return "slot default, no flag needed"
        ranking = " > ".join(f"{p.name} {p.precedence}" for p in self.applicable)
        return f"flag{'s' if len(flags) > 1 else ''} {', '.join(flags)} set; {ranking}"


def token_mixers(registry: PluginLoader, flags: frozenset[str], where: str) -> frozenset[str]:
    """The slot groups (token mixers) a layer with *flags* has: those its flags select, else the
    default one. Two selected groups that no :class:`~flopsreg.SlotGroup` declares may share a
    layer (``beside``) are an error naming the layer (*where*) and the flags."""
    chosen: dict[str, set[str]] = {}  # group -> the flags that select it
    for selector in registry.group_selectors:
        if selector.flags <= flags:
            chosen.setdefault(selector.group, set()).update(selector.flags)
    if not chosen:
        return frozenset(group.name for group in registry.slot_groups.values() if group.default)
    groups = registry.slot_groups
    for a, b in itertools.combinations(sorted(chosen), 2):
        if b not in groups[a].beside and a not in groups[b].beside:
            raise SelectionError(
                f"{where}: flags {', '.join(sorted(chosen[a]))} select token mixer {a!r} and flags "
                f"{', '.join(sorted(chosen[b]))} select token mixer {b!r}, which no slot group declares may share a "
                f"layer (SlotGroup.beside); give the layer kind the flags of one token mixer"
            )
    return frozenset(chosen)


def select(registry: PluginLoader, scope: str, flags: frozenset[str], where: str) -> list[SlotSelection]:
    """One :class:`SlotSelection` per slot that some applicable pattern of *scope* fills: on a
    layer, only slots of no group or of a group the layer has (:func:`token_mixers`)."""
    groups = token_mixers(registry, flags, where) if scope == "layer" else frozenset()
    group_of = registry.slot_group_of
    by_slot: dict[str, list[Pattern]] = {}
    for pattern in registry.applicable(flags):  # sorted by slot, then precedence (highest first), then name
        if pattern.scope == scope:
            group = group_of.get(pattern.slot)
            if group is None or group in groups:
                by_slot.setdefault(pattern.slot, []).append(pattern)
    selections = []
    for slot, applicable in by_slot.items():
        ties = [(a, b) for a, b in zip(applicable, applicable[1:]) if a.precedence == b.precedence]
        if ties:  # even below the winner: equal precedence means nobody decided, never a coin toss
            a, b = ties[0]
            raise SelectionError(
                f"{where}, slot {slot}: patterns {a.name!r} (plugin {registry.plugin_of(a)!r}) and {b.name!r} "
                f"(plugin {registry.plugin_of(b)!r}) both apply with precedence {a.precedence}; give them "
                f"different precedences ({WITHOUT_PLUGINS_HINT})"
            )
        selections.append(SlotSelection(slot=slot, pattern=applicable[0], applicable=tuple(applicable)))
    return selections
