"""The model types of the transformers release flopsreg's readers follow (5.24), as data:
``transformers_types.json``, written by ``tools/make_transformers_types.py`` (transformers is not
a dependency). An unsupported ``model_type`` is explained from it: a typo gets the closest
supported name, a known type is named for what it is, never a look-alike of another family.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path

import attrs

from flopsreg.errors import did_you_mean

__all__ = ["CausalLM", "TransformersTypes", "transformers_types", "unsupported_reason"]

DOCS = "docs/hf-configs.md"


@attrs.frozen
class CausalLM:
    """One entry of transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES: its class, why flopsreg
    leaves the type out by kind (encoder, encoder-decoder, speech, music, OCR), if it does, and
    why its FLOPs cannot be counted from a config (they depend on the input), if so."""

    model_type: str
    cls: str
    excluded: str | None = None
    refused: str | None = None


@attrs.frozen
class TransformersTypes:
    """Every config model_type of a transformers release, and its causal-LM types."""

    version: str
    causal_lm: Mapping[str, CausalLM]
    model_types: frozenset[str]


@cache
def transformers_types() -> TransformersTypes:
    """The stored list, read once."""
    data = json.loads(Path(__file__).with_name("transformers_types.json").read_text(encoding="utf-8"))
    causal = {name: CausalLM(name, entry["class"], entry.get("excluded"), entry.get("refused")) for name, entry in data["causal_lm"].items()}
    return TransformersTypes(data["transformers"], causal, frozenset(data["model_types"]))


def unsupported_reason(model_type: str, supported: Collection[str]) -> str:
    """Why no reader reads *model_type*, after ``unsupported``: what the type is in transformers,
    a supported type of the same transformers class (its declared relative), or for a name
    transformers does not know either, the closest supported name (a typo)."""
    known = transformers_types()
    release = f"transformers {known.version}"
    entry = known.causal_lm.get(model_type)
    if entry is not None and entry.excluded is not None:
        return f": {entry.cls} in {release} is {entry.excluded}; flopsreg counts decoder-only language models (see {DOCS})"
    if entry is not None and entry.refused is not None:
        return f": {entry.cls} ({release}) cannot be counted from its config: {entry.refused} (see {DOCS})"
    if entry is not None:
        relatives = sorted(name for name in supported if name in known.causal_lm and known.causal_lm[name].cls == entry.cls)
        if relatives:
            return (
                f": not read by flopsreg yet; its relative {relatives[0]!r} is ({release} runs both with {entry.cls}; "
                f"see {DOCS})"
            )
        return f": {entry.cls} ({release}) is not read by flopsreg yet (see {DOCS})"
    if model_type in known.model_types:
        return f": not a causal language model of {release} (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), so flopsreg reads none (see {DOCS})"
    return f"{did_you_mean(model_type, supported)} (supported: {', '.join(sorted(supported))})"
