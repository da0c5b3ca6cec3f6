"""Gemma 3's image rule: every image resized to the SigLIP tower's ``image_size`` square, the
projector's average pooling to ``mm_tokens_per_image`` soft tokens, the processor's wrapper
tokens and the language model's bidirectional runs (the tower's FLOPs, the SigLIP ViT over all
its patches and the projector's one matrix, are the SIGLIP_VISION kind's closed forms,
patterns/hf/_towers.py).

Gemma3ImageProcessor resizes each image to ``image_size x image_size`` (896 for the published
checkpoints), whatever its shape: no pan-and-scan by default (``do_pan_and_scan=False``; with it
the processor adds crops and flopsreg does not count them). The ViT runs over the
``(image_size // patch)^2`` patches of each image, attention bidirectional over all of them;
the projector pools ``k x k`` patches (``k = (image_size // patch) // sqrt(mm_tokens_per_image)``)
into each soft token, RMS-normalises it (elementwise) and multiplies it into the text width.
Gemma3Processor replaces each image placeholder by ``"\\n\\n" <start_of_image> 256 x
<image_soft_token> <end_of_image> "\\n\\n"``: 4 wrapper tokens, each ``"\\n\\n"`` one token of
Gemma 3's tokenizer. The language model attends bidirectionally within each image's run of soft
tokens (``token_type_ids``), on top of its causal and sliding masks: the engine adds those pairs
(:attr:`MediaRule.bidirectional`).
FLOPs are multiply-adds x 2; norms, activations, the position embedding and the average pooling
are elementwise (uncounted, as FlopCounterMode counts them). Derived in docs/multimodal.md;
checked against tests/data/hf_forward/forward_gemma3img.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["GEMMA3_IMAGES", "WRAPPER_TOKENS", "soft_tokens"]

WRAPPER_TOKENS = 4  # "\n\n", <start_of_image> before the soft tokens; <end_of_image>, "\n\n" after


def soft_tokens(d: Mapping[str, int]) -> int:
    """The soft tokens the projector's average pooling leaves of one image (``mm_tokens_per_image``
    where it is a square dividing the patch grid, as in every published config); raises
    ``ValueError`` where the pooling and the processor's placeholder count disagree."""
    side = d["image"] // d["patch"]
    kernel = side // math.isqrt(d["tokens"]) if math.isqrt(d["tokens"]) else 0
    if kernel < 1 or (side // kernel) ** 2 != d["tokens"]:
        raise ValueError(
            f"mm_tokens_per_image = {d['tokens']}: the projector pools the {side} x {side} patch grid to another count "
            "than the processor's placeholders (transformers fails on it)"
        )
    if d["pooling_head"]:
        raise ValueError("vision_use_head = true: the SigLIP pooling head's output is unused by Gemma 3 and not counted")
    return d["tokens"]


def _no_pan_and_scan(d: Mapping[str, int]) -> None:
    """The processor's ``do_pan_and_scan`` option: with it, an image is also cut into crops, each
    its own image; flopsreg does not count them (refused by name)."""
    if d["do_pan_and_scan"]:
        raise ValueError("do_pan_and_scan = true: the processor's pan-and-scan crops are not counted by flopsreg")


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    _no_pan_and_scan(d)
    side = d["image"] // d["patch"]
    return MediaPlan(height=height, width=width, resized=(d["image"], d["image"]), grid=(1, side, side),
                     tokens=soft_tokens(d) + WRAPPER_TOKENS)


def _from_tokens(d: Mapping[str, int], tokens: int) -> MediaPlan:
    """Every Gemma 3 image is ``mm_tokens_per_image`` soft tokens: another count is no Gemma 3 image."""
    _no_pan_and_scan(d)
    if tokens != soft_tokens(d):
        raise ValueError(f"every image is {d['tokens']} soft tokens (mm_tokens_per_image), resized to {d['image']} x {d['image']}")
    side = d["image"] // d["patch"]
    return MediaPlan(height=0, width=0, resized=(d["image"], d["image"]), grid=(1, side, side), tokens=tokens + WRAPPER_TOKENS)


def _soft_run(d: Mapping[str, int], plan: MediaPlan) -> int:
    """The run of tokens of *plan* the language model attends to bidirectionally: its soft tokens
    (``token_type_ids`` 1), not the wrapper tokens."""
    return soft_tokens(d)


GEMMA3_IMAGES = MediaRule(
    summary="every image resized to image_size x image_size (Gemma3ImageProcessor, no pan-and-scan); "
    "tokens = mm_tokens_per_image + 4 (\\n\\n, start_of_image, end_of_image, \\n\\n); "
    "the language model attends bidirectionally within each image's soft tokens",
    plan=_plan,
    from_tokens=_from_tokens,
    options={"do_pan_and_scan": False},
    bidirectional=_soft_run,
    pair_slot="attention.core",  # QK^T and PV: 2 heads (qk + v width) FLOPs per pair
    rules=(
        "patch_embed = 2 x patches x h x channels x patch^2 (Conv2d), patches = (image_size / patch)^2 per image",
        "blocks.qkv_proj = layers x 2 x patches x 4h^2 (q, k, v, o)",
        "blocks.attention = 4h x layers x sum(patches_per_image^2) (bidirectional within each image)",
        "blocks.mlp = layers x 2 x patches x 2 h i",
        "projector = 2 x images x mm_tokens_per_image x h x text_hidden (average pooling and RMSNorm elementwise)",
        "language model: + n(n-1)/2 pairs per image per layer (n = mm_tokens_per_image soft tokens, "
        "bidirectional within the image on top of the causal and sliding masks)",
    ),
)
