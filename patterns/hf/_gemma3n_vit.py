"""Gemma 3n's image rule: every image resized to 768 x 768, MobileNetV5's fusion adapter pooled
to 16 x 16 = 256 soft tokens, the processor's four wrapper tokens; the language model's mask over
them is its causal and sliding one (the tower's FLOPs are the GEMMA3N_VISION kind's closed forms,
patterns/hf/_gemma3n_towers.py).

Gemma3nProcessor's image processor is SiglipImageProcessor, which resizes every image to one
fixed size whatever its shape; Gemma 3n's model card gives 256, 512 or 768 square inputs, and
flopsreg plans the largest, 768, unless the processor option ``size`` names another of them
(SiglipImageProcessor's own default is 224 and config.json does not hold it; transformers runs
the tower at any size, and measure_gemma3nmm.py records the three). MobileNetV5 downsamples by 32 (a grid of 24 x 24 at the
last stage) and its fusion adapter average-pools its 1/16 map to 16 x 16 whatever the size, the
``vision_soft_tokens_per_image`` = 256 soft tokens Gemma3nModel.get_image_features reshapes to.
Gemma3nProcessor replaces each image by ``"\\n\\n" <start_of_image> 256 x <image_soft_token>
<end_of_image> "\\n\\n"`` (processing_gemma3n.py ``full_image_sequence``): 4 wrapper tokens, as
Gemma 3's. Unlike Gemma 3, the language model adds no bidirectional mask over an image's tokens
(Gemma3nModel: "no bidirectional mask over image tokens, unlike PaliGemma").
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["GEMMA3N_IMAGES", "RESOLUTION", "SIZES", "WRAPPER_TOKENS"]

RESOLUTION = 768  # every image's height and width after the processor's resize, by default
SIZES = (256, 512, RESOLUTION)  # the square sizes Gemma 3n's model card gives (processor option "size")
STRIDE = 32  # MobileNetV5's downsampling to its last stage: the grid is RESOLUTION / 32 a side
POOLED = 16  # the fusion adapter's output_resolution: 16 x 16 soft tokens
FUSION_WIDTH = 2048  # the fusion adapter's output channels, which the embedder reads as hidden_size
WRAPPER_TOKENS = 4  # "\n\n", <start_of_image> before the soft tokens; <end_of_image>, "\n\n" after


def _checked(d: Mapping[str, int]) -> MediaPlan:
    """The one plan of every image; ``ValueError`` where the config disagrees with the tower's output."""
    if d["tokens"] != POOLED * POOLED:
        raise ValueError(f"vision_soft_tokens_per_image = {d['tokens']}: MobileNetV5's fusion adapter gives {POOLED * POOLED} "
                         "soft tokens (transformers fails on another count)")
    if d["h"] != FUSION_WIDTH:
        raise ValueError(f"vision_config.hidden_size = {d['h']}: MobileNetV5 gives {FUSION_WIDTH} channels per soft token "
                         "(transformers fails on another width)")
    if d["size"] not in SIZES:
        raise ValueError(f"size = {d['size']}: flopsreg counts Gemma 3n's images at the model card's sizes, "
                         f"{', '.join(map(str, SIZES))} pixels a side")
    side = d["size"] // STRIDE
    return MediaPlan(height=0, width=0, resized=(d["size"], d["size"]), grid=(1, side, side), tokens=d["tokens"] + WRAPPER_TOKENS)


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    plan = _checked(d)
    return MediaPlan(height=height, width=width, resized=plan.resized, grid=plan.grid, tokens=plan.tokens)


def _from_tokens(d: Mapping[str, int], tokens: int) -> MediaPlan:
    """Every Gemma 3n image is 256 soft tokens: another count is no Gemma 3n image."""
    if tokens != d["tokens"]:
        raise ValueError(f"every image is {d['tokens']} soft tokens (vision_soft_tokens_per_image), resized to {d['size']} x {d['size']}")
    return _checked(d)


GEMMA3N_IMAGES = MediaRule(
    summary=f"every image resized to size x size, {RESOLUTION} by default (SiglipImageProcessor at Gemma 3n's largest size; "
    "processor option size: 256, 512 or 768); "
    "tokens = 256 + 4 (\\n\\n, start_of_image, end_of_image, \\n\\n); causal like text in the language model",
    plan=_plan,
    from_tokens=_from_tokens,
    rules=(
        f"grid = size / {STRIDE} rows x columns at MobileNetV5's last stage (1/32): {RESOLUTION // STRIDE} at {RESOLUTION}; "
        "the fusion adapter pools its 1/16 map to 16 x 16 whatever the size",
        "convolutions (stem, stage0..3, msfa): 2 x out_channels x in_channels per group x the taps that read the "
        "image, not the padding (depthwise 3x3 and 5x5 lose their border taps)",
        "attention = 4 x heads x head_dim x queries x keys per MQA block (14 at 1/16 with keys and values "
        "at 1/32, 19 at 1/32), every query of an image with every key",
        "embedder = 2 x 256 x hidden_size x text hidden_size (Gemma3nMultimodalEmbedder's one matrix)",
        "language model: the image's 260 tokens causal and sliding like text",
    ),
    options={"size": RESOLUTION},
)
