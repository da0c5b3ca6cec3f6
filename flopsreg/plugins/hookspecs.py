"""The hooks a flopsreg plugin implements; ``hookimpl`` marks an implementation.

Every hook takes no arguments and returns a list of declarations: what a plugin contributes
never depends on the model it is applied to. Which pattern fills a slot is decided later, by
flags and precedence, from the patterns' own data.
"""

from __future__ import annotations

import pluggy

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "flopsreg"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def flopsreg_register_patterns() -> list:
    """Return the :class:`~flopsreg.Pattern` rules this plugin contributes."""


@hookspec
def flopsreg_register_conventions() -> list:
    """Return the accounting :class:`~flopsreg.Convention` s this plugin contributes.

    A convention is a named flag that ``evaluate(..., convention=name)`` sets on every layer
    and on the model; the plugin's patterns that require that flag then win their slots.
    """


@hookspec
def flopsreg_register_quantities() -> list:
    """Return the :class:`~flopsreg.Quantity` s (values one slot's pattern produces for others)."""


@hookspec
def flopsreg_register_slots() -> list:
    """Return the :class:`~flopsreg.Slot` s (places in a layer or model) this plugin declares."""


@hookspec
def flopsreg_register_slot_groups() -> list:
    """Return the :class:`~flopsreg.SlotGroup` s (token mixers: groups of slots a layer has or lacks as a whole)."""


@hookspec
def flopsreg_register_group_selectors() -> list:
    """Return the :class:`~flopsreg.GroupSelector` s: which flags give a layer which token mixer."""


@hookspec
def flopsreg_register_blocks() -> list:
    """Return the :class:`~flopsreg.Block` s (named groups of extra layers) this plugin declares."""


@hookspec
def flopsreg_register_hf_readers() -> list:
    """Return :class:`~flopsreg.declarations.readers.HFReader` s: Hugging Face model_types this plugin reads."""


@hookspec
def flopsreg_register_hf_layer_types() -> list:
    """Return :class:`~flopsreg.declarations.readers.HFLayerType` s: ``layer_types`` strings and their flags."""


@hookspec
def flopsreg_register_megatron_readers() -> list:
    """Return :class:`~flopsreg.declarations.readers.MegatronReader` s: Megatron-LM argument features."""
