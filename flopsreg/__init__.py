"""flopsreg: exact FLOPs of transformer models from a registry of attention-pattern rules.

>>> import flopsreg
>>> reg = flopsreg.Registry.default()
>>> model = flopsreg.Model.uniform("tiny", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)
>>> reg.evaluate(model, seq_len=4).forward
2368
"""

from __future__ import annotations

from flopsreg.api import Registry
from flopsreg.compose import ModelPlan
from flopsreg.errors import FlopsregError, ModelError, PatternError, PluginError, PluginWarning, SelectionError
from flopsreg.evaluate import LayerResult, Result
from flopsreg.hookspecs import hookimpl
from flopsreg.model import Layer, LayerKind, Model, Plan
from flopsreg.pattern import Block, Constraint, Convention, Param, Pattern, Quantity, Slot
from flopsreg.select import Selection

__all__ = [
    "Block",
    "Constraint",
    "Convention",
    "FlopsregError",
    "Layer",
    "LayerKind",
    "LayerResult",
    "Model",
    "ModelError",
    "ModelPlan",
    "Param",
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
    "__version__",
    "hookimpl",
]


def __getattr__(name: str) -> str:
    if name == "__version__":
        from importlib.metadata import version

        return version("flopsreg")
    raise AttributeError(f"module 'flopsreg' has no attribute {name!r}")
