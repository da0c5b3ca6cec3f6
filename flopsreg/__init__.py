"""flopsreg: exact FLOPs of transformer models from a registry of attention-pattern rules.

>>> import flopsreg
>>> reg = flopsreg.Registry.default()
>>> model = flopsreg.Model.uniform("tiny", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)
>>> reg.evaluate(model, seq_len=4).forward
2368
"""

from __future__ import annotations

from flopsreg._deprecated import install as _install_old_paths
from flopsreg.errors import FlopsregError, ModelError, PatternError, PluginError, PluginWarning, SelectionError
from flopsreg.model import Layer, LayerKind, Model, Plan

_install_old_paths()  # flopsreg.compile, flopsreg.registry, ...: moved in 0.2, warned about until 0.3

# The rest is imported on first access: the command line answers from its cache without sympy.
_LAZY = {
    "Registry": "flopsreg.registry",
    "ModelSelection": "flopsreg.engine.compose",
    "HFLayerType": "flopsreg.declarations.readers",
    "HFReader": "flopsreg.declarations.readers",
    "MegatronReader": "flopsreg.declarations.readers",
    "LayerResult": "flopsreg.engine.evaluate",
    "Result": "flopsreg.engine.evaluate",
    "hookimpl": "flopsreg.plugins.hookspecs",
    "Block": "flopsreg.declarations.pattern",
    "Constraint": "flopsreg.declarations.pattern",
    "Convention": "flopsreg.declarations.pattern",
    "GroupSelector": "flopsreg.declarations.pattern",
    "Param": "flopsreg.declarations.pattern",
    "Memory": "flopsreg.engine.memory",
    "Parameters": "flopsreg.engine.parameters",
    "Pattern": "flopsreg.declarations.pattern",
    "Quantity": "flopsreg.declarations.pattern",
    "Slot": "flopsreg.declarations.pattern",
    "SlotGroup": "flopsreg.declarations.pattern",
    "SlotSelection": "flopsreg.engine.select",
}

# Earlier names, which warn for one release (0.2): a model's selection result was its "plan", a
# word that now means only the layer layout (Plan).
_RENAMED = {"ModelPlan": "ModelSelection", "Selection": "SlotSelection"}

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
    "Memory",
    "Model",
    "ModelError",
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
    if name in _RENAMED:
        import warnings

        warnings.warn(f"flopsreg.{name} is deprecated and will be removed in 0.3: use flopsreg.{_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return __getattr__(_RENAMED[name])
    if name in _LAZY:
        import importlib

        module, _, attribute = _LAZY[name].partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'flopsreg' has no attribute {name!r}")
