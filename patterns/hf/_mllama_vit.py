"""Mllama's image rule: MllamaImageProcessor's tiling (a canvas of up to ``max_image_tiles`` tiles of
``image_size`` pixels, chosen by get_optimal_tiled_canvas), one ``<|image|>`` token per image in the
text, and the vision tokens its cross-attention layers attend to.

The processor picks, among the ``a x b`` tile arrangements with ``a b <= max_image_tiles``, the
canvas whose scale (the smaller of canvas height / image height and canvas width / image width)
is the smallest one >= 1, or else the largest one below 1, ties to the smallest area; the image
is resized to fit it (get_image_size_fit_to_canvas), padded to the canvas and cut into its
``a x b`` tiles, then padded with empty tiles to ``max_image_tiles``. The vision encoder runs over
every tile of ``(image_size / patch)^2`` patches and a class position, padded to a multiple of 8
positions; flopsreg counts the real tiles' real positions only (the padding is counted apart in
tests/hf/test_mllamaimg_forward.py). The text holds one ``<|image|>`` token per image; the
language model's cross-attention layers attend to the real tiles' positions (the
cross_attention_mask masks the padding tiles). Derived in docs/multimodal.md; checked against
tests/data/hf_forward/forward_mllamaimg.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["MLLAMA_IMAGES", "arrangements", "tiled_canvas", "tile_tokens"]


def arrangements(tiles: int) -> list[tuple[int, int]]:
    """The ``(rows, columns)`` tile arrangements of at most *tiles* tiles, in the processor's order
    (get_all_supported_aspect_ratios)."""
    return [(a, b) for a in range(1, tiles + 1) for b in range(1, tiles + 1) if a * b <= tiles]


def tiled_canvas(height: int, width: int, tiles: int, tile: int) -> tuple[int, int]:
    """The tiles ``(rows, columns)`` get_optimal_tiled_canvas picks for an image (exact ratios: the
    processor's float64 ratios of integers compare as these do)."""
    scales = [(min(Fraction(a * tile, height), Fraction(b * tile, width)), a, b) for a, b in arrangements(tiles)]
    up = [scale for scale, _, _ in scales if scale >= 1]
    chosen = min(up) if up else max(scale for scale, _, _ in scales)
    _, a, b = min(((a * b, index), a, b) for index, (scale, a, b) in enumerate(scales) if scale == chosen)
    return a, b


def _fit(height: int, width: int, canvas_height: int, canvas_width: int, tile: int) -> tuple[int, int]:
    """get_image_size_fit_to_canvas: the resized (height, width), with the processor's float scales."""
    target_width, target_height = min(max(width, tile), canvas_width), min(max(height, tile), canvas_height)
    scale_h, scale_w = target_height / height, target_width / width
    if scale_w < scale_h:
        return min(math.floor(height * scale_w) or 1, target_height), target_width
    return target_height, min(math.floor(width * scale_h) or 1, target_width)


def tile_tokens(d: Mapping[str, int]) -> int:
    """The positions of one tile in the vision encoder: its patches and the class position."""
    return (d["image"] // d["patch"]) ** 2 + 1


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    tile = d["image"]
    a, b = tiled_canvas(height, width, d["tiles"], tile)
    side = tile // d["patch"]
    return MediaPlan(height=height, width=width, resized=_fit(height, width, a * tile, b * tile, tile), grid=(a * b, side, side), tokens=1)


def _keys(d: Mapping[str, int], plan: MediaPlan) -> int:
    """The vision tokens of *plan* the cross-attention layers attend to: its real tiles' positions."""
    t, rows, columns = plan.grid
    return t * (rows * columns + 1)


MLLAMA_IMAGES = MediaRule(
    summary="tiled to the canvas of up to max_num_tiles image_size-pixel tiles get_optimal_tiled_canvas picks "
    "(MllamaImageProcessor); one <|image|> token per image; the language model's cross-attention layers "
    "attend to the real tiles' patches and class positions",
    plan=_plan,
    shape_note="every image is one <|image|> token; its tiles, and so the encoder's work, depend on its size",
    cross_part="cross_attention",
    cross_keys=_keys,
    rules=(
        "grid = (real tiles, image_size / patch, image_size / patch); n = tiles x (patches per tile + 1 class position), "
        "the padding tiles and the padding to a multiple of 8 positions not counted",
        "patch_embed = 2 x tiles x patches x h x channels x patch^2 (Conv2d)",
        "blocks (the local transformer's and the global transformer's): per layer 2n x 4 h d (q, k, v, o; d = heads x (h / heads)), "
        "4 d n^2 (every real position of the image with every other, across its tiles), 2n x 2 h i (MLP)",
        "projector = 2 n x vision_output_dim x text_hidden",
        "cross-attention layers (language model): q, o and the gated MLP over every position, k and v over the images' "
        "vision tokens, 4 heads x head_dim per (position, vision token) pair the cross_attention_mask allows "
        "(the image's <|image|> token to the end of the sequence)",
    ),
)
