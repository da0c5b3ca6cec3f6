"""flopsreg: exact FLOPs of transformer models from a registry of attention-pattern rules.

>>> import flopsreg
>>> reg = flopsreg.Registry.default()
>>> model = flopsreg.Model.uniform("tiny", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)
>>> reg.evaluate(model, seq_len=4).forward
2368
"""

from __future__ import annotations

import flopsreg.readers  # noqa: F401 - the readers behind Model.from_toml, from_hf_config, ...
from flopsreg.errors import FlopsregError, ModelError, PatternError, PluginError, PluginWarning, SelectionError
from flopsreg.model import Layer, LayerKind, Model, Plan

# The rest is imported on first access: the command line answers from its cache without sympy.
_LAZY = {
    "Registry": "flopsreg.api",
    "ModelSelection": "flopsreg.compose",
    "ModelPlan": "flopsreg.compose:ModelSelection",
    "HFLayerType": "flopsreg.declare",
    "HFReader": "flopsreg.declare",
    "MegatronReader": "flopsreg.declare",
    "LayerResult": "flopsreg.evaluate",
    "Result": "flopsreg.evaluate",
    "hookimpl": "flopsreg.hookspecs",
    "Block": "flopsreg.pattern",
    "Constraint": "flopsreg.pattern",
    "Convention": "flopsreg.pattern",
    "GroupSelector": "flopsreg.pattern",
    "Param": "flopsreg.pattern",
    "Parameters": "flopsreg.parameters",
    "Pattern": "flopsreg.pattern",
    "Quantity": "flopsreg.pattern",
    "Slot": "flopsreg.pattern",
    "SlotGroup": "flopsreg.pattern",
    "SlotSelection": "flopsreg.select",
    "Selection": "flopsreg.select:SlotSelection",
}

# ModelPlan and Selection are earlier names, kept as aliases for one release (0.2): a model's
# selection result was its "plan", a word that now means only the layer layout (Plan).

__all__ = [
    "Block",
    "Constraint",
    "Convention",
    "FlopsregError",
    "GroupSelector",
    "HFLayerType",
    "HFReader",
    "Layer",
    "LayerKind",
    "LayerResult",
    "MegatronReader",
    "Model",
    "ModelError",
    "ModelPlan",
    "ModelSelection",
    "Param",
    "Parameters",
    "Pattern",
    "PatternError",
    "Plan",
    "PluginError",
    "PluginWarning",
    "Quantity",
    "Registry",
    "Result",
    "Selection",
    "SelectionError",
    "Slot",
    "SlotGroup",
    "SlotSelection",
    "__version__",
    "hookimpl",
]


def __getattr__(name: str) -> object:
    if name == "__version__":
        from importlib.metadata import version

        return version("flopsreg")
    if name in _LAZY:
        import importlib

        module, _, attribute = _LAZY[name].partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'flopsreg' has no attribute {name!r}")
