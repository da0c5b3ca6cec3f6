"""Fuyu's image rule: FuyuImageProcessor's resize to fit within 1080 x 1920, the patches of the
unpadded image, and FuyuProcessor's expansion (a token per patch, a newline per row, ``<s>`` after).

FuyuImageProcessor (transformers 5.24, its class defaults: ``size`` 1080 x 1920, ``patch_size``
30, those of adept/fuyu-8b) shrinks an image larger than the target either way by
``min(1080 / height, 1920 / width)``, each side truncated (``int``), keeping the aspect ratio; a
smaller image keeps its size. It then pads to 1080 x 1920, but FuyuProcessor cuts patches only
from the unpadded part rounded up to whole patches (``ceil(height / patch)`` rows,
``ceil(width / patch)`` columns): padding beyond that is never projected. FuyuModel has no image
encoder: ``vision_embed_tokens``, one biased matrix, maps each patch's ``channels x patch^2``
values to the text width. FuyuProcessor replaces the image by a ``|SPEAKER|`` per patch, a
``|NEWLINE|`` after each row and ``<s>`` after the image: ``rows (columns + 1) + 1`` tokens, which
the decoder attends to causally like text.
Derived in docs/multimodal.md; checked against tests/data/hf_forward/forward_phi4git.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["FUYU_IMAGES", "TARGET", "fit"]

TARGET = (1080, 1920)  # FuyuImageProcessor.size: (height, width) an image is shrunk to fit and padded to


def fit(height: int, width: int) -> tuple[int, int]:
    """FuyuImageProcessor.resize, step for step: a size larger than :data:`TARGET` either way shrunk
    by the smaller of the two ratios, each side truncated (the ratio a float, as there)."""
    target_height, target_width = TARGET
    if height <= target_height and width <= target_width:
        return height, width
    scale = min(target_height / height, target_width / width)
    resized = int(height * scale), int(width * scale)
    if min(resized) < 1:
        raise ValueError(f"{height}x{width}: the processor would resize it to {resized[0]}x{resized[1]} pixels")
    return resized


def _patches(pixels: int, patch: int, padded: int) -> int:
    """Patches along one side: the unpadded pixels rounded up to whole patches (within the padding)."""
    covered = min(padded, math.ceil(pixels / patch) * patch)
    if covered % patch:
        raise ValueError(f"patch_size = {patch}: the processor's {padded}-pixel padded side is no multiple of it (transformers fails)")
    return covered // patch


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    resized = fit(height, width)
    rows, columns = (_patches(pixels, d["patch"], padded) for pixels, padded in zip(resized, TARGET, strict=True))
    return MediaPlan(height=height, width=width, resized=resized, grid=(1, rows, columns), tokens=rows * (columns + 1) + 1)


FUYU_IMAGES = MediaRule(
    summary=f"shrunk to fit within {TARGET[0]} x {TARGET[1]} if larger (FuyuImageProcessor), patches of the unpadded part "
    "(ceil(height / patch) x ceil(width / patch)); tokens = rows x (columns + 1) + 1 (a |NEWLINE| per row, <s> after)",
    plan=_plan,
    shape_note="its row-break tokens (one per row of patches) depend on the image's shape",
    rules=(
        "projection = 2 x patches x channels x patch^2 x text_hidden (vision_embed_tokens, one matrix per patch; no encoder)",
    ),
)
