"""Llama 4's image rule: Llama4ImageProcessor's tiling and Llama4Processor's token count.

The processor (transformers 5.24, ``models/llama4/image_processing_llama4.py``) cuts each image
into square tiles of the vision tower's ``image_size`` (336 pixels in the published configs): it
picks a canvas of ``rows x columns`` tiles, ``rows * columns <= max_patches`` (16), with
``get_best_fit`` (the smallest upscaling that fits, else the least downscaling; ties to the
smallest area), resizes the image without distortion into it (never upscaling past one tile
where ``resize_to_max_canvas`` is off, as published) and pads the rest. With more than one tile
a global tile, the whole image resized to one tile, is added: ``t = rows * columns + 1`` tiles,
else ``t = 1``. Each tile's ``(image_size / patch)^2`` patches become ``n = patches / ds`` tokens
after the pixel shuffle (``ds = round(1 / pixel_shuffle_ratio^2)``, 4), and Llama4Processor
expands ``<|image|>`` into ``<|image_start|>``, per tile of the canvas its ``n`` ``<|patch|>``
tokens followed by ``<|tile_x_separator|>`` (``<|tile_y_separator|>`` after a row's last tile),
``<|image|>``, the global tile's ``n`` tokens, ``<|image_end|>``.
The tower's FLOPs are the closed forms of LLAMA4_VISION (patterns/hf/_towers.py) over the grid
``(t, image_size / patch, image_size / patch)``. Derived in docs/multimodal.md; checked against
tests/data/hf_forward/forward_llama4img.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["LLAMA4_IMAGES", "MAX_TILES", "best_fit", "canvases", "image_tokens", "resized_size"]

MAX_TILES = 16  # Llama4ImageProcessor.max_patches, as in the published preprocessor_config.json


def canvases(max_tiles: int = MAX_TILES) -> list[tuple[int, int]]:
    """Every canvas ``(rows, columns)`` of tiles the processor may pick, ``rows * columns <=
    max_tiles``, in find_supported_resolutions' order (grouped by aspect ratio, first seen first),
    which decides a tie get_best_fit leaves (its argmin takes the first)."""
    by_ratio: dict[Fraction, list[tuple[int, int]]] = {}
    for tiles in range(max_tiles, 0, -1):
        for rows in (factor for factor in range(1, tiles + 1) if tiles % factor == 0):
            by_ratio.setdefault(Fraction(rows, tiles // rows), []).append((rows, tiles // rows))
    return [canvas for group in by_ratio.values() for canvas in group]


def best_fit(height: int, width: int, tile: int, max_tiles: int = MAX_TILES) -> tuple[int, int]:
    """The canvas ``(rows, columns)`` of tiles get_best_fit picks for a *height* x *width* image
    (resize_to_max_canvas off): each canvas scales the image by min(its height / height, its
    width / width); the smallest scale >= 1 if any, else the largest; ties to the smallest area.
    Exact fractions where torch compares float32 quotients: the same choice while both sides are
    below 2^19 pixels (two different scales then differ by more than float32 rounds away)."""
    scales = {canvas: min(Fraction(canvas[0] * tile, height), Fraction(canvas[1] * tile, width)) for canvas in canvases(max_tiles)}
    upscaling = [scale for scale in scales.values() if scale >= 1]
    chosen = min(upscaling) if upscaling else max(scales.values())
    return min((canvas for canvas, scale in scales.items() if scale == chosen), key=lambda canvas: canvas[0] * canvas[1])


def resized_size(height: int, width: int, tile: int, canvas: tuple[int, int]) -> tuple[int, int]:
    """The size the image is resized to inside its canvas before padding, step for step as
    Llama4ImageProcessor (no upscaling past one tile; get_max_res_without_distortion in floats)."""
    target_height = min(max(height, tile), canvas[0] * tile)
    target_width = min(max(width, tile), canvas[1] * tile)
    scale_w, scale_h = target_width / width, target_height / height
    if scale_w < scale_h:
        new_height, new_width = min(math.floor(height * scale_w), target_height), target_width
    else:
        new_height, new_width = target_height, min(math.floor(width * scale_h), target_width)
    return max(new_height, 1), max(new_width, 1)


def image_tokens(canvas: tuple[int, int], per_tile: int) -> int:
    """The tokens Llama4Processor expands one image into (``_prompt_split_image``): begin, the
    canvas tiles' tokens with one separator after each tile (x between, y at a row's end) where
    there is more than one tile, ``<|image|>``, the global (or only) tile's tokens, end."""
    tiles = canvas[0] * canvas[1]
    return 3 + per_tile + (tiles * (per_tile + 1) if tiles > 1 else 0)


def _shuffle(d: Mapping[str, int]) -> tuple[int, int]:
    """(patches a side of a tile, tokens per tile after the pixel shuffle); raises ``ValueError``
    where transformers cannot build the vision adapter or the projector on these widths."""
    side, ds = d["image"] // d["patch"], d["ds"]
    root = math.isqrt(ds)
    if side < 1 or root * root != ds or side % root:
        raise ValueError(f"the pixel shuffle (1/{ds} of the tokens) cannot split a tile of {side} x {side} patches "
                         "(image_size / patch_size; transformers fails on it)")
    if d["i"] != d["h"] * ds:
        raise ValueError(f"intermediate_size = {d['i']}: the vision adapter's first matrix takes the shuffled width "
                         f"hidden_size x {ds} = {d['h'] * ds} (transformers fails on it)")
    if d["vision_out"] != d["shuffle_out"] or d["shuffle_in"] != d["shuffle_out"]:
        raise ValueError(f"projector_input_dim = {d['shuffle_in']}, projector_output_dim = {d['shuffle_out']}, "
                         f"vision_output_dim = {d['vision_out']}: the adapter and the projector chain only if all three "
                         "are equal (transformers fails on it)")
    return side, side * side // ds


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    side, per_tile = _shuffle(d)
    canvas = best_fit(height, width, d["image"], d["max_patches"])
    tiles = canvas[0] * canvas[1]
    return MediaPlan(height=height, width=width, resized=resized_size(height, width, d["image"], canvas),
                     grid=(tiles + 1 if tiles > 1 else 1, side, side), tokens=image_tokens(canvas, per_tile))


def _from_tokens(d: Mapping[str, int], count: int) -> MediaPlan:
    """An image known by its ``<|patch|>`` tokens, ``n`` per tile (the global one included): the
    tiles fix the tower's work and the separators, whatever the canvas's shape."""
    side, per_tile = _shuffle(d)
    tiles, extra = divmod(count, per_tile)
    if extra or tiles == 2 or tiles > d["max_patches"] + 1:
        raise ValueError(f"an image is {per_tile} <|patch|> tokens per tile, on 1 tile or 3 to {d['max_patches'] + 1} "
                         "(the canvas's and the global one)")
    canvas = (1, tiles - 1) if tiles > 1 else (1, 1)
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(tiles, side, side), tokens=image_tokens(canvas, per_tile))


LLAMA4_IMAGES = MediaRule(
    summary="tiles of image_size pixels (Llama4ImageProcessor, max_patches 16: the best-fitting canvas of "
    "rows x columns <= 16 tiles, plus a global tile when there is more than one); per tile (image_size / patch)^2 / 4 "
    "<|patch|> tokens, a separator after each canvas tile, <|image_start|>, <|image|> and <|image_end|>",
    plan=_plan,
    from_tokens=_from_tokens,
    options={"max_patches": MAX_TILES},  # the processor's most tiles a canvas holds
    rules=(
        "tiles t = rows x columns + 1 (the global tile) for a canvas of more than one tile, else 1; "
        "N = patches + 1 class token per tile",
        "patch_embed = 2 t patches x channels patch^2 x h (unfold, one matrix)",
        "blocks: bidirectional attention over each tile's N tokens (no mask); the class token's last-layer "
        "query, output and MLP are dropped with it and not counted",
        "vision_adapter = 2 t n (i x projector_input_dim + projector_output_dim^2), n = patches / ds after the pixel shuffle "
        "(ds = round(1 / pixel_shuffle_ratio^2) = 4)",
        "projector = 2 t n x vision_output_dim x text_hidden",
        "language model: image and separator tokens causal like text (chunked layers chunk them too)",
    ),
)
