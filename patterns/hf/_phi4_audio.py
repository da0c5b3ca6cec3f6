"""Phi-4-multimodal's audio rule: a clip in samples through Phi4MultimodalFeatureExtractor's frames
and Phi4MultimodalProcessor's placeholder expansion, the soft tokens it becomes.

The feature extractor (16 kHz, 25 ms windows every 10 ms, ``input_size`` mel bins) gives
``(samples - 400) // 160 + 1`` frames of a clip (no truncation, no padding for one clip); the
encoder's NeMo subsampling halves them ``log2(time_reduction)`` times with stride-2 convolutions
(padding 1: ``ceil(frames / 2)`` each), and ``audio_embed_sizes`` is ``ceil(frames / 8)`` (the
published ``time_reduction`` 8, ``downsample_rate`` 1): that many ``<|audio|>`` tokens, no wrapper
token (Phi4MultimodalProcessor.replace_audio_token). The conformer attends over all frames: with
``chunk_size = -1`` its streaming mask allows every pair, and transformers 5.24 adds the boolean mask
to the relative bias rather than masking with it. Past 500 frames the encoder cuts them into
windows of 500 (the last padded), each attended alone; the padding frames' keys and values reach the
real queries of their window (nothing masks them), so they are counted. The language model attends
to the audio tokens causally, like text. The tower's closed forms over the clip's grid
``(1, frames, mel bins)`` are on PHI4_MULTIMODAL_AUDIO; checked against
tests/data/hf_forward/forward_audio.json.
"""

from __future__ import annotations

from collections.abc import Mapping

from flopsreg.plugin import MediaPlan, MediaRule

__all__ = ["PHI4_AUDIO_CLIPS", "SAMPLING_RATE", "WINDOW", "frames"]

SAMPLING_RATE = 16_000  # Phi4MultimodalFeatureExtractor's sampling_rate
FRAME, HOP = 400, 160  # its win_length (25 ms) and hop_length (10 ms) in samples
WINDOW = 500  # Phi4MultimodalAudioModel.forward's max_seq_len: the frames attended together


def frames(samples: int) -> int:
    """The extractor's frames of a clip of *samples* samples (its ``feature_lengths``)."""
    return (samples - FRAME) // HOP + 1 if samples >= FRAME else 0


def _plan(d: Mapping[str, int], samples: int) -> MediaPlan:
    if d["reduction"] != 8 or d["downsample"] != 1:
        raise ValueError(f"time_reduction = {d['reduction']}, downsample_rate = {d['downsample']}: flopsreg counts the "
                         "published 8 and 1 (three stride-2 convolutions; transformers' up projection takes hidden_size x rate)")
    if not d["ext"] == d["sep"] == d["h"]:
        raise ValueError(f"ext_pw_out_channel = {d['ext']}, depthwise_separable_out_channel = {d['sep']}: the convolution "
                         f"module runs only where both are hidden_size = {d['h']}")
    count = frames(samples)
    if count < 1:
        raise ValueError(f"a clip of {samples} samples has no frame (at least {FRAME} are needed)")
    tokens = -(-count // 8)  # audio_embed_sizes: ceil(frames / time_reduction)
    return MediaPlan(height=0, width=0, resized=(0, 0), grid=(1, count, d["mel"]), tokens=tokens, samples=samples)


PHI4_AUDIO_CLIPS = MediaRule(
    summary="16 kHz clips; a frame every 10 ms of 25 ms windows; tokens = ceil(frames / 8) <|audio|> tokens, no wrapper; "
    "the language model attends to them causally (Phi4MultimodalFeatureExtractor, Phi4MultimodalProcessor.replace_audio_token)",
    plan=_plan,
    takes="audio",
    sampling_rate=SAMPLING_RATE,
    shape_note="n tokens come from 8n - 7 to 8n frames, and the subsampling convolutions' rows depend on which",
    rules=(
        "grid: (1, rows = frames = (samples - 400) // 160 + 1, columns = mel bins = input_size)",
        "subsample: Conv2d(1 -> c, 3x3, stride 2) over ceil(rows/2) x ceil(columns/2); twice more a depthwise 3x3 stride-2 "
        "and a pointwise c -> c Conv2d; out (c x bins/8 -> h) over the n = ceil(rows/8) frames",
        "blocks over m frames (n, or 500 per window past 500 frames, padding included): two gated feed-forwards "
        "(h -> 2i, i -> h), q, k, v (h -> heads x head_dim), o; the convolution module (GLU pointwise h -> 2 ext, "
        "depthwise kernel, pointwise, ext pointwise), its depthwise outputs past the frames dropped and not counted",
        "attention: QK^T and AV over every pair of each window (n^2, or 500^2 per window)",
        "projection: up (h -> text) and down (text -> text) per soft token",
    ),
)
