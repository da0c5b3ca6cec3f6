"""Qwen3-Omni-MoE's vision rules: its ViT is Qwen3-VL's (the same closed forms), its processor is
not. Qwen3OmniMoeProcessor takes images through Qwen2VLImageProcessor and videos through
Qwen2VLVideoProcessor (transformers 5.24 image_processing_auto / video_processing_auto):

- images: ``smart_resize`` to multiples of ``patch x merge`` with the image processor's class
  defaults, ``56 x 56 <= area <= 28 x 28 x 1280`` pixels (``processor={"max_pixels": ...}`` for a
  checkpoint's preprocessor_config), ``rows x columns / merge^2`` ``<|image_pad|>`` tokens
  (``replace_image_token``) between ``<|vision_start|>`` and ``<|vision_end|>`` (the chat template);
- videos: each frame smart_resized with the processor's own ``videos_kwargs`` size, ``128 x 32 x 32
  <= area <= 768 x 32 x 32`` per frame, frames padded to whole temporal patches, ``t x rows x
  columns / merge^2`` ``<|video_pad|>`` tokens and one vision_start/end pair around the whole
  video (no per-patch timestamps, unlike Qwen3-VL).

With ``load_audio_from_video`` (``use_audio_in_video``) the processor interleaves a video's audio
tokens with its frames' tokens in time order (``replace_video_with_audio_token``): the same media
tokens in another order, and causal attention's FLOPs depend on the length alone, so such a video
is counted as the video and its clip given apart (the wrapper tokens the chat template writes
around them aside).
"""

from __future__ import annotations

from flopsreg.patterns.hf._qwen_vit import _from_tokens, _options, _plan, _video_planner
from flopsreg.plugin import MediaRule

__all__ = ["QWEN3_OMNI_IMAGES", "QWEN3_OMNI_VIDEOS"]

# Qwen2VLImageProcessor's size (transformers 5.24): shortest_edge 56 x 56, longest_edge 28 x 28 x 1280.
IMAGE_PIXELS = (56 * 56, 28 * 28 * 1280)
# Qwen3OmniMoeProcessor.videos_kwargs size, per frame (Qwen2VLVideoProcessor bounds each frame).
VIDEO_PIXELS = (128 * 32 * 32, 768 * 32 * 32)
_TOWER = "the ViT is Qwen3-VL's: its closed forms (qwen3_vl_vision) over the grid"

QWEN3_OMNI_IMAGES = MediaRule(
    summary=f"smart_resize to multiples of patch x merge, {IMAGE_PIXELS[0]} <= area <= {IMAGE_PIXELS[1]} "
    "(Qwen2VLImageProcessor's defaults, as Qwen3OmniMoeProcessor takes it); tokens = patches / merge^2 + 2 "
    "(vision_start, vision_end)",
    plan=_plan,
    options=_options(IMAGE_PIXELS),
    from_tokens=_from_tokens,
    rules=(_TOWER,),
)

QWEN3_OMNI_VIDEOS = MediaRule(
    summary=f"frames padded to whole temporal patches (t = ceil(frames / temporal_patch_size)); each frame smart_resized "
    f"to multiples of patch x merge, {VIDEO_PIXELS[0]} <= area <= {VIDEO_PIXELS[1]} (Qwen3OmniMoeProcessor's videos_kwargs "
    "through Qwen2VLVideoProcessor); tokens = t x rows x columns / merge^2 + 2 (vision_start, vision_end)",
    plan=_video_planner(qwen3=False),
    options=_options(VIDEO_PIXELS),
    rules=(_TOWER, "attention within each temporal patch (t x (rows columns)^2 pairs)"),
    takes="video",
)
