"""The hooks a flopsreg plugin implements; ``hookimpl`` marks an implementation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from flopsreg.pattern import Convention, Pattern

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "flopsreg"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def flopsreg_register_patterns() -> list[Pattern]:
    """Return the patterns this plugin contributes.

    Takes no arguments: a pattern never depends on the model it is applied to. Which pattern
    fills a slot is decided later, by flags and precedence, from the patterns' own data.
    """


@hookspec
def flopsreg_register_conventions() -> list[Convention]:
    """Return the accounting conventions this plugin contributes.

    A convention is a named flag that ``evaluate(..., convention=name)`` sets on every layer
    and on the model; the plugin's patterns that require that flag then win their slots.
    """
