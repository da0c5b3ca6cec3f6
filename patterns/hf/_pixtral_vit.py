"""Mistral Large 4's image rule (the Pixtral ViT and the patch-merger projector): the processor's
resize to whole merged patches within the longest edge, and the tokens it expands each image to.

PixtralProcessor drives PixtralImageProcessor with ``patch_size = patch x spatial_merge_size``:
an image larger than ``longest_edge`` on a side is scaled down (aspect kept, each side floored),
then each side is rounded up to a multiple of ``patch x merge`` pixels. The ViT runs over the
image's ``rows x columns`` patches (attention within the image only: transformers packs a
request's images into one sequence with a block-diagonal mask), the projector's patch merger
turns each ``merge x merge`` group into one token, and the processor writes one ``[IMG]`` per
merged token, an ``[IMG_BREAK]`` after each row of them, the last one replaced by ``[IMG_END]``:
``rows/merge x (columns/merge + 1)`` tokens. The published processors set ``longest_edge`` to the
tower's ``image_size`` (1540 for Mistral Small 3.1's tower, which Mistral Large 4 builds): the
option's default (``processor={"longest_edge": n}`` sets another).
The projector reads the hidden states ``vision_feature_layer`` selects (an index or a list of
them, negative from the end; ``hidden_states[0]`` is the patch embeddings, ``hidden_states[k]``
block k's output): the tower runs every block, but only the first ``feature_blocks`` of them reach
the projector, and only those are counted.
FLOPs are the kind's closed forms (patterns/hf/_towers.py PIXTRAL_VISION); derived in
docs/multimodal.md, checked against tests/data/hf_forward/forward_pixkimi.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["PIXTRAL_IMAGES", "feature_blocks", "pixtral_resize", "pixtral_tokens"]

PIXTRAL_LAYERS = 24  # PixtralVisionConfig's num_hidden_layers
FEATURE_LAYER = -1  # MistralLarge4Config's vision_feature_layer


def feature_blocks(vision: Mapping[str, Any], wrapper: Mapping[str, Any]) -> int:
    """The blocks whose output reaches the projector: up to the deepest hidden state
    ``vision_feature_layer`` selects (of num_hidden_layers + 1; index k is k blocks, negative from the end)."""
    layers = vision.get("num_hidden_layers", PIXTRAL_LAYERS)
    selected = wrapper.get("vision_feature_layer", FEATURE_LAYER)
    indexes = [selected] if type(selected) is int else selected
    states = layers + 1
    if not isinstance(indexes, list) or not indexes or any(type(k) is not int or not -states <= k < states for k in indexes):
        raise ValueError(
            f"num_hidden_layers = {layers}: vision_feature_layer = {selected!r:.60} is out of range: expected an index "
            f"or a non-empty list of indexes from {-states} to {layers} (hidden_states[0] is the patch embeddings)"
        )
    return max(k % states for k in indexes)


def pixtral_resize(height: int, width: int, longest_edge: int, factor: int) -> tuple[int, int]:
    """transformers' Pixtral ``get_resize_output_image_size``, step for step (the ratio is a float,
    as there): scaled down to fit ``longest_edge``, then each side rounded up to a multiple of *factor*."""
    if height < 1 or width < 1:
        raise ValueError(f"{height}x{width}: expected a height and width of at least 1 pixel")
    ratio = max(height / longest_edge, width / longest_edge)
    if ratio > 1:
        height, width = int(math.floor(height / ratio)), int(math.floor(width / ratio))
    if height < 1 or width < 1:
        raise ValueError(f"scaled to fit {longest_edge} pixels, a side comes to 0 pixels (the processor cannot resize it)")
    return ((height - 1) // factor + 1) * factor, ((width - 1) // factor + 1) * factor


def pixtral_tokens(rows: int, columns: int, merge: int) -> int:
    """PixtralProcessor.replace_image_token's count for a ``rows x columns`` patch grid: an [IMG] per
    merged patch and an [IMG_BREAK] after each row of them (the last an [IMG_END])."""
    return (rows // merge) * (columns // merge + 1)


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    patch, merge = d["patch"], d["merge"]
    resized = pixtral_resize(height, width, d["longest_edge"], patch * merge)
    rows, columns = resized[0] // patch, resized[1] // patch
    return MediaPlan(height=height, width=width, resized=resized, grid=(1, rows, columns), tokens=pixtral_tokens(rows, columns, merge))


PIXTRAL_IMAGES = MediaRule(
    summary="PixtralImageProcessor: scaled down to fit longest_edge (default the tower's image_size), each side rounded up to patch x merge pixels; "
    "tokens = rows/merge x (columns/merge + 1) ([IMG] per merged patch, [IMG_BREAK] per row, [IMG_END] last)",
    plan=_plan,
    shape_note="the row breaks and attention within each image depend on its rows and columns",
    rules=(
        "patch_embed = 2 x patches x h x channels x patch^2 (Conv2d over the image's real patches)",
        "blocks.qkv_proj = used x 2 x patches x 4h^2 (q, k, v, o; used: the blocks up to vision_feature_layer's deepest hidden state)",
        "blocks.attention = 4h x used x sum(patches_per_image^2) (block-diagonal: each image attends within itself)",
        "blocks.mlp = used x 2 x patches x 3 h i (gated)",
        "projector.merge = 2 x (patches / merge^2) x (h merge^2) x h (patch merger)",
        "projector.mlp = 2 x (patches / merge^2) x (h features x text + text^2) (linear_1, linear_2)",
        "not counted (output thrown away): the blocks after the deepest hidden state vision_feature_layer selects",
    ),
    options={"longest_edge": "image"},  # the processor's longest edge, by default the tower's image_size
)
