"""The exceptions and warnings flopsreg raises; each message names the field, value and fix."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "MAX_INT",
    "WITHOUT_PLUGINS_HINT",
    "FlopsregError",
    "ModelError",
    "PatternError",
    "PlausibilityWarning",
    "PluginError",
    "PluginWarning",
    "SelectionError",
    "did_you_mean",
]


MAX_INT = 2**63 - 1  # the largest dimension or count accepted: TOML holds no more, and larger ones are typos
# Appended to errors that a faulty installed plugin can cause at evaluation time.
WITHOUT_PLUGINS_HINT = (
    "to run without installed plugins, set FLOPSREG_DISABLE_PLUGIN_AUTOLOAD=1 or use Registry(load_entry_points=False)"
)


class FlopsregError(ValueError):
    """Base class of every error flopsreg raises on bad input."""


class ModelError(FlopsregError):
    """A model file, config or layer is invalid: a field is unknown, missing or out of range."""


class SelectionError(FlopsregError):
    """Pattern selection failed for a layer: a tie in precedence or a missing quantity."""


class PatternError(FlopsregError):
    """A Pattern, Param, Constraint or Convention is malformed, or a formula is not an exact integer."""


class PluginError(FlopsregError):
    """A plugin could not be loaded or registered; ``plugin`` names it."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"plugin {plugin!r}: {message}")
        self.plugin = plugin


class PluginWarning(UserWarning):
    """A plugin was skipped; the message is the :class:`PluginError` that caused it."""


class PlausibilityWarning(UserWarning):
    """A drop-in was given a value no real run produces (a negative or nan time, impossible
    sequence statistics); it returns what the function it replaces returns for that value."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or ``""`` when none is close."""
    import difflib  # only when a name is wrong

    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
