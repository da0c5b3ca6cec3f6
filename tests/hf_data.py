"""Read the published Hugging Face configs of tests/data/hf (see SOURCES.md there).

Nothing here computes an expected number; it only loads files and reads layers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

DATA = Path(__file__).parent / "data" / "hf"


def path(name: str) -> Path:
    """The config file tests/data/hf/<name>.json."""
    return DATA / f"{name}.json"


def config(name: str) -> dict:
    """A fresh, mutable copy of the published config <name>.json."""
    return copy.deepcopy(json.loads(path(name).read_text(encoding="utf-8")))


def indices(model, flag: str) -> set[int]:
    """Indices of the decoder layers (MTP blocks are separate) whose flags include *flag*."""
    return {layer.index for layer in model.layers if flag in layer.flags}
