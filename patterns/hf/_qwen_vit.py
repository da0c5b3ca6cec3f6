"""The Qwen-VL vision towers' image rules (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5): the processor's
``smart_resize`` and the tokens of each image, and verl's count of the tower (the exact count is
the tower kinds' closed forms, patterns/hf/_towers.py).

Each image is resized to multiples of ``patch * merge`` pixels with its area kept within
``[min_pixels, max_pixels]``, repeated to ``temporal_patch_size`` frames and cut into
``rows x columns`` patches (one temporal patch: the Conv3d runs once per patch over both
frames). The ViT then runs over the image's patches, attention bidirectional within the image
(Qwen2.5-VL's windowed layers: within each window of ``window_size`` pixels), and the merger
turns each ``merge x merge`` group of patches into one language-model token. The processor
wraps each image's tokens in ``<|vision_start|>`` and ``<|vision_end|>``: 2 more tokens.
FLOPs are multiply-adds x 2, as for the language model; norms, activations, rotary and learned
position interpolation are elementwise (uncounted, as FlopCounterMode counts them).
Derived in docs/multimodal.md; checked against tests/data/hf_forward/forward_towers5.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = [
    "QWEN2_5_VL_IMAGES", "QWEN2_VL_IMAGES", "QWEN2_VL_VIDEOS", "QWEN3_VL_IMAGES", "QWEN3_VL_VIDEOS", "smart_resize",
    "smart_resize_video", "verl_vit_flops",
]

WRAPPER_TOKENS = 2  # <|vision_start|> and <|vision_end|> around each image's <|image_pad|> run
MAX_RATIO = 200  # smart_resize refuses an aspect ratio above this
# The published preprocessor_config.json of each family (Qwen/Qwen2.5-VL-7B-Instruct,
# Qwen/Qwen3-VL-8B-Instruct): min_pixels / shortest_edge and max_pixels / longest_edge.
QWEN2_5_PIXELS = (3136, 12845056)
QWEN3_PIXELS = (65536, 16777216)
# The video processors' defaults (transformers 5.24 Qwen2VLVideoProcessor.size, per frame;
# Qwen3VLVideoProcessor.size, over the whole video: frames x area): shortest_edge, longest_edge.
QWEN2_VIDEO_PIXELS = (100352, 602112)
QWEN3_VIDEO_PIXELS = (131072, 786432)


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers' Qwen2-VL ``smart_resize``, step for step (Python's ``round`` rounds half to
    even; the square root is a float, as there): multiples of *factor*, area within bounds."""
    if height < 1 or width < 1:
        raise ValueError(f"{height}x{width}: expected a height and width of at least 1 pixel")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"{height}x{width}: the processor refuses an aspect ratio above {MAX_RATIO}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def smart_resize_video(frames: int, height: int, width: int, temporal: int, factor: int, min_pixels: int,
                       max_pixels: int) -> tuple[int, int]:
    """transformers' Qwen3-VL video ``smart_resize``, step for step: as the image's, but the
    bounds hold for ``frames x area`` (frames rounded to a multiple of *temporal*, half to even),
    a side below *factor* first scaled up, and fewer frames than *temporal* refused."""
    if frames < temporal:
        raise ValueError(f"{frames} frames: the video processor needs at least temporal_patch_size = {temporal}")
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"{height}x{width}: the processor refuses an aspect ratio above {MAX_RATIO}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(frames / temporal) * temporal
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _pixels(dims: Mapping[str, int]) -> tuple[int, int]:
    """The processor's ``(min_pixels, max_pixels)``, its options (:func:`_options`), taken as the
    processor takes them (smart_resize does not check their order: neither does flopsreg)."""
    return dims["min_pixels"], dims["max_pixels"]


def _options(pixels: tuple[int, int]) -> dict[str, int]:
    """A rule's processor options, ``min_pixels`` and ``max_pixels`` (the processor's ``size``
    ``shortest_edge`` and ``longest_edge``), at *pixels*, the published defaults."""
    return {"min_pixels": pixels[0], "max_pixels": pixels[1]}


def _video_planner(qwen3: bool):
    """The video processor's rule: frames padded (the last repeated) to whole temporal patches,
    t = ceil(frames / temporal_patch_size); Qwen2-VL's frames resized as its images are (per-frame
    bounds), wrapped once in vision_start/end; Qwen3-VL's whole video bounded, each temporal patch
    wrapped in vision_start/end (its "<t seconds>" timestamp before each is text: not counted here)."""

    def plan(dims: Mapping[str, int], frames: int, height: int, width: int) -> MediaPlan:
        patch, merge, temporal = dims["patch"], dims["merge"], dims["frames"]
        low, high = _pixels(dims)
        if qwen3:
            resized = smart_resize_video(frames, height, width, temporal, patch * merge, low, high)
        else:
            resized = smart_resize(height, width, patch * merge, low, high)
        t, rows, columns = -(-frames // temporal), resized[0] // patch, resized[1] // patch
        per_patch = rows * columns // merge**2
        tokens = t * (per_patch + WRAPPER_TOKENS) if qwen3 else t * per_patch + WRAPPER_TOKENS
        return MediaPlan(height=height, width=width, resized=resized, grid=(t, rows, columns), tokens=tokens, frames=frames)

    return plan


def _plan(dims: Mapping[str, int], height: int, width: int) -> MediaPlan:
    """The image processor's rule: smart_resize within the processor's min/max pixels."""
    patch, merge = dims["patch"], dims["merge"]
    resized = smart_resize(height, width, patch * merge, *_pixels(dims))
    rows, columns = resized[0] // patch, resized[1] // patch
    return MediaPlan(height=height, width=width, resized=resized, grid=(1, rows, columns),
                     tokens=rows * columns // merge**2 + WRAPPER_TOKENS)


def _from_tokens(dims: Mapping[str, int], tokens: int) -> MediaPlan:
    """An image known by its image tokens: ``tokens x merge^2`` patches (as one row of merge groups:
    attention within the image and every other piece depend on the count alone)."""
    merge = dims["merge"]
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, merge, tokens * merge), tokens=tokens + WRAPPER_TOKENS)


def verl_vit_flops(d: Mapping[str, int], plans: Sequence[MediaPlan]) -> dict[str, int]:
    """verl's ``_estimate_qwen3_vit_flop`` (verl-project/verl 1dda039b), forward (a third of its
    6N + 12 s^2 training count), for every Qwen-VL type verl maps to it: each image's patches
    (``images_seqlens``) through 2 MLP matrices (Qwen2.5-VL's gated MLP has 3), full attention
    on every layer (Qwen2.5-VL's windows ignored), head_dim = hidden // heads, and the merger's
    weights (one per deepstack entry too) applied to every patch, not to the merged tokens."""
    h, merge = d["h"], d["merge"]
    patches = sum(t * rows * columns for t, rows, columns in (p.grid for p in plans))
    pairs = sum(t * (rows * columns) ** 2 for t, rows, columns in (p.grid for p in plans))  # within each image
    wide = h * merge**2
    return {
        "patch_embed": 2 * patches * h * d["channels"] * d["frames"] * d["patch"] ** 2,
        "blocks.qkv_proj": d["layers"] * 2 * patches * 4 * h * h,
        "blocks.attention": 4 * (h // d["heads"]) * d["heads"] * d["layers"] * pairs,
        "blocks.mlp": d["layers"] * 2 * patches * 2 * h * d["i"],
        "merger": (1 + d.get("deepstack", 0)) * 2 * patches * (d["out"] + wide) * wide,
    }


# What verl (1dda039b) does where it has no term: its trainer builds images_seqlens from each
# sample's image_grid_thw alone (agent_loop.py, ray_trainer.py), and _estimate_qwen3_vit_flop reads
# vision_config fields Qwen2VLVisionConfig does not have.
VERL_NO_VIDEOS = {"verl": (
    "verl builds images_seqlens from image_grid_thw alone, so it counts no video through the tower, only the video "
    "tokens through the language model (give them in seq_len for verl's number)"
)}
VERL_QWEN2_VL = {"verl": (
    "verl's _estimate_qwen3_vit_flop reads vision_config.intermediate_size, which Qwen2VLVisionConfig has not: "
    "verl's FlopsCounter raises AttributeError when given images_seqlens for qwen2_vl"
)}

_EMBED = "patch_embed = 2 x patches x h x channels x frames x patch^2 (Conv3d over temporal_patch_size frames)"
_PROJ = "blocks.qkv_proj = layers x 2 x patches x 4h^2 (qkv and proj)"
_MERGER = "merger = 2 x (patches / merge^2) x ((h merge^2)^2 + h merge^2 x out)"

QWEN2_5_VL_IMAGES = MediaRule(
    summary=f"smart_resize to multiples of patch x merge, {QWEN2_5_PIXELS[0]} <= area <= {QWEN2_5_PIXELS[1]} "
    "(Qwen2.5-VL's preprocessor_config.json); tokens = patches / merge^2 + 2 (vision_start, vision_end)",
    plan=_plan,
    options=_options(QWEN2_5_PIXELS),
    shape_note="its windowed attention layers cut each image into windows by its patch grid",
    conventions={"verl": verl_vit_flops},
    rules=(
        _EMBED, _PROJ,
        "blocks.attention = 4h x (fullatt x sum(patches_per_image^2) + (layers - fullatt) x sum(patches_per_window^2)), "
        "windows of window_size / merge / patch merged tokens a side",
        "blocks.mlp = layers x 2 x patches x 3 h i (gated)", _MERGER,
    ),
)

QWEN2_VL_IMAGES = MediaRule(
    summary=f"smart_resize to multiples of patch x merge, {QWEN2_5_PIXELS[0]} <= area <= {QWEN2_5_PIXELS[1]} "
    "(Qwen2-VL's preprocessor_config.json); tokens = patches / merge^2 + 2 (vision_start, vision_end)",
    plan=_plan,
    options=_options(QWEN2_5_PIXELS),
    rules=(
        _EMBED, _PROJ, "blocks.attention = 4h x layers x sum(patches_per_image^2) (bidirectional within each image)",
        "blocks.mlp = layers x 2 x patches x 2 h (h mlp_ratio)", _MERGER,
    ),
    from_tokens=_from_tokens,
    refusals=VERL_QWEN2_VL,
)

QWEN3_VL_IMAGES = MediaRule(
    summary=f"smart_resize to multiples of patch x merge, {QWEN3_PIXELS[0]} <= area <= {QWEN3_PIXELS[1]} "
    "(Qwen3-VL's preprocessor_config.json); tokens = patches / merge^2 + 2 (vision_start, vision_end)",
    plan=_plan,
    options=_options(QWEN3_PIXELS),
    from_tokens=_from_tokens,
    conventions={"verl": verl_vit_flops},
    rules=(
        _EMBED, _PROJ, "blocks.attention = 4h x layers x sum(patches_per_image^2) (bidirectional within each image)",
        "blocks.mlp = layers x 2 x patches x 2 h i", _MERGER.replace("merger =", "merger = (1 + deepstack) x"),
    ),
)

_VIDEO_TOWER = (
    "the tower runs over t x rows x columns patches; attention within each temporal patch "
    "(cu_seqlens per frame group: t x (rows columns)^2 pairs), as for t images of one frame group"
)

QWEN2_VL_VIDEOS = MediaRule(
    summary=f"frames padded to whole temporal patches (t = ceil(frames / temporal_patch_size)); each frame smart_resized "
    f"to multiples of patch x merge, {QWEN2_VIDEO_PIXELS[0]} <= area <= {QWEN2_VIDEO_PIXELS[1]} (Qwen2VLVideoProcessor's "
    "defaults); tokens = t x rows x columns / merge^2 + 2 (vision_start, vision_end)",
    plan=_video_planner(qwen3=False),
    options=_options(QWEN2_VIDEO_PIXELS),
    rules=(_VIDEO_TOWER,),
    takes="video",
    refusals=VERL_NO_VIDEOS,
)

QWEN3_VL_VIDEOS = MediaRule(
    summary=f"frames padded to whole temporal patches (t = ceil(frames / temporal_patch_size), at least 2 frames); "
    f"smart_resize with {QWEN3_VIDEO_PIXELS[0]} <= frames x area <= {QWEN3_VIDEO_PIXELS[1]} (Qwen3VLVideoProcessor's "
    "defaults); tokens = t x (rows x columns / merge^2 + 2): vision_start and vision_end around each temporal patch "
    "(its <t seconds> timestamp is text: count it in seq_len)",
    plan=_video_planner(qwen3=True),
    options=_options(QWEN3_VIDEO_PIXELS),
    rules=(_VIDEO_TOWER,),
    takes="video",
    refusals=VERL_NO_VIDEOS,
)
