"""flopsreg: exact FLOPs of transformer models from a registry of attention-pattern rules.

>>> import flopsreg
>>> reg = flopsreg.Registry.default()
>>> model = flopsreg.Model.uniform("tiny", layers=1, hidden=8, heads=2, kv_heads=2, head_dim=4)
>>> reg.evaluate(model, seq_len=4).forward
2368
"""

from __future__ import annotations

import flopsreg.readers  # noqa: F401 - the readers behind Model.from_toml, from_hf_config, ...
from flopsreg.api import Registry
from flopsreg.compose import ModelSelection
from flopsreg.declare import HFLayerType, HFReader, MegatronReader
from flopsreg.errors import FlopsregError, ModelError, PatternError, PluginError, PluginWarning, SelectionError
from flopsreg.evaluate import LayerResult, Result
from flopsreg.hookspecs import hookimpl
from flopsreg.model import Layer, LayerKind, Model, Plan
from flopsreg.pattern import Block, Constraint, Convention, Param, Pattern, Quantity, Slot
from flopsreg.select import SlotSelection

# Earlier names, kept as aliases for one release (0.2): a model's selection result was its
# "plan", a word that now means only the layer layout (Plan).
ModelPlan = ModelSelection
Selection = SlotSelection

__all__ = [
    "Block",
    "Constraint",
    "Convention",
    "FlopsregError",
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
    "SlotSelection",
    "__version__",
    "hookimpl",
]


def __getattr__(name: str) -> str:
    if name == "__version__":
        from importlib.metadata import version

        return version("flopsreg")
    raise AttributeError(f"module 'flopsreg' has no attribute {name!r}")
