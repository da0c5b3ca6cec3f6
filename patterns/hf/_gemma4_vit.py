"""Gemma 4's image rule (and Gemma 4 unified's): the processor's aspect-preserving resize to a
soft-token budget, the tokens each image becomes, and the language model's bidirectional image
blocks; the towers' FLOPs are the closed forms of their kinds (patterns/hf/_towers.py).

Gemma4ImageProcessor (transformers 5.24, image_processing_gemma4.py; Gemma4UnifiedImageProcessor
resizes alike) scales each image, keeping its aspect ratio, to the largest size whose sides are
multiples of ``patch x pooling`` pixels (48) and whose patches fit ``max_soft_tokens x pooling^2``
(``max_soft_tokens`` 280 by default, one of 70, 140, 280, 560, 1120). Every ``pooling x pooling``
patches become one soft token; Gemma4Processor.replace_image_token wraps them in ``<boi>`` and
``<eoi>``: tokens = rows x columns / pooling^2 + 2. The processor pads the patches to the budget
and the tower computes on the padding too: flopsreg counts the real patches (the test reconciles
the padding). With ``text_config.use_bidirectional_attention = "vision"`` the language model
attends both ways within each image's soft tokens: Gemma 4 on its sliding layers only
(``create_masks_for_vision_model``: AND(window, OR(causal, block))), Gemma 4 unified on every layer
(``create_masks_for_generate`` ORs the block after the window). Derived in docs/multimodal.md;
checked against tests/data/hf_forward/forward_gemma4img.json.

Videos (Gemma4VideoProcessor, Gemma4UnifiedVideoProcessor): each frame is resized as an image is,
to a budget of its own (``max_soft_tokens`` 70 by default), and becomes one block of soft tokens:
Gemma4Processor.replace_video_token writes ``"mm:ss <boi>" + soft tokens + "<eoi>"`` per frame,
joined by spaces. The timestamps and spaces are text (their tokens need the tokenizer: the caller
counts them in seq_len); flopsreg counts ``frames x (soft + 2)``. Each frame's soft tokens are one
bidirectional block (get_block_sequence_ids_for_mask starts a block at every run of video tokens).
The tower encodes each frame as one image (a batch of frames, attention within each); checked
against tests/data/hf_forward/forward_video2.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from flopsreg.patterns.sliding_window import SLIDING_WINDOW, WINDOW
from flopsreg.plugin import MediaPlan, MediaRule

__all__ = [
    "BIDIRECTIONAL", "BUDGETS", "GEMMA4_IMAGES", "GEMMA4_UNIFIED_IMAGES", "GEMMA4_UNIFIED_VIDEOS", "GEMMA4_VIDEOS", "VIDEO_OPTIONS",
    "WRAPPER_TOKENS", "resized_size",
]

BUDGETS = (70, 140, 280, 560, 1120)  # the max_soft_tokens the processor accepts (its _SUPPORTED_SOFT_TOKENS)
WRAPPER_TOKENS = 2  # <boi> before the soft tokens, <eoi> after
BIDIRECTIONAL = (None, "vision", "all")  # text_config.use_bidirectional_attention, read as its index here
_SLIDING = frozenset(SLIDING_WINDOW.flags)


def resized_size(height: int, width: int, patch: int, pooling: int, budget: int) -> tuple[int, int]:
    """The processor's resize of a *height* x *width* image: scaled (aspect kept) so that its
    patches fill ``budget x pooling^2``, each side rounded down to a multiple of ``patch x
    pooling``; a side that rounds to 0 becomes one multiple and the other ``floor(long / short)``
    multiples, at most ``budget`` of them. Floating point as the processor computes it, so that
    the sizes are its own. (The processor's refusals, of a 0 x 0 size or of more patches than
    the budget, cannot happen: the scaled area is the budget's, at least one merged patch.)"""
    side = patch * pooling
    scale = math.sqrt(budget * pooling**2 * patch**2 / (height * width))
    rows, columns = math.floor(scale * height / side) * side, math.floor(scale * width / side) * side
    if not rows:
        rows, columns = side, min(math.floor(width / height) * side, budget * side)
    elif not columns:
        rows, columns = min(math.floor(height / width) * side, budget * side), side
    return rows, columns


def _budget(d: Mapping[str, int]) -> int:
    """The processor's ``max_soft_tokens`` option, one of the budgets it takes."""
    if d["max_soft_tokens"] not in BUDGETS:
        raise ValueError(f"max_soft_tokens = {d['max_soft_tokens']}: the processor takes one of {', '.join(map(str, BUDGETS))}")
    return d["max_soft_tokens"]


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    rows, columns = resized_size(height, width, d["patch"], d["pooling"], _budget(d))
    grid = (1, rows // d["patch"], columns // d["patch"])
    return MediaPlan(height=height, width=width, resized=(rows, columns), grid=grid,
                     tokens=grid[1] * grid[2] // d["pooling"] ** 2 + WRAPPER_TOKENS)


def _unified_plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    """As :func:`_plan`; the unified embedder feeds its mm_embed_dim output to a projection from
    output_proj_dims, so the two must agree (transformers fails on its first image otherwise)."""
    if d["out"] != d["h"]:
        raise ValueError(f"output_proj_dims = {d['out']}: the projection takes the embedder's mm_embed_dim = {d['h']} (transformers fails on it)")
    return _plan(d, height, width)


def _from_tokens(d: Mapping[str, int], soft: int) -> MediaPlan:
    """An image of *soft* soft tokens: ``soft x pooling^2`` patches fix the tower's work (its
    attention spans the whole image), whatever their shape; at most the budget."""
    if soft > _budget(d):
        raise ValueError(f"an image is at most max_soft_tokens = {d['max_soft_tokens']} soft tokens")
    k = d["pooling"]
    return MediaPlan(height=0, width=0, resized=(k * d["patch"], soft * k * d["patch"]), grid=(1, k, soft * k),
                     tokens=soft + WRAPPER_TOKENS)


def _soft_run(d: Mapping[str, int], plan: MediaPlan) -> int:
    """The image's soft tokens where the language model attends both ways within them
    (mm_token_type_ids 1; use_bidirectional_attention = "vision"), else 0: causal like text."""
    return (plan.tokens - WRAPPER_TOKENS) if BIDIRECTIONAL[d["bidirectional"]] == "vision" else 0


def _triangle(n: int) -> int:
    return n * (n - 1) // 2 if n > 0 else 0


def _sliding_only(d: Mapping[str, int], runs: Sequence[int], flags: frozenset[str], params: Mapping[str, int]) -> int:
    """Gemma 4: a sliding layer adds the n(n-1)/2 pairs above each run's diagonal (later keys of
    the run always pass ``kv > q - window``); a full layer stays causal."""
    return sum(_triangle(n) for n in runs) if _SLIDING <= flags else 0


def _every_layer(d: Mapping[str, int], runs: Sequence[int], flags: frozenset[str], params: Mapping[str, int]) -> int:
    """Gemma 4 unified: every layer adds the n(n-1)/2 pairs above each run's diagonal; a sliding
    layer also the (n-w)(n-w+1)/2 below it that its window of w had left out."""
    window = params[WINDOW.name] if _SLIDING <= flags else None
    return sum(_triangle(n) + (_triangle(n - window + 1) if window is not None else 0) for n in runs)


_RULE = {
    "from_tokens": _from_tokens,
    "options": {"max_soft_tokens": 280},  # the processor's default budget (processor_config.json's)
    "bidirectional": _soft_run,
    "pair_slot": "attention.core",  # QK^T and PV: 2 heads (qk + v width) FLOPs per pair
}
_RESIZE = ("aspect-preserving resize to sides in multiples of patch x pooling, at most max_soft_tokens (280) x pooling^2 "
           "patches (Gemma4ImageProcessor); tokens = rows x columns / pooling^2 + 2 (<boi>, <eoi>)")

GEMMA4_IMAGES = MediaRule(
    summary=_RESIZE + "; with use_bidirectional_attention = vision the sliding layers attend both ways within each image's soft tokens",
    plan=_plan,
    layer_pairs=_sliding_only,
    rules=(
        "patch_embed = 2 x patches x 3 patch^2 x h (one matrix over each patch's pixels); real patches only, "
        "not the processor's padding to max_soft_tokens x pooling^2",
        "blocks.qkv_proj = layers x 2 x patches x (2 h heads head_dim + 2 h kv_heads head_dim)",
        "blocks.attention = layers x 4 heads head_dim x patches^2 (bidirectional over each image)",
        "blocks.mlp = layers x 2 x patches x 3 h i (gated)",
        "embedder = 2 x patches / pooling^2 x h x text (average pooling and norms elementwise)",
        "language model (use_bidirectional_attention = vision): + n(n-1)/2 pairs per image on each sliding layer",
    ),
    **_RULE,
)

GEMMA4_UNIFIED_IMAGES = MediaRule(
    summary=_RESIZE + "; with use_bidirectional_attention = vision (the default) every layer attends both ways "
    "within each image's soft tokens, past the sliding window",
    plan=_unified_plan,
    layer_pairs=_every_layer,
    rules=(
        "patch_dense = 2 x tokens x 3 (patch pooling)^2 x mm_embed_dim (each token one merged patch; real tokens only)",
        "embedder = 2 x tokens x output_proj_dims x text (the norms elementwise)",
        "language model (use_bidirectional_attention = vision): + n(n-1)/2 pairs per image on every layer, "
        "+ (n-w)(n-w+1)/2 more on a sliding layer of window w < n",
    ),
    **_RULE,
)


# Gemma4VideoProcessor's class defaults (Gemma4UnifiedVideoProcessor's are the same): a budget of 70
# soft tokens a frame, and uniform sampling of num_frames = 32 frames when do_sample_frames is on.
# flopsreg takes the frames as given (do_sample_frames off), as for every family's videos.
VIDEO_OPTIONS = {"max_soft_tokens": 70, "do_sample_frames": False, "num_frames": 32}


def _kept_frames(d: Mapping[str, int], frames: int) -> int:
    """The frames the processor keeps: all (do_sample_frames off), or num_frames of them picked
    uniformly (default_sample_indices_fn), which it refuses for a video of fewer frames."""
    if not d["do_sample_frames"]:
        return frames
    if d["num_frames"] > frames:
        raise ValueError(f"do_sample_frames picks num_frames = {d['num_frames']} frames, more than the video's {frames} "
                         "(the processor refuses it)")
    return d["num_frames"]


def _video_planner(unified: bool):
    """The video processor's rule: the kept frames, each resized as an image to the video budget;
    tokens = frames x (soft tokens + <boi> + <eoi>), the timestamps before each frame being text."""

    def plan(d: Mapping[str, int], frames: int, height: int, width: int) -> MediaPlan:
        image = (_unified_plan if unified else _plan)(d, height, width)
        kept = _kept_frames(d, frames)
        return MediaPlan(height=height, width=width, resized=image.resized, grid=(kept, *image.grid[1:]),
                         tokens=kept * image.tokens, frames=frames)

    return plan


def _frame_runs(d: Mapping[str, int], plan: MediaPlan) -> tuple[int, ...] | int:
    """Each frame's soft tokens, one bidirectional block each (use_bidirectional_attention = "vision")."""
    frames = plan.grid[0]
    return (plan.tokens // frames - WRAPPER_TOKENS,) * frames if BIDIRECTIONAL[d["bidirectional"]] == "vision" else 0


_VIDEO_RULE = {
    "options": VIDEO_OPTIONS,
    "bidirectional": _frame_runs,
    "run_offset": 1,  # each frame's soft tokens follow its <boi>
    "pair_slot": "attention.core",
    "takes": "video",
}
_FRAMES = ("the frames as given (do_sample_frames off; on: num_frames = 32 of them, uniformly), each resized as an image to "
           "max_soft_tokens = 70 (Gemma4VideoProcessor's defaults); tokens = frames x (rows x columns / pooling^2 + 2): "
           "<boi> and <eoi> around each frame's soft tokens (its \"mm:ss \" timestamp is text: count it in seq_len)")
_PER_FRAME = "the tower encodes each frame as one image: the image's closed forms over t = frames (attention within each frame)"

GEMMA4_VIDEOS = MediaRule(
    summary=_FRAMES + "; with use_bidirectional_attention = vision the sliding layers attend both ways within each frame's soft tokens",
    plan=_video_planner(unified=False),
    layer_pairs=_sliding_only,
    rules=(_PER_FRAME, "language model (use_bidirectional_attention = vision): + n(n-1)/2 pairs per frame on each sliding layer"),
    **_VIDEO_RULE,
)

GEMMA4_UNIFIED_VIDEOS = MediaRule(
    summary=_FRAMES + "; with use_bidirectional_attention = vision (the default) every layer attends both ways within each "
    "frame's soft tokens, past the sliding window",
    plan=_video_planner(unified=True),
    layer_pairs=_every_layer,
    rules=(_PER_FRAME, "language model (use_bidirectional_attention = vision): + n(n-1)/2 pairs per frame on every layer, "
           "+ (n-w)(n-w+1)/2 more on a sliding layer of window w < n"),
    **_VIDEO_RULE,
)
