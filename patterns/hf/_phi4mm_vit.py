"""Phi-4-multimodal's image rule: Phi4MultimodalImageProcessor's dynamic HD cropping (448-pixel
crops, at most ``dynamic_hd`` of them, the image padded at the right or bottom, a mask of its real
patches, a global image beside), and the tokens it expands an image to.

The processor (transformers 5.24, its class defaults: size 448, patch 14, ``dynamic_hd`` 36)
takes ``ceil(width / 448) x ceil(height / 448)`` crops, or, where that is more than 36, the
``(w, h)`` of at most 36 crops whose aspect ratio is closest to the image's (a tie goes to the
larger where the image covers more than half of it). It resizes the image to fill that many crops
along one side, keeping the aspect ratio (the other side truncated), pads the rest, and masks every
whole patch of padding. The image's tokens: the global image's 16 x 16 pooled tokens and a newline
(``sub_GN``) after each of its rows (272), one ``glb_GN``, and the crops' real pooled tokens
(every second real patch row and column: ``u_r x u_c``) with a newline after each row (``u_r``).

The tower (Phi4MultimodalImageEmbedding) runs a SigLIP ViT over the global image and every crop,
keeps the hidden states of layer ``feature_layer`` (-2: every layer but the last), pools 2 x 2,
and projects every token up and down to the text width. transformers runs the padded patches, the
blank crops that pad a shorter image's crops to the longest image's, the last layer, the post
LayerNorm and the pooling head too, whose output is thrown away: flopsreg counts the useful work,
the real patches of the layers whose output is used, attention within each crop over its real
patches (the mask's pairs). Derived in docs/multimodal.md; checked against
tests/data/hf_forward/forward_phi4git.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["CROP", "DYNAMIC_HD", "PHI4_MULTIMODAL_IMAGES", "crops"]

CROP, PATCH, DYNAMIC_HD = 448, 14, 36  # the processor's size, patch_size and dynamic_hd (its class defaults)
SMALLEST = 10  # the processor refuses a resized side below this many pixels


def _closest(height: int, width: int) -> tuple[int, int]:
    """The (columns, rows) of crops, at most DYNAMIC_HD, whose aspect ratio is closest to the
    image's, taken in the processor's order (by crop count); on a tie the later one where the
    image's area exceeds half of its crops'."""
    aspect = width / height
    ratios = sorted({(i, j) for n in range(1, DYNAMIC_HD + 1) for i in range(1, n + 1) for j in range(1, n + 1)
                     if i * j <= DYNAMIC_HD}, key=lambda ratio: ratio[0] * ratio[1])
    best, best_diff = (1, 1), float("inf")
    for ratio in ratios:
        diff = abs(aspect - ratio[0] / ratio[1])
        if diff < best_diff:
            best, best_diff = ratio, diff
        elif diff == best_diff and width * height > 0.5 * CROP * CROP * ratio[0] * ratio[1]:
            best = ratio
    return best


def crops(height: int, width: int) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """The processor's cropping of a *height* x *width* image: ``(rows, columns)`` of crops, the
    resized image (height, width) and the padding (height, width) in pixels."""
    across, down = math.ceil(width / CROP), math.ceil(height / CROP)
    if across * down > DYNAMIC_HD:
        across, down = _closest(height, width)
    target_width, target_height = CROP * across, CROP * down
    if target_width / width < target_height / height:
        resized = (int(height * (target_width / width)), target_width)
    else:
        resized = (target_height, int(width * (target_height / height)))
    if min(resized) < SMALLEST:
        raise ValueError(f"{height}x{width}: the processor refuses the aspect ratio (resized to {resized[0]}x{resized[1]} pixels)")
    return (down, across), resized, (target_height - resized[0], target_width - resized[1])


def _check(d: Mapping[str, int]) -> int:
    """The crop side in patches; raises ``ValueError`` where the processor and the model disagree."""
    if (d["image"], d["crop"], d["patch"]) != (CROP, CROP, PATCH):
        raise ValueError(
            f"image_size = {d['image']}, crop_size = {d['crop']}, patch_size = {d['patch']}: the processor cuts "
            f"{CROP}-pixel crops of {PATCH}-pixel patches (its 256 + 16 global tokens assume them; transformers fails on others)"
        )
    if not 1 <= d["back"] <= d["layers"] + 1:
        raise ValueError(f"feature_layer = {-d['back']}: expected -1 to -{d['layers'] + 1} (num_hidden_layers + 1 hidden states)")
    return CROP // PATCH


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    side = _check(d)
    (down, across), resized, (pad_height, pad_width) = crops(height, width)
    rows, columns = side * down - pad_height // PATCH, side * across - pad_width // PATCH  # whole patches of padding masked
    # Pooling keeps every second real patch row and column of each crop: the crops filled from the
    # start and of an even side (32), ceil(real / 2) along each axis in all.
    u_r, u_c = (rows + 1) // 2, (columns + 1) // 2
    tokens = side // 2 * (side // 2 + 1) + 1 + u_r * (u_c + 1)
    return MediaPlan(height=height, width=width, resized=(CROP * down, CROP * across), grid=(1, rows, columns), tokens=tokens)


PHI4_MULTIMODAL_IMAGES = MediaRule(
    summary=f"dynamic HD: {CROP}-pixel crops, ceil(w / {CROP}) x ceil(h / {CROP}) or the closest aspect ratio of at most "
    f"{DYNAMIC_HD}, padding masked, and a global {CROP} x {CROP} image (Phi4MultimodalImageProcessor); tokens = 16 x 17 "
    "(global, sub_GN) + 1 (glb_GN) + u_r (u_c + 1) (the crops' real pooled tokens, a newline per row)",
    plan=_plan,
    shape_note="its crops, their padding and its tokens depend on the image's shape",
    rules=(
        "grid 1 x rows x columns: the real patches of the crops (padding masked), beside the global image's n x n (n = 32)",
        "patch_embed = 2 x N x h x channels x patch^2, N = n^2 + rows x columns real patches",
        "blocks.qkv_proj = U x 2 x N x 4h^2, U = layers + 1 + feature_layer layers whose output is used",
        "blocks.attention = 4h x U x (n^4 + S_r S_c): each crop's real patches with each other, S = n^2 floor(real / n) + (real mod n)^2",
        "blocks.mlp = U x 2 x N x 2 h i",
        "projector = 2 x T x (h D + D^2), T = the image's tokens (img_projection_up, img_projection_down)",
        "not counted (output thrown away): padded patches and blank crops, the layers after feature_layer, post LayerNorm, pooling head",
    ),
)
