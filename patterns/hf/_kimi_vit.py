"""Kimi K2.5's image rule (MoonViT and its projector): the processor's resize within a patch
budget, the padding to whole merge groups, and the tokens the chat template and processor place.

Kimi_K25ImageProcessor's ``navit_resize`` scales an image down (never up) so that it holds at most
``max_patches`` patches (the processor's option, 16384 by default: ``processor={"max_patches": n}``) and
its ``size`` ``max_height`` = ``max_width`` patches a side (512 by default; the processor refuses
unequal ones: ``processor={"max_height": n, "max_width": n}``), then pads it with zeros to a multiple of
``patch x merge`` pixels a side: the padded patches are part of the image (the ViT runs over them
and they become tokens). MoonViT attends within each image (transformers splits the packed
patches by image), the projector takes each ``merge x merge`` group of patches to one token, and
Kimi_K25Processor writes ``patches / merge^2`` ``<|media_pad|>`` tokens where the chat template
placed ``<|media_begin|>image<|media_content|><|media_pad|><|media_end|>`` (vLLM's
KimiK25ForConditionalGeneration.get_placeholder_str): 4 wrapper tokens an image.
FLOPs are the kind's closed forms (patterns/hf/_towers.py KIMI_K25_VISION); derived in
docs/multimodal.md, checked against tests/data/hf_forward/forward_pixkimi.json.

Videos (Kimi_K25VideoProcessor): the frames are cut into chunks of ``temporal_patch_size`` (4),
the last one shorter, each chunk resized and padded as an image is at the video's ``max_patches``
(4096) and ``size`` (512 patches a side: ``processor={"max_height": n, "max_width": n}``). MoonViT attends over each whole chunk (``merge_temporal``: one span of ``t x rows x
columns`` patches), adds a sinusoidal temporal position (elementwise), and averages the chunk's
frames into one (``temporal_merge``): each chunk gives ``rows x columns / merge^2`` tokens.
Kimi_K25Processor.replace_video_token writes per chunk ``HH:MM:SS.mmm`` (text: the caller counts it
in seq_len) and ``<|media_begin|>video<|media_content|>`` + pads + ``<|media_end|>``: 4 wrapper
tokens ("video" taken as one token). Checked against tests/data/hf_forward/forward_video2.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["KIMI_IMAGES", "KIMI_VIDEOS", "MAX_PATCHES", "MAX_SIDE", "VIDEO_OPTIONS", "WRAPPER_TOKENS", "navit_resize"]

WRAPPER_TOKENS = 4  # <|media_begin|>, "image", <|media_content|> before the pads; <|media_end|> after
MAX_PATCHES, MAX_SIDE = 16384, 512  # Kimi_K25ImageProcessor's max_patches and size["max_height"] (patches a side)


def navit_resize(
    height: int, width: int, patch: int, merge: int, max_patches: int = MAX_PATCHES, max_side: int = MAX_SIDE
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Kimi_K25ImageProcessor's ``navit_resize`` (Kimi_K25VideoProcessor's is the same, at its own
    *max_patches*), step for step (floats as there): the resized ``(height, width)`` and the size
    it is padded to, a multiple of ``patch x merge`` a side; *max_side* is its ``max_size_per_side``."""
    if height < 1 or width < 1:
        raise ValueError(f"{height}x{width}: expected a height and width of at least 1 pixel")
    current = max(1.0, height // patch) * max(1.0, width // patch)
    scale = min(1.0, math.sqrt(max_patches / current), max_side * patch / height, max_side * patch / width)
    new_height = min(max(1, int(height * scale)), max_side * patch)
    new_width = min(max(1, int(width * scale)), max_side * patch)
    factor = merge * patch
    return (new_height, new_width), (-(-new_height // factor) * factor, -(-new_width // factor) * factor)


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    patch, merge = d["patch"], d["merge_h"]
    if d["merge_w"] != merge:
        raise ValueError(f"merge_kernel_size = [{merge}, {d['merge_w']}]: Kimi_K25ImageProcessor merges square groups (merge_size)")
    if d["max_height"] != d["max_width"]:
        raise ValueError(f"max_height = {d['max_height']}, max_width = {d['max_width']}: Kimi_K25ImageProcessor takes a size "
                         "with identical values (give both)")
    resized, padded = navit_resize(height, width, patch, merge, d["max_patches"], d["max_height"])
    rows, columns = padded[0] // patch, padded[1] // patch
    return MediaPlan(height=height, width=width, resized=padded, grid=(1, rows, columns), tokens=rows * columns // merge**2 + WRAPPER_TOKENS)


KIMI_IMAGES = MediaRule(
    summary=f"Kimi_K25ImageProcessor: scaled down to at most max_patches (default {MAX_PATCHES}) patches and max_height = max_width "
    f"(default {MAX_SIDE}) a side, zero-padded to "
    "patch x merge pixels a side; tokens = patches / merge^2 + 4 (<|media_begin|>image<|media_content|> ... <|media_end|>)",
    plan=_plan,
    shape_note="attention within each image and the padding to whole merge groups depend on its rows and columns",
    rules=(
        "patch_embed = 2 x patches x h x 3 x patch^2 (Conv2d over the padded image's patches)",
        "blocks.qkv_proj = layers x 2 x patches x 4h^2 (q, k, v, proj)",
        "blocks.attention = 4h x layers x sum(patches_per_image^2) (within each image)",
        "blocks.mlp = layers x 2 x patches x 2 h i",
        "projector = 2 x (patches / merge^2) x ((h merge^2)^2 + h merge^2 x text) (in_proj, out_proj)",
    ),
    # the processor's patch budget and its size's most patches a side (max_height = max_width)
    options={"max_patches": MAX_PATCHES, "max_height": MAX_SIDE, "max_width": MAX_SIDE},
)


# Kimi_K25VideoProcessor's class defaults: a budget of its own, chunks of temporal_patch_size
# frames; do_sample_frames samples fps = 2 frames a second of the video's own frame rate.
VIDEO_OPTIONS = {"max_patches": 4096, "temporal_patch_size": 4, "do_sample_frames": False, "max_height": MAX_SIDE, "max_width": MAX_SIDE}


def _video_plan(d: Mapping[str, int], frames: int, height: int, width: int) -> MediaPlan:
    """The video's chunks of temporal_patch_size frames (the last one shorter), each resized and
    padded as an image at the video budget; tokens = chunks x (patches / merge^2 + 4)."""
    if d["do_sample_frames"]:
        raise ValueError("do_sample_frames samples fps = 2 frames a second of the video's own frame rate, which a request "
                         "does not carry: give the frames the processor keeps, with do_sample_frames off")
    chunk = d["temporal_patch_size"]
    if chunk > d["time"]:
        raise ValueError(f"temporal_patch_size = {chunk}: MoonViT holds pos_emb_time = {d['time']} temporal positions, "
                         "one a frame of a chunk (transformers fails on more)")
    patch, merge = d["patch"], d["merge_h"]
    if d["merge_w"] != merge:
        raise ValueError(f"merge_kernel_size = [{merge}, {d['merge_w']}]: Kimi_K25VideoProcessor merges square groups (merge_size)")
    if d["max_height"] != d["max_width"]:
        raise ValueError(f"max_height = {d['max_height']}, max_width = {d['max_width']}: Kimi_K25VideoProcessor takes a size "
                         "with identical values (give both)")
    _, padded = navit_resize(height, width, patch, merge, d["max_patches"], d["max_height"])
    rows, columns = padded[0] // patch, padded[1] // patch
    full, rest = divmod(frames, chunk)
    grids = ((chunk, rows, columns),) * full + (((rest, rows, columns),) if rest else ())
    return MediaPlan(height=height, width=width, resized=padded, grid=(frames, rows, columns),
                     tokens=len(grids) * (rows * columns // merge**2 + WRAPPER_TOKENS), frames=frames, grids=grids)


KIMI_VIDEOS = MediaRule(
    summary="Kimi_K25VideoProcessor: the frames as given (do_sample_frames off) in chunks of temporal_patch_size = 4 "
    f"(the last one shorter), each scaled down to at most max_patches = 4096 patches and max_height = max_width (default "
    f"{MAX_SIDE}) a side, zero-padded to patch x merge "
    "pixels a side; tokens = chunks x (patches / merge^2 + 4) (<|media_begin|>video<|media_content|> ... <|media_end|>; "
    "the HH:MM:SS.mmm timestamp before each chunk is text: count it in seq_len)",
    plan=_video_plan,
    options=VIDEO_OPTIONS,
    takes="video",
    rules=(
        "each chunk of t frames is one clip: patch_embed, q/k/v/o and the MLP over its t x patches, attention over the "
        "whole chunk ((t patches)^2 pairs), the projector over its patches / merge^2 tokens (temporal_merge averages the frames)",
    ),
)
