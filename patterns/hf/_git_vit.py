"""GIT's image rule: every image resized and cropped to the CLIP tower's ``image_size`` square,
one image per sequence, its tokens (the class token and every patch) placed before the text and
attended bidirectionally among themselves.

GitProcessor's image processor (CLIPImageProcessor) resizes the shortest edge to ``image_size``
and centre-crops a square of it (224 for microsoft/git-base), whatever the image's shape. The
CLIP ViT (GitVisionModel) runs over the ``(image_size // patch)^2`` patches and its class token,
attention full over them; GitProjection maps every one of those tokens (a matrix and a LayerNorm)
to the text width, and GitModel concatenates them before the text's embeddings: no placeholder
token in ``input_ids``, so the image adds ``patches + 1`` positions and no wrapper token.
GitModel.forward takes one image per batch row (a 4D ``pixel_values``) and builds the text decoder's mask with
``block_sequence_ids`` 0 on every image token: they attend to each other bidirectionally, the
text causally to all of them; the engine adds the ``n(n-1)/2`` pairs above the diagonal.
Derived in docs/multimodal.md; checked against tests/data/hf_forward/forward_phi4git.json.

A video is a 5D ``pixel_values`` (GIT has no video processor: each frame goes through the image
processor): GitModel encodes each frame as an image, adds the frame's learned
``img_temporal_embedding`` (elementwise; config ``num_image_with_embedding`` of them, null by
default: none, and a video fails), concatenates the frames' tokens and projects them all: one
bidirectional block of ``frames x (patches + 1)`` tokens before the text. Checked against
tests/data/hf_forward/forward_video2.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["GIT_IMAGES", "GIT_VIDEOS", "image_tokens"]


def image_tokens(d: Mapping[str, int]) -> int:
    """The tokens GIT's image adds before the text: CLIP's patches and its class token."""
    return (d["image"] // d["patch"]) ** 2 + 1


def _plan(d: Mapping[str, int], height: int, width: int) -> MediaPlan:
    side = d["image"] // d["patch"]
    return MediaPlan(height=height, width=width, resized=(d["image"], d["image"]), grid=(1, side, side), tokens=image_tokens(d))


def _from_tokens(d: Mapping[str, int], tokens: int) -> MediaPlan:
    """Every GIT image is the same count of tokens: another count is no GIT image."""
    if tokens != image_tokens(d):
        raise ValueError(f"every image is {image_tokens(d)} tokens ((image_size / patch_size)^2 patches and the class token), "
                         f"resized to {d['image']} x {d['image']}")
    return _plan(d, 0, 0)


def _image_block(d: Mapping[str, int], plan: MediaPlan) -> int:
    """The run of tokens the text decoder attends to bidirectionally: all of the image's."""
    return plan.tokens


GIT_IMAGES = MediaRule(
    summary="every image resized and centre-cropped to image_size x image_size (GitProcessor's CLIPImageProcessor), "
    "one image per sequence; tokens = (image_size / patch)^2 + 1 (the class token), before the text, no wrapper tokens; "
    "the text decoder attends bidirectionally within the image's tokens",
    plan=_plan,
    from_tokens=_from_tokens,
    bidirectional=_image_block,
    pair_slot="attention.core",  # QK^T and PV: 2 heads x (qk + v width) FLOPs per pair
    most=1,
    first=True,
    rules=(
        "patch_embed = 2 x patches x h x channels x patch^2 (Conv2d), patches = (image_size / patch)^2",
        "blocks.qkv_proj = layers x 2 x (patches + 1) x 4h^2 (q, k, v, o over the patches and the class token)",
        "blocks.attention = 4h x layers x (patches + 1)^2 (full attention)",
        "blocks.mlp = layers x 2 x (patches + 1) x 2 h i",
        "projector = 2 x (patches + 1) x h x text_hidden (GitProjection's matrix; its LayerNorm is elementwise)",
        "language model: + n(n-1)/2 pairs per layer (n = patches + 1 image tokens, bidirectional among themselves)",
    ),
)


def _video_plan(d: Mapping[str, int], frames: int, height: int, width: int) -> MediaPlan:
    """A video's frames, each an image: GitModel indexes one temporal embedding a frame."""
    if not d["frame_embeddings"]:
        raise ValueError("num_image_with_embedding is null: GitModel builds no temporal embeddings and fails on a video (a 5D pixel_values)")
    if frames > d["frame_embeddings"]:
        raise ValueError(f"{frames} frames: GitModel holds num_image_with_embedding = {d['frame_embeddings']} temporal embeddings, "
                         "one a frame (it fails on more)")
    image = _plan(d, height, width)
    return MediaPlan(height=height, width=width, resized=image.resized, grid=(frames, *image.grid[1:]), tokens=frames * image.tokens,
                     frames=frames)


GIT_VIDEOS = MediaRule(
    summary="each frame resized and centre-cropped to image_size x image_size as an image (GIT has no video processor), "
    "at most num_image_with_embedding frames, one video per sequence; tokens = frames x ((image_size / patch)^2 + 1), "
    "before the text, no wrapper tokens; the text decoder attends bidirectionally within all of the video's tokens",
    plan=_video_plan,
    bidirectional=_image_block,
    pair_slot="attention.core",
    most=1,
    first=True,
    takes="video",
    rules=(
        "the tower encodes each frame as one image: the image's closed forms over t = frames (attention within each frame); "
        "the temporal embeddings are added elementwise",
        "language model: + n(n-1)/2 pairs per layer (n = frames x (patches + 1) tokens, one bidirectional block)",
    ),
)
