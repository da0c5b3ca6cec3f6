"""Everything a plugin imports, from one module: the hook marker, the declarations, the shared
symbols, the helpers that Hugging Face and Megatron-LM readers use, and the errors a plugin raises.

The built-in plugins (:mod:`flopsreg.patterns`) import from here too, so what they use is what a
third-party plugin can use::

    from flopsreg.plugin import Param, Pattern, hookimpl, h, s
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flopsreg._deprecated import old_names
from flopsreg.declarations.pattern import (
    EXACT,
    Block,
    Constraint,
    Convention,
    GroupSelector,
    Param,
    Pattern,
    Quantity,
    Slot,
    SlotGroup,
    canonical,
)
from flopsreg.declarations.readers import HFLayerType, HFReader, MegatronReader, family_flag
from flopsreg.declarations.symbols import block_flops, block_layers, cached, h, integer_symbol, n_h, s
from flopsreg.declarations.towers import CROSS_ATTENTION, IMAGE_GRID, Dim, HFTower, MediaPlan, MediaRule, TowerKind, where_symbol
from flopsreg.errors import ModelError, PatternError, did_you_mean
from flopsreg.plugins.hookspecs import hookimpl

if TYPE_CHECKING:  # imported on first use (``__getattr__`` below): a model file's patterns need none of them
    from flopsreg.readers.decoder import Decoder, Layers, layers_with
    from flopsreg.readers.fields import Fields, gqa_params, head_dim_of
    from flopsreg.readers.megatron import window_keys

_READER_HELPERS = {
    "Decoder": "flopsreg.readers.decoder",
    "Layers": "flopsreg.readers.decoder",
    "layers_with": "flopsreg.readers.decoder",
    "Fields": "flopsreg.readers.fields",
    "gqa_params": "flopsreg.readers.fields",
    "head_dim_of": "flopsreg.readers.fields",
    "window_keys": "flopsreg.readers.megatron",
}

__all__ = [
    "EXACT",
    "CROSS_ATTENTION",
    "IMAGE_GRID",
    "Block",
    "Constraint",
    "Convention",
    "Decoder",
    "Dim",
    "Fields",
    "GroupSelector",
    "HFLayerType",
    "HFReader",
    "HFTower",
    "MediaPlan",
    "MediaRule",
    "Layers",
    "MegatronReader",
    "ModelError",
    "Param",
    "Pattern",
    "PatternError",
    "Quantity",
    "Slot",
    "SlotGroup",
    "TowerKind",
    "block_flops",
    "block_layers",
    "cached",
    "canonical",
    "did_you_mean",
    "family_flag",
    "gqa_params",
    "h",
    "head_dim_of",
    "hookimpl",
    "integer_symbol",
    "layers_with",
    "n_h",
    "s",
    "where_symbol",
    "window_keys",
]


_old_names = old_names(__name__)


def __getattr__(name: str) -> object:
    if name in _READER_HELPERS:
        import importlib

        value = getattr(importlib.import_module(_READER_HELPERS[name]), name)
        globals()[name] = value
        return value
    return _old_names(name)  # ImageRule and ImagePlan warn and give MediaRule and MediaPlan; anything else: AttributeError
