"""Which pattern fills each slot of a layer kind (or of the model), and why.

Among the registered patterns of a scope whose flags are all set, the highest precedence wins
each slot; two applicable patterns with equal precedence are an error, never a coin toss.
Pure functions of the registry's patterns: nothing here knows any pattern or slot by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from flopsreg.errors import WITHOUT_PLUGINS_HINT, SelectionError
from flopsreg.declarations.pattern import Pattern

if TYPE_CHECKING:
    from flopsreg.plugins.registry import PluginRegistry

__all__ = ["SlotSelection", "select"]


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


def select(registry: PluginRegistry, scope: str, flags: frozenset[str], where: str) -> list[SlotSelection]:
    """One :class:`SlotSelection` per slot that some applicable pattern of *scope* fills."""
    by_slot: dict[str, list[Pattern]] = {}
    for pattern in registry.patterns:  # sorted by slot, then precedence (highest first), then name
        if pattern.scope == scope and pattern.flags <= flags:
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
